"""Small numerical kernels shared by the model families (bottom layer: numpy only)."""

from __future__ import annotations

import numpy as np


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """``log sum_j exp(a[i, j])`` for a 2-D array, shape (n,); ``-inf`` for all ``-inf`` rows.

    The row maximum is subtracted before the exponentials (no overflow, no underflow of the
    largest term), as :func:`scipy.special.logsumexp` does, without its overhead on the small
    arrays of an EM iteration.
    """
    m = a.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return m + np.log(np.exp(a - m[:, None]).sum(axis=1))
