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
:class:`FarRowDensities` compares it with the NumPy form, bit for bit,
once per process and number of features; another NumPy build (e.g. a CPU whose baseline has
fused multiply-adds) gives ``False`` and the NumPy form stays.
"""

from __future__ import annotations

from functools import cache

import numba
import numpy as np

from .._gaussian import (
    LOG_2PI,
    GaussianFeatures,
    accurate_radius,
    as_features,
    design_log_prob,
    direct_log_densities,
    log_det_cholesky,
    log_prob_coefficients,
)

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


def estimate_log_gaussian_prob(X: np.ndarray | None, means: np.ndarray,
                               precisions_cholesky: np.ndarray, covariance_type: str,
                               features: GaussianFeatures | None = None,
                               out: np.ndarray | None = None) -> np.ndarray:
    """:func:`~alprbf.prbf._gaussian.estimate_log_gaussian_prob` (same arguments, same bits)
    with the far rows' log densities by :class:`FarRowDensities`."""
    f = as_features(X, covariance_type, features)
    pc = np.asarray(precisions_cholesky, dtype=np.float64)
    BT, muc, log_det = log_prob_coefficients(f, means, pc, covariance_type)
    outT = design_log_prob(f, BT, out)
    FarRowDensities(f, muc, pc, covariance_type, log_det).write(outT, 0, f.n_samples)
    return outT.T


class FarRowDensities:
    """The log densities evaluated directly instead of by the design (rows beyond each
    component's accurate radius, :func:`direct_log_densities`), written into blocks of rows.

    Where :func:`compiled_far_rows_match` holds ("diag" and "spherical"), each block's entries
    are computed as it is written (:func:`write_far`, the same bits);
    otherwise all entries are computed here by :func:`direct_log_densities` and sorted by row.

    Parameters
    ----------
    features : GaussianFeatures
    muc, precisions_cholesky, covariance_type, log_det
        As :func:`direct_log_densities` takes them.
    compiled : bool, optional
        Force the compiled form (True; "diag" and "spherical" only) or the NumPy one (False);
        by default the compiled one where it is checked to give the same bits.
    """

    def __init__(self, features: GaussianFeatures, muc: np.ndarray, precisions_cholesky,
                 covariance_type: str, log_det: np.ndarray, compiled: bool | None = None
                 ) -> None:
        f = self._features = features
        pc = np.asarray(precisions_cholesky, dtype=np.float64)
        self._limit = accurate_radius(muc, pc, covariance_type)
        self._far = np.flatnonzero(f.radius > self._limit) if f.n_samples else np.zeros(0, int)
        self._entries = self._compiled = None
        if not len(self._far):
            return
        d = f.X.shape[1]
        if compiled is None:
            compiled = covariance_type != "full" and compiled_far_rows_match(d)
        if compiled:
            scale = pc if covariance_type == "diag" else pc.reshape(-1, 1)
            self._compiled = (f.Xc, f.row_norms, self._far, self._limit,
                              np.ascontiguousarray(muc, dtype=np.float64),
                              np.ascontiguousarray(scale), covariance_type == "spherical",
                              d * LOG_2PI, np.ascontiguousarray(log_det, dtype=np.float64))
        else:
            comps, rows, values = direct_log_densities(f, muc, pc, covariance_type, log_det)
            order = np.argsort(rows, kind="stable")
            self._entries = comps[order], rows[order], values[order]

    def __bool__(self) -> bool:
        """Whether any row is beyond a component's accurate radius."""
        return len(self._far) > 0

    def write(self, outT: np.ndarray, lo: int, hi: int) -> None:
        """Overwrite ``outT[j, i - lo]`` with the direct log density of each far row
        ``lo <= i < hi`` under component ``j`` (``outT`` of shape (M, hi - lo), C-contiguous)."""
        if self._compiled is not None:
            write_far(outT, lo, self._features.rows_by_decreasing_norm(lo, hi), *self._compiled)
        elif self._entries is not None:
            comps, rows, values = self._entries
            a, b = np.searchsorted(rows, (lo, hi))
            outT[comps[a:b], rows[a:b] - lo] = values[a:b]


@cache
def compiled_far_rows_match(n_features: int) -> bool:
    """Whether :func:`write_far` gives the bits of
    :func:`direct_log_densities` in this process, for rows of ``n_features`` coordinates:
    checked once per width on random data ("diag" and "spherical", most rows far)."""
    d = n_features
    rng = np.random.default_rng(7919 * d + 1)
    X = rng.standard_normal((67, d)) * np.exp(rng.uniform(0.0, 3.0, d))
    f = GaussianFeatures(X, "diag", max_bytes=0)
    muc = 0.01 * rng.standard_normal((5, d))
    diag = np.exp(rng.uniform(0.0, 16.0, (5, d)))
    diag[:, 0] = np.exp(16.0)                        # a small accurate radius: most rows far
    for ct, pc in (("diag", diag), ("spherical", np.exp(rng.uniform(12.0, 16.0, 5)))):
        log_det = log_det_cholesky(pc, ct, d)
        want, got = np.zeros((5, len(X))), np.zeros((5, len(X)))
        FarRowDensities(f, muc, pc, ct, log_det, compiled=False).write(want, 0, len(X))
        FarRowDensities(f, muc, pc, ct, log_det, compiled=True).write(got, 0, len(X))
        if not np.array_equal(got.view(np.uint64), want.view(np.uint64)):
            return False
    return True
