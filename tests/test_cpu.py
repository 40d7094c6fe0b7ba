"""The command line pins the CPU kernels before NumPy loads (alprbf/engine/cpu.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from alprbf.engine import cpu
from tests.pinned import x86_only

PROBE = ("import json, os, alprbf.cli, numpy; from alprbf.engine.cpu import kernel_report; "
         "print(json.dumps(kernel_report()))")

pytestmark = x86_only


def _probe(**env) -> dict:
    full = {k: v for k, v in os.environ.items()
            if k not in (*cpu.PINNED, cpu.OPT_OUT)}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=full, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def test_the_command_line_pins_both_libraries():
    report = _probe()
    assert report["pinned"] is True
    assert report["OPENBLAS_CORETYPE"] == "Haswell"
    assert report["NPY_DISABLE_CPU_FEATURES"] == cpu.PINNED["NPY_DISABLE_CPU_FEATURES"]
    assert all(b.lower().endswith("haswell") for b in report["blas"]), report["blas"]


def test_opt_out_and_user_values_are_respected():
    native = _probe(ALPRBF_NATIVE_KERNELS="1")
    assert native["pinned"] is False and native["OPENBLAS_CORETYPE"] is None
    mine = _probe(OPENBLAS_CORETYPE="SandyBridge")
    assert mine["OPENBLAS_CORETYPE"] == "SandyBridge" and mine["pinned"] is False
    assert all(b.lower().endswith("sandybridge") for b in mine["blas"])


def test_too_late_once_numpy_is_loaded():
    import numpy  # noqa: F401  (pytest has loaded it already)

    assert cpu.pin_kernels() is False


def test_the_report_names_the_cpu_and_its_vector_extensions():
    report = _probe()
    assert set(report["cpu_simd"]) <= set(cpu.SIMD_FLAGS)
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return
    flags = next(line for line in text.splitlines() if line.startswith("flags")).split()
    assert report["cpu_simd"] == [f for f in cpu.SIMD_FLAGS if f in flags]
    family = next(line for line in text.splitlines() if line.startswith("cpu family"))
    assert report["cpu_family_model"].startswith(f"family {family.split(':')[1].strip()},")
