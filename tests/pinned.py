"""Evaluating a test helper in a process with the kernels every ``alprbf`` command pins."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

PINNED = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1",
          "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
"""OpenBLAS's Haswell kernels, one BLAS thread and NumPy's AVX2 loops (:mod:`alprbf.cpu`)."""

x86_only = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                              reason="the pinned OpenBLAS Haswell kernel exists on x86-64 only")


def pinned_json(module: str, expression: str):
    """``expression`` (JSON-able) evaluated with the test module ``module`` imported as ``t``,
    under one BLAS thread, in a new process with the pinned kernels."""
    code = (f"import json, sys; sys.path.insert(0, 'tests'); import {module} as t; "
            "from threadpoolctl import threadpool_limits\nwith threadpool_limits(1): "
            f"print(json.dumps({expression}))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **PINNED},
                         capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    return json.loads(out.stdout.strip().splitlines()[-1])
