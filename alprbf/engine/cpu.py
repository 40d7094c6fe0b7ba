"""Pinned CPU kernels, so that a run gives the same rows on every x86-64 machine with AVX2.

OpenBLAS and NumPy choose their compute kernels by the CPU they find: on this project's machine
(AVX-512) OpenBLAS runs its SkylakeX kernels and NumPy its AVX-512 loops for exp and log. Their
round-off differs from the AVX2 kernels of another machine, and a warm-started active learner
amplifies one different query into a different learning curve (measured on a Constantinopoulos &
Likas 2008 active-PRBF segmentation fold: the default, OpenBLAS Haswell, OpenBLAS SandyBridge and
NumPy without AVX-512 give four different curves; docs/history/notes.md, 'CPU kernels'). The command
line therefore pins both to the AVX2 level before NumPy is imported:
``OPENBLAS_CORETYPE=Haswell`` and ``NPY_DISABLE_CPU_FEATURES`` = the dispatch targets above
AVX2. A value the user set is kept; ``ALPRBF_NATIVE_KERNELS=1`` turns the pinning off. Worker
processes inherit the environment; remote dask workers need it set where they start.
``run.json`` records what ran (:func:`kernel_report`).
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

PINNED = {
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
}
OPT_OUT = "ALPRBF_NATIVE_KERNELS"


def is_x86_64() -> bool:
    """Whether this machine is x86-64, the only architecture whose kernels are pinned."""
    return platform.machine().lower() in ("x86_64", "amd64")


def pin_kernels() -> bool:
    """Set the pinned kernels in ``os.environ`` unless opted out, not on x86-64, or too late.

    Returns True when the environment now asks for the pinned kernels.  It must run before
    NumPy is imported (the libraries read the variables when they load); after that it
    changes nothing and returns False.
    """
    if os.environ.get(OPT_OUT) == "1" or not is_x86_64():
        return False
    if "numpy" in sys.modules:
        return False
    for key, value in PINNED.items():
        os.environ.setdefault(key, value)
    return True


#: The CPU flags that decide which kernels the libraries can choose (``kernel_report``).
SIMD_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq")


def kernel_report() -> dict[str, object]:
    """What chose this process's kernels: the CPU (its name, family and model, and which of
    :data:`SIMD_FLAGS` it has), the variables, the BLAS kernel in use."""
    from threadpoolctl import threadpool_info

    blas = sorted(f"{d.get('internal_api')} {d.get('version')} {d.get('architecture')}"
                  for d in threadpool_info() if d.get("user_api") == "blas")  # load order varies
    info = _cpuinfo()
    return {
        "cpu": info.get("model name") or platform.processor() or "unknown",
        "cpu_family_model": (f"family {info['cpu family']}, model {info['model']}"
                             if "cpu family" in info and "model" in info else None),
        "cpu_simd": [f for f in SIMD_FLAGS if f in info.get("flags", "").split()],
        "machine": platform.machine(),
        "pinned": all(os.environ.get(k) == v for k, v in PINNED.items()),
        **{k: os.environ.get(k) for k in (*PINNED, OPT_OUT)},
        "blas": blas,
    }


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in ``/proc/cpuinfo`` (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            break                                  # the first processor's block ends
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields
