"""Direct log densities of the rows beyond a component's accurate radius, compiled, with
NumPy's bits.

Why.  The design-matrix log densities lose accuracy for rows far from a nearly collapsed
component, and those entries are evaluated directly instead
(:func:`~alprbf.prbf._gaussian.direct_log_densities`).  Late in an optical-digits QBC fold
nearly every committee member's component has such rows (about 8 % of the entries), and the
NumPy form -- a gather, a difference, a product and an ``einsum`` per component, then a sort of
the entries by row -- was 38 % of the committee's time: about 2.5 ns per coordinate of an
entry.  Here each entry is computed once, straight into the block of log densities being
built, four rows at a time in independent chains: about 0.6 ns per coordinate.

How the bits are kept.  Each entry is ``-0.5 * (d log 2 pi + q) + log det U_j`` with
``q = sum_a y_a^2`` (``y = (x - mu_j) * p_j`` for "diag", ``y = x - mu_j`` and
``q = p_j^2 sum_a y_a^2`` for "spherical"), as the NumPy form computes it.  NumPy's ``einsum``
reduces ``"ia,ia->i"`` over a contiguous row with the baseline SIMD loop
(``sum_of_products_contig_contig_outstride0_two`` in ``einsum_sumprod.c.src``): two lanes,
the even coordinates on one and the odd on the other; per block of eight coordinates the pairs
``(6, 7), (4, 5), (2, 3), (0, 1)`` are added in that order, each product rounded before its sum
(the x86-64 baseline has no fused multiply-add); the remaining pairs are added in order (a
missing odd coordinate adds ``0``), and the result is ``lane 0 + lane 1``.  :func:`write_far`
does the same operations in the same order.

Where it is used.  Only where it is checked:
:func:`~alprbf.prbf._gaussian.FarRowDensities` compares it with the NumPy form, bit for bit,
once per process and number of features; another NumPy build (e.g. a CPU whose baseline has
fused multiply-adds) gives ``False`` and the NumPy form stays.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def _square(x, mu, scale, a):
    v = (x[a] - mu[a]) * scale[a]
    return v * v


@_jit
def _quad4(x0, x1, x2, x3, mu, scale):
    """``einsum("ia,ia->i", y, y)`` of four rows (``y = (x - mu) * scale``), its bits."""
    d = len(mu)
    d8 = d - d % 8
    e0 = o0 = e1 = o1 = e2 = o2 = e3 = o3 = 0.0          # even / odd lanes of each row
    for k in range(0, d8, 8):
        for m in (6, 4, 2, 0):
            e0 = _square(x0, mu, scale, k + m) + e0
            o0 = _square(x0, mu, scale, k + m + 1) + o0
            e1 = _square(x1, mu, scale, k + m) + e1
            o1 = _square(x1, mu, scale, k + m + 1) + o1
            e2 = _square(x2, mu, scale, k + m) + e2
            o2 = _square(x2, mu, scale, k + m + 1) + o2
            e3 = _square(x3, mu, scale, k + m) + e3
            o3 = _square(x3, mu, scale, k + m + 1) + o3
    for k in range(d8, d, 2):
        e0 = _square(x0, mu, scale, k) + e0
        e1 = _square(x1, mu, scale, k) + e1
        e2 = _square(x2, mu, scale, k) + e2
        e3 = _square(x3, mu, scale, k) + e3
        if k + 1 < d:
            o0 = _square(x0, mu, scale, k + 1) + o0
            o1 = _square(x1, mu, scale, k + 1) + o1
            o2 = _square(x2, mu, scale, k + 1) + o2
            o3 = _square(x3, mu, scale, k + 1) + o3
    return e0 + o0, e1 + o1, e2 + o2, e3 + o3


@_jit
def write_far(outT, lo, by_norm, Xc, norms, far, limit, muc, scale, spherical, const,
              log_det):
    """``outT[j, i - lo]`` = the direct log density of row ``i`` under component ``j``, for
    each ``j`` in ``far`` and each row ``i`` of ``by_norm`` with ``norms[i] > limit[j]``.

    Parameters
    ----------
    outT : ndarray (M, b), C-contiguous
        Log densities of rows ``lo .. lo + b - 1``.
    by_norm : ndarray of int
        Those rows (or the ones that may be far), by decreasing norm.
    Xc, norms : the centred data (n, d) and its row norms (n,)
    far, limit : components with far rows, and every component's accurate radius (M,)
    muc : ndarray (M, d)
        Means relative to the data's centre.
    scale : ndarray (M, d) for "diag", (M, 1) for "spherical"
        Precision Cholesky factors.
    spherical : bool
    const : float
        ``d log 2 pi``.
    log_det : ndarray (M,)
    """
    d = Xc.shape[1]
    ones = np.ones(d)
    for t in range(len(far)):
        j = far[t]
        lim = limit[j]
        k = 0
        while k < len(by_norm) and norms[by_norm[k]] > lim:
            k += 1
        mu = muc[j]
        sc = ones if spherical else scale[j]
        factor = scale[j, 0] * scale[j, 0]
        lj = log_det[j]
        for p in range(0, k, 4):
            i0, i1 = by_norm[p], by_norm[min(p + 1, k - 1)]
            i2, i3 = by_norm[min(p + 2, k - 1)], by_norm[min(p + 3, k - 1)]
            q0, q1, q2, q3 = _quad4(Xc[i0], Xc[i1], Xc[i2], Xc[i3], mu, sc)
            if spherical:
                q0, q1, q2, q3 = factor * q0, factor * q1, factor * q2, factor * q3
            outT[j, i0 - lo] = -0.5 * (const + q0) + lj
            outT[j, i1 - lo] = -0.5 * (const + q1) + lj
            outT[j, i2 - lo] = -0.5 * (const + q2) + lj
            outT[j, i3 - lo] = -0.5 * (const + q3) + lj
