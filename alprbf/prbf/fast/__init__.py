"""The PRBF network's fast paths, and the switch that chooses them.

Every module here computes something :mod:`alprbf.prbf.reference` computes in plain NumPy,
with the same bits, faster (docs/performance.md has what each piece buys, measured on full
tasks):

* :mod:`.estep`: the whole E-step with the compiled normalisation;
* :mod:`.normalize`: offsets, log-sum-exp, flushed exponentials in compiled loops, taking the
  exponentials of the surviving entries only in sparse blocks;
* :mod:`.exp`: the C library's ``exp``, compiled (used where it gives NumPy's bits);
* :mod:`.compress`: eight-at-a-time compaction of the surviving entries (an LLVM intrinsic);
* :mod:`.blocked` and :mod:`.gemm_blocks`: the E-steps between M-steps one block of rows at a
  time, the blocks those of the BLAS product's inner dimension;
* :mod:`.sparse_moments`: a sparse block's moments product over its surviving entries;
* :mod:`.sparse_variance`: a collapsed component's covariance over its non-zero weights;
* :mod:`.far_rows`: the direct log densities of the rows beyond a component's accurate radius;
* :mod:`.timing`: the once-per-process timings that choose between equivalent code paths.

The switch.  The environment variable ``ALPRBF_FAST`` (``1``, the default, or ``0``) is read
here, once, when :mod:`alprbf.prbf` is first imported; :func:`enabled` is what the E-step,
the M-step and the EM loop ask (:mod:`~alprbf.prbf._estep`, :mod:`~alprbf.prbf._em`).  With
``ALPRBF_FAST=0`` no code of this package runs.  Worker processes inherit the variable.
"""

from __future__ import annotations

import os

VARIABLE = "ALPRBF_FAST"


def _read_switch() -> bool:
    value = os.environ.get(VARIABLE, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"{VARIABLE} must be 0 (the NumPy reference path) or 1 (the fast "
                         f"paths, the default); got {value!r}")
    return value == "1"


ENABLED = _read_switch()
"""Whether the fast paths run (``ALPRBF_FAST``; tests may set this attribute)."""


def enabled() -> bool:
    """Whether the E-step, M-step and EM loop take the fast paths (:data:`ENABLED`)."""
    return ENABLED
