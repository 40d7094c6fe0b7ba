"""Gaussian component densities and weighted moment estimates (pure functions).

Three covariance types are supported, with sklearn's shapes and precision-Cholesky
parametrisation (see :class:`alprbf.prbf._params.PRBFParams`):

* ``"full"``: covariances (M, d, d), precisions_cholesky (M, d, d) upper triangular ``U`` with
  ``inv(Sigma) = U U^T``;
* ``"diag"``: covariances (M, d), precisions_cholesky ``1/sqrt(var)`` (M, d);
* ``"spherical"``: covariances (M,), precisions_cholesky (M,).

Speed.  For ``"full"`` the squared Mahalanobis distances and the weighted second moments are
both written as one matrix product against the *quadratic features* of the data,
``F[i, (a, b)] = xc_ia xc_ib`` for ``a <= b`` (``xc`` = data centred at its mean):

    (x - mu)^T P (x - mu) = F(x) . w(P) - 2 xc^T P muc + muc^T P muc,
    sum_i r_ij xc_i xc_i^T = (R^T F)_j  (unpacked to a symmetric matrix),

where ``w(P)`` is the upper triangle of ``P`` with off-diagonal entries doubled.  This uses the
symmetry (half the multiply-adds of sklearn's per-component ``X @ U``) and replaces ``M`` small
matrix products by one large one.  ``F`` depends only on the data, so an EM run builds it once
(:class:`GaussianFeatures`) and reuses it at every iteration; when it would exceed
``MAX_FEATURE_BYTES`` it is recomputed block by block instead of being cached.  The global
centring keeps the cancellation in the expanded forms small (standardised data lose ~1e-14
relative accuracy against sklearn's per-component centring).

Robustness.  The covariance floor ``reg_covar`` is added to every diagonal.  A component with
(almost) no responsibility gets ``nk = 10 * eps`` (as in sklearn), i.e. a finite mean/covariance;
callers that want to keep the previous parameters of such components do so themselves
(:func:`alprbf.prbf._em.m_step` does).  If round-off makes a covariance numerically indefinite,
:func:`compute_precision_cholesky` retries with a growing diagonal jitter instead of failing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.lapack import dtrtri

from ._params import COVARIANCE_TYPES

MAX_FEATURE_BYTES = 256 * 2**20
"""Largest quadratic-feature matrix (bytes) that :class:`GaussianFeatures` caches."""

_BLOCK_BYTES = 32 * 2**20
_LOG_2PI = math.log(2.0 * math.pi)


def check_covariance_type(covariance_type: str) -> str:
    """Return ``covariance_type`` or raise ``ValueError`` naming the valid choices."""
    if covariance_type not in COVARIANCE_TYPES:
        raise ValueError(
            f"covariance_type must be one of {', '.join(COVARIANCE_TYPES)}; got {covariance_type!r}"
        )
    return covariance_type


class GaussianFeatures:
    """Data-only quantities reused by every E and M step on the same ``X``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    covariance_type : {"full", "diag", "spherical"}
    max_bytes : int
        Cache the (n, d(d+1)/2) quadratic features (``"full"`` only) when they fit in this many
        bytes; otherwise they are rebuilt block by block at each use.

    Attributes
    ----------
    X : ndarray (n, d)
        The data (not copied).
    center : ndarray (d,)
        Column means of ``X``; every computation works on ``Xc = X - center``.
    Xc : ndarray (n, d)
    Xc2 : ndarray (n, d)
        ``Xc ** 2`` ("diag"/"spherical").
    F : ndarray (n, d(d+1)/2) or None
        Cached quadratic features ("full" and small enough) or None.
    """

    def __init__(self, X: np.ndarray, covariance_type: str,
                 max_bytes: int = MAX_FEATURE_BYTES) -> None:
        check_covariance_type(covariance_type)
        X = np.asarray(X, dtype=np.float64)
        self.X = X
        self.covariance_type = covariance_type
        n, d = X.shape
        self.center = X.mean(axis=0) if n else np.zeros(d)
        self.Xc = X - self.center
        self.Xc2 = None
        self.F = None
        if covariance_type == "full":
            self.iu = np.triu_indices(d)
            n_feat = len(self.iu[0])
            self.block_rows = max(1, _BLOCK_BYTES // (8 * max(n_feat, 1)))
            if n * n_feat * 8 <= max_bytes:
                self.F = self._quad(self.Xc)
        else:
            self.Xc2 = self.Xc * self.Xc

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    def _quad(self, Xc: np.ndarray) -> np.ndarray:
        return Xc[:, self.iu[0]] * Xc[:, self.iu[1]]

    def blocks(self) -> Iterator[tuple[slice, np.ndarray]]:
        """Yield ``(rows, F[rows])`` covering all rows (one block when ``F`` is cached)."""
        n = self.n_samples
        if self.F is not None:
            yield slice(0, n), self.F
            return
        for start in range(0, n, self.block_rows):
            rows = slice(start, min(n, start + self.block_rows))
            yield rows, self._quad(self.Xc[rows])


def _as_features(X, covariance_type: str, features: GaussianFeatures | None) -> GaussianFeatures:
    if features is not None:
        if features.covariance_type != covariance_type:
            raise ValueError("features were built for another covariance_type")
        if X is not None and np.shape(X) != features.X.shape:
            raise ValueError("features were built from data of another shape")
        return features
    return GaussianFeatures(X, covariance_type)


def _sym_weights(P: np.ndarray, iu: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """(M, d, d) symmetric -> (d(d+1)/2, M): upper triangle, off-diagonal entries doubled."""
    W = P[:, iu[0], iu[1]]
    W[:, iu[0] != iu[1]] *= 2.0
    return W.T


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
                               features: GaussianFeatures | None = None) -> np.ndarray:
    """Log densities ``log N(x_i; mu_j, Sigma_j)`` (001 eq 5 / 000 eq 5).

    Parameters
    ----------
    X : ndarray of shape (n, d), or None when ``features`` is given
    means : ndarray of shape (M, d)
    precisions_cholesky : ndarray, shape by covariance type (see module docstring)
    covariance_type : {"full", "diag", "spherical"}
    features : GaussianFeatures, optional
        Precomputed data quantities for ``X`` (speeds up repeated calls on the same data).

    Returns
    -------
    log_prob : ndarray of shape (n, M)
    """
    f = _as_features(X, covariance_type, features)
    n, d = f.X.shape
    muc = np.asarray(means, dtype=np.float64) - f.center
    M = muc.shape[0]
    pc = np.asarray(precisions_cholesky, dtype=np.float64)
    log_det = log_det_cholesky(pc, covariance_type, d)
    if covariance_type == "full":
        P = precisions_from_cholesky(pc, "full")
        W = _sym_weights(P, f.iu)
        Pm = np.einsum("jab,jb->ja", P, muc)
        quad = np.empty((n, M))
        for rows, Fb in f.blocks():
            quad[rows] = Fb @ W
        quad -= 2.0 * (f.Xc @ Pm.T)
        quad += np.einsum("ja,ja->j", muc, Pm)
    elif covariance_type == "diag":
        P = pc * pc
        quad = f.Xc2 @ P.T
        quad -= 2.0 * (f.Xc @ (muc * P).T)
        quad += np.sum(muc * muc * P, axis=1)
    else:
        P = pc * pc
        quad = f.Xc2.sum(axis=1)[:, None] - 2.0 * (f.Xc @ muc.T)
        quad += np.sum(muc * muc, axis=1)
        quad *= P
    np.maximum(quad, 0.0, out=quad)  # round-off in the expanded form
    quad += d * _LOG_2PI
    quad *= -0.5
    quad += log_det
    return quad


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
    f = _as_features(X, covariance_type, features)
    n, d = f.X.shape
    resp = np.asarray(resp, dtype=np.float64)
    nk = resp.sum(axis=0) + 10.0 * np.finfo(np.float64).eps
    mc = (resp.T @ f.Xc) / nk[:, None]
    if covariance_type == "full":
        M = resp.shape[1]
        S = np.zeros((M, len(f.iu[0])))
        for rows, Fb in f.blocks():
            S += resp[rows].T @ Fb
        S /= nk[:, None]
        S -= mc[:, f.iu[0]] * mc[:, f.iu[1]]
        cov = _unpack_sym(S, f.iu, d)
        diag = np.einsum("jaa->ja", cov)  # writable view of the diagonals
        np.maximum(diag, 0.0, out=diag)
        diag += reg_covar
    else:
        var = (resp.T @ f.Xc2) / nk[:, None] - mc * mc
        np.maximum(var, 0.0, out=var)
        var += reg_covar
        cov = var if covariance_type == "diag" else var.mean(axis=1)
    return nk, mc + f.center, cov
