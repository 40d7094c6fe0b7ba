"""The weighted squared deviations of one component over its non-zero responsibilities only,
with the BLAS's bits.

Why.  The M-step recomputes the covariance of a nearly collapsed component with per-component
centring (:func:`~alprbf.prbf._gaussian.gaussian_parameters_and_precisions`):
``r @ ((Xc - mu)**2)`` in NumPy builds two (n, d) temporaries and multiplies every row, about
0.1 ms at n = 4 496, d = 64.  Late in an optical-digits QBC fold some 38 components per M-step
qualify, about 40 % of the committee's time once the far-row log densities were compiled
(:mod:`~alprbf.prbf.fast.far_rows`), while nearly all their responsibilities are exactly 0.

How the bits are kept.  NumPy hands ``r @ A`` (``A`` the C-contiguous (n, d) squares) to the
BLAS as ``dgemv`` on the column-major (d, n) transpose; OpenBLAS's Haswell kernel (the one every
``alprbf`` command pins, :mod:`alprbf.engine.cpu`; ``kernel/x86_64/dgemv_n_4.c`` and
``dgemv_n_microk_haswell-4.c``) then computes, from ``y = 0``:

* outputs ``a < 4 floor(d / 4)``: per group of four rows ``i .. i+3``, in order,
  ``y += fma(A[i+2], r[i+2], A[i] r[i]) + fma(A[i+3], r[i+3], A[i+1] r[i+1])``; of the
  ``n mod 4`` rows left, with contiguous ``r``, two as ``y += A r + A r`` and one as
  ``y += A r``; with strided ``r`` each one as ``y += A r``;
* the last ``d mod 4`` outputs: ``t = sum_i A r`` in row order, unfused, then ``y += t``.

A group whose weights are all 0 adds ``+0`` (``A >= 0``) and changes no bit, so only groups
with a non-zero weight are computed; the squares are formed as NumPy forms them.

Where it is used.  Only under OpenBLAS's Haswell kernels, with ``d >= 4`` (OpenBLAS unrolls
narrower matrices differently) and where it is checked: :func:`sparse_variance_match`
compares it with NumPy's product, bit for bit, on random data of the caller's shape and weight
stride, once per shape and process; and only with a single-threaded BLAS (a threaded
``dgemv`` splits the work differently).  :func:`sparse_squared_deviations` makes the whole
decision.  A check alone is not enough elsewhere: under
OpenBLAS's SkylakeX kernels the check passed for some shapes (n = 4 493-4 496, d = 4) whose
other random cases then differed.  Elsewhere NumPy's product stays.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from .exp import fma
from .gemm_blocks import blas_openblas_haswell, blas_single_threaded

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def weighted_squared_deviations(Xc, mu, r, strided, out):
    """``out = r @ ((Xc - mu) ** 2)`` with the bits of OpenBLAS's Haswell ``dgemv``.

    Parameters
    ----------
    Xc : ndarray (n, d), C-contiguous
    mu : ndarray (d,)
    r : ndarray (n,)
        Non-negative weights, mostly 0.
    strided : bool
        Whether NumPy passes ``r`` to the BLAS with a stride other than one element.
    out : ndarray (d,)
    """
    n, d = Xc.shape
    d4 = d - d % 4
    for a in range(d):
        out[a] = 0.0
    groups = n // 4
    for g in range(groups):
        i = 4 * g
        x0, x1, x2, x3 = r[i], r[i + 1], r[i + 2], r[i + 3]
        if x0 == 0.0 and x1 == 0.0 and x2 == 0.0 and x3 == 0.0:
            continue
        for a in range(d4):
            v0 = Xc[i, a] - mu[a]
            v1 = Xc[i + 1, a] - mu[a]
            v2 = Xc[i + 2, a] - mu[a]
            v3 = Xc[i + 3, a] - mu[a]
            even = fma(v2 * v2, x2, (v0 * v0) * x0)
            odd = fma(v3 * v3, x3, (v1 * v1) * x1)
            out[a] = out[a] + (even + odd)
    i = 4 * groups
    if (n - i) & 2 and not strided:
        x0, x1 = r[i], r[i + 1]
        if x0 != 0.0 or x1 != 0.0:
            for a in range(d4):
                v0 = Xc[i, a] - mu[a]
                v1 = Xc[i + 1, a] - mu[a]
                out[a] = out[a] + ((v0 * v0) * x0 + (v1 * v1) * x1)
        i += 2
    for k in range(i, n):
        if r[k] != 0.0:
            for a in range(d4):
                v = Xc[k, a] - mu[a]
                out[a] = out[a] + (v * v) * r[k]
    for a in range(d4, d):
        t = 0.0
        for k in range(n):
            if r[k] != 0.0:
                v = Xc[k, a] - mu[a]
                t = t + (v * v) * r[k]
        out[a] = out[a] + t
    return out


def sparse_squared_deviations(Xc: np.ndarray, mu: np.ndarray, r: np.ndarray
                              ) -> np.ndarray | None:
    """``r @ ((Xc - mu) ** 2)`` over the non-zero weights only, with the bits of NumPy's
    product, or ``None`` where that is not established here and now: ``Xc`` not C-contiguous,
    a BLAS running several threads, or a shape :func:`sparse_variance_match` refuses."""
    strided = is_strided(r)
    if not (Xc.flags.c_contiguous and blas_single_threaded()
            and sparse_variance_match(*Xc.shape, strided)):
        return None
    return weighted_squared_deviations(Xc, mu, r, strided, np.empty(Xc.shape[1]))


def is_strided(r: np.ndarray) -> bool:
    """Whether NumPy hands ``r`` to the BLAS with a stride other than one element."""
    return r.strides[0] != r.itemsize


@functools.lru_cache(maxsize=1024)
def sparse_variance_match(n: int, d: int, strided: bool) -> bool:
    """Whether :func:`weighted_squared_deviations` gives the bits of NumPy's
    ``r @ ((Xc - mu) * (Xc - mu))`` in this process, for ``n`` rows of ``d`` coordinates and
    weights with (``strided``) or without a stride: checked once per shape on random data
    with a quarter of the weights 0 (mostly non-zero, so that another summation order shows;
    eight draws for small shapes, where one could agree by chance)."""
    if d < 4 or n < 1 or not blas_openblas_haswell():
        return False
    rng = np.random.default_rng(7919 * n + 104729 * d + strided)
    for _ in range(8 if n * d < 4096 else 2):
        Xc = rng.standard_normal((n, d)) * np.exp(rng.uniform(-3.0, 3.0, d))
        mu = 0.1 * rng.standard_normal(d)
        r = np.zeros((n, 3))[:, 1] if strided else np.zeros(n)
        r[:] = rng.random(n) * (rng.random(n) < 0.75)
        diff = Xc - mu
        want = r @ (diff * diff)
        got = weighted_squared_deviations(Xc, mu, r, strided, np.empty(d))
        if not np.array_equal(want.view(np.uint64), got.view(np.uint64)):
            return False
    return True
