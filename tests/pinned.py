"""Evaluating a test helper in a process with the kernels every ``alprbf`` command pins."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from alprbf.engine import cpu

PINNED = {**cpu.PINNED, "OPENBLAS_NUM_THREADS": "1"}
"""The kernels :mod:`alprbf.engine.cpu` pins (OpenBLAS's Haswell, NumPy's AVX2 loops), one BLAS
thread."""

x86_only = pytest.mark.skipif(not cpu.is_x86_64(),
                              reason="the pinned kernels (OpenBLAS Haswell, NumPy AVX2) and "
                                     "NumPy's x86-64 baseline exist on x86-64 only")


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
