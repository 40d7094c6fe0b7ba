"""Gaussian component densities and weighted moment estimates (pure functions).

Three covariance types are supported, with sklearn's shapes and precision-Cholesky
parametrisation (see :class:`alprbf.prbf._params.PRBFParams`):

* ``"full"``: covariances (M, d, d), precisions_cholesky (M, d, d) upper triangular ``U`` with
  ``inv(Sigma) = U U^T``;
* ``"diag"``: covariances (M, d), precisions_cholesky ``1/sqrt(var)`` (M, d);
* ``"spherical"``: covariances (M,), precisions_cholesky (M,).

Speed.  Both the log densities and the weighted moments are single matrix products against a
data-only *design matrix* ``Z = [q(xc) | xc | 1]`` (``xc`` = data centred at its column means,
``q`` = quadratic terms: ``xc_a xc_b`` for ``a <= b`` ("full"), ``xc_a^2`` ("diag") or
``|xc|^2`` ("spherical")):

    log N(x; mu_j, Sigma_j) = Z(x) . b_j       with b_j = [-w(P_j)/2 | P_j muc_j | c_j],
    sum_i r_ij Z(x_i) = (R^T Z)_j              (second moments | first moments | n_j),

where ``w(P)`` is the upper triangle of the precision with doubled off-diagonal entries and
``c_j = -muc_j^T P_j muc_j / 2 - d log(2 pi) / 2 + log det U_j``.  For "full" this uses the
symmetry (half the multiply-adds of sklearn's per-component ``X @ U``) and replaces ``M``
small products by one large one.  ``Z`` depends only on the data, so an EM run builds it once
(:class:`GaussianFeatures`); when it would exceed ``MAX_FEATURE_BYTES`` it is rebuilt block by
block at each use instead.  The data are centred once, globally, rather than per component as
sklearn does (a choice for speed): the global centring keeps the cancellation in the expanded
forms small, and where a (nearly collapsed) component could still lose accuracy the direct
per-component formulas are used instead (:func:`estimate_log_gaussian_prob` for rows beyond
the component's accurate radius, :func:`gaussian_parameters_and_precisions` for its
covariance) (evidence: docs/history/notes.md, 'Design matrix accuracy').

Robustness.  The covariance floor ``reg_covar`` is added to every diagonal (negative
round-off variances are clipped to 0 first).  A component with (almost) no responsibility gets
``nk = 10 * eps`` (as in sklearn), i.e. a finite mean/covariance; callers that want to keep the
previous parameters of such components do so themselves (:func:`alprbf.prbf._em.m_step`
does).  If round-off makes a covariance numerically indefinite,
:func:`compute_precision_cholesky` retries with a growing diagonal jitter instead of failing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import cached_property

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.lapack import dtrtri

from ._params import COVARIANCE_TYPES

MAX_FEATURE_BYTES = 256 * 2**20
"""Largest quadratic-feature matrix (bytes) that :class:`GaussianFeatures` caches."""

_BLOCK_BYTES = 32 * 2**20
LOG_2PI = math.log(2.0 * math.pi)


def check_covariance_type(covariance_type: str) -> str:
    """Return ``covariance_type`` or raise ``ValueError`` naming the valid choices."""
    if covariance_type not in COVARIANCE_TYPES:
        raise ValueError(
            f"covariance_type must be one of {', '.join(COVARIANCE_TYPES)}; got {covariance_type!r}"
        )
    return covariance_type


class GaussianFeatures:
    """Data-only design matrix reused by every E and M step on the same ``X``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    covariance_type : {"full", "diag", "spherical"}
    max_bytes : int
        Cache the design matrix when it fits in this many bytes; otherwise it is rebuilt
        block by block at each use (only "full" can be that large).
    extra : ndarray of shape (e, n), optional
        Further per-row weights whose responsibility-weighted sums every M-step needs (the
        EM passes its class indicators).  They are stored below the design matrix, so that
        :func:`weighted_moments` gets all sums from one matrix product.

    Attributes
    ----------
    X : ndarray (n, d)
        The data (not copied).
    center : ndarray (d,)
        Column means of ``X``.
    Xc : ndarray (n, d)
        ``X - center``.
    n_quad : int
        Number of quadratic columns: d(d+1)/2 ("full"), d ("diag"), 1 ("spherical").
    n_design : int
        ``n_quad + d + 1``: the columns of ``Z``.
    ZT : ndarray (n_design, n) or None
        The design matrix ``Z = [q(Xc) | Xc | 1]`` when cached, stored transposed (rows of
        ``ZT`` are contiguous, which makes building it and both matrix products fast); a view
        of the first rows of ``weights_T``.
    weights_T : ndarray (n_design + 1 + e, n) or None
        ``[Z^T ; |Xc|^2 ; extra]`` when cached (see :func:`weighted_moments`).
    """

    def __init__(self, X: np.ndarray, covariance_type: str,
                 max_bytes: int = MAX_FEATURE_BYTES, extra: np.ndarray | None = None) -> None:
        check_covariance_type(covariance_type)
        X = np.asarray(X, dtype=np.float64)
        self.X = X
        self.covariance_type = covariance_type
        n, d = X.shape
        self.center = X.mean(axis=0) if n else np.zeros(d)
        self.Xc = X - self.center
        self.row_norms = np.sqrt(np.einsum("ia,ia->i", self.Xc, self.Xc))
        self.radius = float(self.row_norms.max()) if n else 0.0
        self.iu = np.triu_indices(d)
        self.n_quad = {"full": len(self.iu[0]), "diag": d, "spherical": 1}[covariance_type]
        self.n_design = self.n_quad + d + 1
        extra = np.zeros((0, n)) if extra is None else np.asarray(extra, dtype=np.float64)
        if extra.ndim != 2 or extra.shape[1] != n:
            raise ValueError(f"extra must have shape (e, {n}); got {extra.shape}")
        self.block_rows = max(1, _BLOCK_BYTES // (8 * self.n_design))
        rows = self.n_design + 1 + len(extra)
        self.weights_T = None
        self._extra = extra                  # kept apart only when the design is not cached
        if n * rows * 8 <= max_bytes:
            self.weights_T = np.empty((rows, n))
            self._design(self.Xc, out=self.weights_T[:self.n_design])
            self.weights_T[self.n_design] = self.row_norms ** 2
            self.weights_T[self.n_design + 1:] = extra
            self._extra = None

    @cached_property
    def rows_by_norm(self) -> tuple[np.ndarray, np.ndarray]:
        """Row indices by increasing ``row_norms``, and the sorted norms."""
        order = np.argsort(self.row_norms, kind="stable")
        return order, self.row_norms[order]

    def rows_by_decreasing_norm(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo .. hi - 1`` by decreasing ``row_norms``; cached per range, as an EM loop
        asks for the same blocks at every E-step (kept in the instance dict, like the cached
        properties, so that instances pickled in a checkpoint before it existed still work)."""
        cache = self.__dict__.setdefault("_by_norm", {})
        rows = cache.get((lo, hi))
        if rows is None:
            rows = cache[lo, hi] = lo + np.argsort(-self.row_norms[lo:hi], kind="stable")
        return rows

    @property
    def ZT(self) -> np.ndarray | None:
        return None if self.weights_T is None else self.weights_T[:self.n_design]

    @property
    def extra(self) -> np.ndarray:
        """The ``extra`` rows (e, n); a view of ``weights_T`` when that is cached."""
        return self._extra if self.weights_T is None else self.weights_T[self.n_design + 1:]

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    def _design(self, Xc: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Transposed design matrix ``Z^T`` (n_quad + d + 1, len(Xc)) of some centred rows."""
        n, d = Xc.shape
        q = self.n_quad
        XT = np.ascontiguousarray(Xc.T)
        ZT = np.empty((q + d + 1, n)) if out is None else out
        if self.covariance_type == "full":
            o = 0
            for a in range(d):                          # rows (a, a..d-1) of the triangle
                np.multiply(XT[a], XT[a:], out=ZT[o:o + d - a])
                o += d - a
        elif self.covariance_type == "diag":
            np.multiply(XT, XT, out=ZT[:q])
        else:
            np.einsum("ai,ai->i", XT, XT, out=ZT[0])
        ZT[q:q + d] = XT
        ZT[-1] = 1.0
        return ZT

    def blocks(self) -> Iterator[tuple[slice, np.ndarray]]:
        """Yield ``(rows, Z^T[:, rows])`` covering all rows (one block when cached)."""
        n = self.n_samples
        if self.ZT is not None:
            yield slice(0, n), self.ZT
            return
        for start in range(0, n, self.block_rows):
            rows = slice(start, min(n, start + self.block_rows))
            yield rows, self._design(self.Xc[rows])


def as_features(X, covariance_type: str, features: GaussianFeatures | None) -> GaussianFeatures:
    if features is not None:
        if features.covariance_type != covariance_type:
            raise ValueError("features were built for another covariance_type")
        if X is not None and np.shape(X) != features.X.shape:
            raise ValueError("features were built from data of another shape")
        return features
    return GaussianFeatures(X, covariance_type)


def _unpack_sym(S: np.ndarray, iu: tuple[np.ndarray, np.ndarray], d: int) -> np.ndarray:
    """(M, d(d+1)/2) upper triangles -> (M, d, d) symmetric matrices."""
    out = np.empty((S.shape[0], d, d))
    out[:, iu[0], iu[1]] = S
    out[:, iu[1], iu[0]] = S
    return out


def compute_precision_cholesky(covariances: np.ndarray, covariance_type: str) -> np.ndarray:
    """Cholesky factors of the precision matrices (sklearn's parametrisation).

    Parameters
    ----------
    covariances : ndarray of shape (M, d, d), (M, d) or (M,)
    covariance_type : {"full", "diag", "spherical"}

    Returns
    -------
    precisions_cholesky : ndarray, same shape as ``covariances``
        "full": upper-triangular ``U_j = inv(L_j)^T`` where ``Sigma_j = L_j L_j^T``;
        "diag"/"spherical": ``1 / sqrt(var)``.

    Notes
    -----
    A covariance that round-off made indefinite is symmetrised and retried with a diagonal
    jitter ``1e-10 * mean(diag)`` growing tenfold (at most 12 times); a non-positive variance
    ("diag"/"spherical") is replaced by the smallest positive float.  Either way the result is
    finite; ``ValueError`` is raised only for non-finite input.
    """
    check_covariance_type(covariance_type)
    cov = np.asarray(covariances, dtype=np.float64)
    if not np.all(np.isfinite(cov)):
        raise ValueError("covariances contain non-finite values")
    if covariance_type != "full":
        return 1.0 / np.sqrt(np.maximum(cov, np.finfo(np.float64).tiny))
    try:
        L = np.linalg.cholesky(cov)                      # one batched call
    except np.linalg.LinAlgError:
        L = np.array([_robust_cholesky(c) for c in cov])
    out = np.empty_like(cov)
    for j in range(cov.shape[0]):
        inv, info = dtrtri(L[j], lower=1)
        if info != 0:  # pragma: no cover - L has a positive diagonal by construction
            inv = solve_triangular(L[j], np.eye(len(L[j])), lower=True)
        out[j] = inv.T
    return out


def _robust_cholesky(c: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(c)
    except np.linalg.LinAlgError:
        pass
    c = 0.5 * (c + c.T)
    scale = max(float(np.mean(np.abs(np.diag(c)))), np.finfo(np.float64).tiny)
    jitter = 1e-10 * scale
    for _ in range(12):
        try:
            return np.linalg.cholesky(c + jitter * np.eye(len(c)))
        except np.linalg.LinAlgError:
            jitter *= 10.0
    # last resort: keep only the (positive part of the) diagonal
    return np.diag(np.sqrt(np.maximum(np.diag(c), 0.0) + jitter))


def log_det_cholesky(precisions_cholesky: np.ndarray, covariance_type: str,
                     n_features: int) -> np.ndarray:
    """``log det U_j`` = ``-0.5 log det Sigma_j`` for each component, shape (M,)."""
    pc = np.asarray(precisions_cholesky)
    if covariance_type == "full":
        return np.sum(np.log(np.diagonal(pc, axis1=1, axis2=2)), axis=1)
    if covariance_type == "diag":
        return np.sum(np.log(pc), axis=1)
    return n_features * np.log(pc)


def precisions_from_cholesky(precisions_cholesky: np.ndarray, covariance_type: str) -> np.ndarray:
    """Precision matrices ``U U^T`` ("full") or inverse variances (other types)."""
    pc = np.asarray(precisions_cholesky)
    if covariance_type == "full":
        return pc @ np.swapaxes(pc, 1, 2)
    return pc * pc


def estimate_log_gaussian_prob(X: np.ndarray | None, means: np.ndarray,
                               precisions_cholesky: np.ndarray, covariance_type: str,
                               features: GaussianFeatures | None = None,
                               out: np.ndarray | None = None) -> np.ndarray:
    """Log densities ``log N(x_i; mu_j, Sigma_j)`` (001 eq 5 / 000 eq 5).

    Parameters
    ----------
    X : ndarray of shape (n, d), or None when ``features`` is given
    means : ndarray of shape (M, d)
    precisions_cholesky : ndarray, shape by covariance type (see module docstring)
    covariance_type : {"full", "diag", "spherical"}
    features : GaussianFeatures, optional
        Precomputed design matrix of ``X`` (speeds up repeated calls on the same data).
    out : ndarray of shape (M, n), optional
        C-contiguous array to write the result into (its transpose is returned); an EM loop
        passes its previous iteration's array instead of paging in a new one.

    Returns
    -------
    log_prob : ndarray of shape (n, M)
        Column-major (the transpose of a C-contiguous (M, n) array): reductions over the
        components of each row, as in every E-step, are then fast.
    """
    f = as_features(X, covariance_type, features)
    pc = np.asarray(precisions_cholesky, dtype=np.float64)
    BT, muc, log_det = log_prob_coefficients(f, means, pc, covariance_type)
    outT = design_log_prob(f, BT, out)
    comps, rows, values = direct_log_densities(f, muc, pc, covariance_type, log_det)
    outT[comps, rows] = values                      # the rows beyond an accurate radius
    return outT.T


def design_log_prob(features: GaussianFeatures, BT: np.ndarray,
                    out: np.ndarray | None = None) -> np.ndarray:
    """``BT @ Z^T`` (M, n): the log densities by the design (:func:`log_prob_coefficients`),
    into ``out`` when given (C-contiguous), the design block by block when it is not cached."""
    f = features
    outT = np.empty((BT.shape[0], f.n_samples)) if out is None else out
    if f.ZT is not None:
        np.matmul(BT, f.ZT, out=outT)
    else:
        for rows, ZTb in f.blocks():
            np.matmul(BT, ZTb, out=outT[:, rows])
    return outT


def direct_log_densities(features: GaussianFeatures, muc: np.ndarray, precisions_cholesky,
                         covariance_type: str, log_det: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The log densities that :func:`estimate_log_gaussian_prob` evaluates directly instead of
    by the design: ``(comps, rows, values)``, one entry per component ``comps[t]`` and row
    ``rows[t]`` beyond that component's accurate radius (by component, rows increasing);
    ``muc`` and ``log_det`` as :func:`log_prob_coefficients` returns them.

    The squared distances are computed component by component (:func:`_direct_quad`; one
    batch over all entries gathered the means and precisions per entry and took twice as
    long); the rows of a component come from the norms sorted once per data.  This NumPy form
    is the reference: :class:`~alprbf.prbf.fast.far_rows.FarRowDensities` takes a compiled
    form with its bits where that is checked to hold.
    """
    f = features
    d = f.X.shape[1]
    pc = np.asarray(precisions_cholesky, dtype=np.float64)
    limit = accurate_radius(muc, pc, covariance_type)
    far = np.flatnonzero(f.radius > limit)           # only rows beyond the radius lose accuracy
    if not len(far):
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, np.zeros(0)
    order, norms = f.rows_by_norm
    firsts = np.searchsorted(norms, limit[far], side="right")
    per_comp = [np.sort(order[a:]) for a in firsts]
    rows = np.concatenate(per_comp)
    comps = np.repeat(far, len(f.row_norms) - firsts)
    quad = np.concatenate([_direct_quad(f.Xc[r] - muc[j], pc[j], covariance_type)
                           for j, r in zip(far, per_comp, strict=True)])
    return comps, rows, -0.5 * (d * LOG_2PI + quad) + log_det[comps]


def log_prob_coefficients(features: GaussianFeatures, means: np.ndarray,
                          precisions_cholesky: np.ndarray, covariance_type: str
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (M, n_design) matrix ``BT`` with ``log N(x_i; mu_j, Sigma_j) = (BT @ ZT)[j, i]``
    (``ZT`` the design of ``features``); accurate within each component's radius
    (:func:`direct_log_densities` evaluates the other rows directly).

    Returns
    -------
    BT : ndarray (M, n_design), C-contiguous
    muc : ndarray (M, d)
        Means relative to the design's centre.
    log_det : ndarray (M,)
        ``log det`` of the precision Cholesky factors.
    """
    f = features
    d = f.X.shape[1]
    muc = np.asarray(means, dtype=np.float64) - f.center
    M = muc.shape[0]
    pc = np.asarray(precisions_cholesky, dtype=np.float64)
    q = f.n_quad
    B = np.empty((q + d + 1, M))
    if covariance_type == "full":
        P = precisions_from_cholesky(pc, "full")
        Wq = P[:, f.iu[0], f.iu[1]]                           # (M, q) upper triangles
        Wq[:, f.iu[0] != f.iu[1]] *= 2.0
        B[:q] = -0.5 * Wq.T
        Pm = np.einsum("jab,jb->ja", P, muc)
    elif covariance_type == "diag":
        P = pc * pc
        B[:q] = -0.5 * P.T
        Pm = muc * P
    else:
        P = pc * pc
        B[0] = -0.5 * P
        Pm = muc * P[:, None]
    B[q:q + d] = Pm.T
    log_det = log_det_cholesky(pc, covariance_type, d)
    B[-1] = -0.5 * np.einsum("ja,ja->j", muc, Pm) - 0.5 * d * LOG_2PI + log_det
    return np.ascontiguousarray(B.T), muc, log_det


ROUNDOFF_TOL = 1e-8
"""Components whose expanded-form round-off could exceed this (absolute error in a log density,
or relative error in a covariance) are recomputed with per-component centring."""


def _trace_precision(pc: np.ndarray, covariance_type: str, d: int) -> np.ndarray:
    if covariance_type == "full":
        return np.einsum("jab,jab->j", pc, pc)
    if covariance_type == "diag":
        return np.sum(pc * pc, axis=1)
    return d * pc * pc


def accurate_radius(muc: np.ndarray, pc: np.ndarray, covariance_type: str) -> np.ndarray:
    """Per component, the row norm ``|x - center|`` up to which the expanded forms are accurate,
    shape (M,).

    The expanded quadratic forms (and second moments) lose about ``eps * |x|^2 * lambda_max(P)``
    in absolute terms; ``tr(P)`` bounds ``lambda_max(P)``.  A row (or a weighted sum of rows of
    that extent) is accurate while ``eps * (|x - center| + |muc|)^2 * tr(P) <= ROUNDOFF_TOL``.
    Only (nearly) collapsed components have a small radius, e.g. variances near ``reg_covar``
    = 1e-6 on standardised data; the radius is negative when no row is accurate.
    """
    trp = _trace_precision(pc, covariance_type, muc.shape[1])
    reach = np.sqrt(ROUNDOFF_TOL / (np.finfo(np.float64).eps * trp))
    return reach - np.sqrt(np.einsum("ja,ja->j", muc, muc))


def _direct_quad(diff: np.ndarray, pc_j: np.ndarray, covariance_type: str) -> np.ndarray:
    """Squared Mahalanobis distances of the rows of ``diff`` (already centred at the mean)."""
    if covariance_type == "full":
        y = diff @ pc_j
        return np.einsum("ia,ia->i", y, y)
    if covariance_type == "diag":
        y = diff * pc_j
        return np.einsum("ia,ia->i", y, y)
    return pc_j * pc_j * np.einsum("ia,ia->i", diff, diff)


def _direct_covariance(features: GaussianFeatures, mu: np.ndarray, r: np.ndarray, nk: float,
                       reg_covar: float, squared_deviations=None) -> np.ndarray:
    """Weighted covariance of the rows of ``features.Xc`` around ``mu`` (the weighted mean,
    relative to the centre) + floor.  For "diag" and "spherical" the weighted squares are
    ``r @ ((Xc - mu) ** 2)``, or ``squared_deviations(Xc, mu, r)`` where that is given and
    does not return ``None`` (the fast path's, over the non-zero weights only:
    :func:`~alprbf.prbf.fast.sparse_variance.sparse_squared_deviations`)."""
    ct = features.covariance_type
    if ct == "full":
        diff = features.Xc - mu
        c = (r * diff.T) @ diff / nk
        c.flat[:: len(c) + 1] += reg_covar
        return c
    squares = None if squared_deviations is None else squared_deviations(features.Xc, mu, r)
    if squares is None:
        diff = features.Xc - mu
        squares = r @ (diff * diff)
    v = squares / nk + reg_covar
    return v if ct == "diag" else v.mean()


def weighted_moments(features: GaussianFeatures, resp: np.ndarray) -> np.ndarray:
    """Responsibility-weighted sums of the design rows: ``(R^T [Z | |xc|^2 | extra])``.

    Parameters
    ----------
    features : GaussianFeatures
    resp : ndarray (n, M)
        Non-negative weights of every row for every component.

    Returns
    -------
    ndarray (M, n_design + 1 + e)
        Per component: the second moments, first moments and total weight (``Z``; the input
        of :func:`parameters_from_moments`), the weighted sum of ``|x - center|^2`` and the
        weighted sums of the ``extra`` rows.  One matrix product when the design is cached.
    """
    resp = np.asarray(resp, dtype=np.float64)
    M = resp.shape[1]
    f = features
    if f.weights_T is not None:
        # the product is ~3x faster when the operand with n rows is contiguous along n
        if resp.flags.f_contiguous:
            return (f.weights_T @ resp).T
        return resp.T @ f.weights_T.T
    w = f.n_design
    S = np.zeros((M, w + 1 + len(f.extra)))
    for rows, ZTb in f.blocks():
        if resp.flags.f_contiguous:
            S[:, :w] += (ZTb @ resp[rows]).T
        else:
            S[:, :w] += resp[rows].T @ ZTb.T
    S[:, w] = f.row_norms ** 2 @ resp
    S[:, w + 1:] = (f.extra @ resp).T
    return S


def parameters_from_moments(features: GaussianFeatures, moments: np.ndarray,
                            reg_covar: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted means and covariances from :func:`weighted_moments` (see
    :func:`estimate_gaussian_parameters` for the returned values)."""
    f = features
    d = f.X.shape[1]
    q = f.n_quad
    ct = f.covariance_type
    S = moments[:, :f.n_design]
    nk = S[:, -1] + 10.0 * np.finfo(np.float64).eps
    S = S / nk[:, None]
    mc = S[:, q:q + d]
    if ct == "full":
        C = S[:, :q] - mc[:, f.iu[0]] * mc[:, f.iu[1]]
        cov = _unpack_sym(C, f.iu, d)
        diag = np.einsum("jaa->ja", cov)  # writable view of the diagonals
        np.maximum(diag, 0.0, out=diag)
        diag += reg_covar
    elif ct == "diag":
        cov = np.maximum(S[:, :q] - mc * mc, 0.0) + reg_covar
    else:
        cov = np.maximum(S[:, 0] - np.einsum("ja,ja->j", mc, mc), 0.0) / d + reg_covar
    return nk, mc + f.center, cov


def gaussian_parameters_and_precisions(features: GaussianFeatures,
                                       resp: np.ndarray | Callable[[np.ndarray], np.ndarray],
                                       reg_covar: float, moments: np.ndarray | None = None,
                                       squared_deviations=None
                                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`estimate_gaussian_parameters` + :func:`compute_precision_cholesky`, accurate.

    Components whose covariance is so small relative to the data's extent that the expanded
    second moments could lose more than ``ROUNDOFF_TOL`` relative accuracy are recomputed with
    per-component centring (sklearn's formula, ``n d^2`` work each; only nearly collapsed
    components qualify).  The extent of component ``j`` is the root of the
    responsibility-weighted mean of ``|x - center|^2`` -- the scale of the terms its weighted
    sums add up.  This is a choice: the largest row norm would be the simpler bound, but a few
    far rows make it large for every component, so that nearly all components would be
    recomputed (evidence: docs/history/notes.md, 'Design matrix accuracy').

    Parameters
    ----------
    features : GaussianFeatures
    resp : ndarray (n, M), or a function of the recomputed components' indices
        The responsibilities, read only for components whose expanded-form moments are
        inaccurate (rare).  A function ``resp(comps)`` returns ``resp[:, comps]``, an
        (n, len(comps)) array with contiguous columns, and is called only then (a blocked
        E-step keeps no (n, M) array: :attr:`~alprbf.prbf._estep.EStep.resp_columns`); it
        needs ``moments``.
    reg_covar : float
    moments : ndarray (M, n_design + 1 + e), optional
        ``weighted_moments(features, resp)`` when the caller has it already (the E-step does).
    squared_deviations : function, optional
        ``(Xc, mu, r) -> r @ ((Xc - mu) ** 2)`` or ``None``, for the recomputed "diag" and
        "spherical" covariances (see :func:`_direct_covariance`); NumPy's product by default.

    Returns
    -------
    nk : (M,), means : (M, d), covariances, precisions_cholesky
    """
    ct = features.covariance_type
    if moments is None:
        if callable(resp):
            raise TypeError("responsibilities given as a function need their moments")
        moments = weighted_moments(features, resp)
    nk, means, covs = parameters_from_moments(features, moments, reg_covar)
    prec = compute_precision_cholesky(covs, ct)
    muc = means - features.center
    extent = np.sqrt(moments[:, features.n_design] / np.maximum(nk, 1e-300))
    bad = np.flatnonzero(extent > accurate_radius(muc, prec, ct))
    if len(bad):
        if callable(resp):
            cols = resp(bad)
            columns = [cols[:, c] for c in range(len(bad))]
        else:   # column by column, not resp[:, bad]: that copy of a C-ordered resp (the
            # split's) has contiguous columns, and BLAS's vector product in the diag and
            # spherical covariances gives other bits for them than for strided ones
            columns = [resp[:, j] for j in bad]
        for j, r in zip(bad, columns, strict=True):
            covs[j] = _direct_covariance(features, muc[j], r, nk[j], reg_covar,
                                         squared_deviations)
        prec[bad] = compute_precision_cholesky(covs[bad], ct)
    return nk, means, covs, prec


def estimate_gaussian_parameters(X: np.ndarray | None, resp: np.ndarray, reg_covar: float,
                                 covariance_type: str,
                                 features: GaussianFeatures | None = None
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted means and covariances (001 eqs 8-9, 13-14; 000 eqs 26-27, 30-31).

    Parameters
    ----------
    X : ndarray of shape (n, d), or None when ``features`` is given
    resp : ndarray of shape (n, M)
        Non-negative weights of every row for every component (responsibilities).
    reg_covar : float
        Added to every variance (the covariance floor).
    covariance_type : {"full", "diag", "spherical"}
    features : GaussianFeatures, optional

    Returns
    -------
    nk : ndarray of shape (M,)
        Column sums of ``resp`` plus ``10 * eps`` (so empty components give finite values).
    means : ndarray of shape (M, d)
    covariances : ndarray of shape (M, d, d), (M, d) or (M,)
        Weighted covariance around the *new* means (the exact M-step maximiser) plus
        ``reg_covar`` on the diagonal; for "spherical" the mean of the diagonal variances.
    """
    f = as_features(X, covariance_type, features)
    return parameters_from_moments(f, weighted_moments(f, resp), reg_covar)
