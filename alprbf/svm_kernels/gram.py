"""Gram matrices of the structure-aware kernels of Reitmaier et al. 2016 (§4.3.1, §5.1.1) and the
RBF baseline.

This module owns the kernel *functions*: each returns the Gram matrix between two sets of rows,
ready for ``sklearn.svm.SVC(kernel="precomputed")`` (fit on ``K(X_train, X_train)``, predict on
``K(X_new, X_train)``). The density model that gives the responsibilities and the precision
matrices lives elsewhere; here they are plain arrays.

* :func:`rbf_gram`: ``exp(-gamma ||x - z||^2)``, the baseline;
* :func:`rwm_gram`: the responsibility weighted Mahalanobis kernel (Reitmaier et al. 2016, eqs
  12-13, with the Mahalanobis distance of eq 5) and its categorical extension (eqs 14-16);
* :func:`gmm_gram`: a **project-defined** "GMM kernel" (Reitmaier et al. 2016 names one in its
  tables but no source at hand defines it): the RWM kernel with hard (MAP) responsibilities;
* :class:`LaplacianDeformation` and :func:`lap_gram`: the LAP kernel, i.e. LapSVM written as an
  SVM on a deformed kernel (Sindhwani, Niyogi & Belkin 2005), with one decomposition per base
  kernel serving every ``(gamma_I, gamma_A)`` of a grid;
* :data:`KERNELS` and :func:`gram`: selection by name;
* :func:`smallest_eigenvalue`, :func:`clip_spectrum`: the handling of indefinite Gram matrices.

Every kernel takes the categorical extension of eqs 14-16 (Reitmaier et al. 2016, §5.1.1 extends all
its kernels so): with a boolean mask of categorical (integer-coded) columns, the continuous part
uses the other columns and the kernel is ``exp(-gamma (alpha Delta^2 + beta Delta_01^2))`` with
``Delta_01`` the number of mismatching categorical attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas, cho_solve_banded, cholesky_banded, lapack, solve, solve_banded

from alprbf.validation import check_choice, check_int, check_positive, check_real

from ._graph import (
    apply_q,
    apply_qt,
    band_reduce,
    knn_laplacian,
    laplacian_factor,
    sparse_power,
)

__all__ = [
    "COMBINE",
    "KERNELS",
    "PSD_HANDLING",
    "LapRows",
    "LaplacianDeformation",
    "clip_spectrum",
    "deformed_gram_direct",
    "gmm_gram",
    "gram",
    "knn_laplacian",
    "lap_gram",
    "lapsvm_C",
    "map_responsibilities",
    "mismatch_counts",
    "rbf_gram",
    "rwm_gram",
    "rwm_sq_distances",
    "smallest_eigenvalue",
]

COMBINE = ("distance", "squared")
"""Readings of eq 13 (see :func:`rwm_sq_distances`); "distance" is the literal one."""

PSD_HANDLING = ("none", "clip")
"""Handling of an indefinite training Gram matrix (see :func:`rwm_gram`)."""


# --------------------------------------------------------------------------- shared path


def _rows(owner: str, name: str, X, d: int | None = None) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or (d is not None and X.shape[1] != d):
        want = f"(n, {d})" if d is not None else "(n, d)"
        raise ValueError(f"{owner}: invalid {name} of shape {X.shape}; valid: a {want} array")
    if not np.isfinite(X).all():
        raise ValueError(f"{owner}: invalid {name} (not finite); valid: finite values")
    return X


def _split(owner: str, X, Z, categorical):
    """Validated rows and the categorical mask: (X, Z, mask or None, symmetric)."""
    X = _rows(owner, "X", X)
    symmetric = Z is None
    Z = X if symmetric else _rows(owner, "Z", Z, X.shape[1])
    if categorical is None:
        return X, Z, None, symmetric
    mask = np.asarray(categorical, dtype=bool)
    if mask.shape != (X.shape[1],):
        raise ValueError(f"{owner}: invalid categorical of shape {mask.shape}; valid: a boolean "
                         f"mask of shape ({X.shape[1]},)")
    return X, Z, (mask if mask.any() else None), symmetric


def _check_weights(owner: str, alpha, beta) -> None:
    check_real(owner, "alpha", alpha, 0.0)
    check_real(owner, "beta", beta, 0.0)
    if alpha + beta <= 0:
        raise ValueError(f"{owner}: invalid alpha={alpha!r}, beta={beta!r}; valid: alpha, beta "
                         ">= 0 with alpha + beta > 0")


def mismatch_counts(X: np.ndarray, Z: np.ndarray, categorical) -> np.ndarray:
    """Number of mismatching categorical attributes, ``Delta_01`` of Reitmaier et al. 2016, eqs
    15-16.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)
    categorical : array-like of bool, shape (d,)
        True for the categorical (integer-coded) columns; values are compared for equality.

    Returns
    -------
    counts : ndarray of shape (n, m), float
    """
    mask = np.asarray(categorical, dtype=bool)
    X = np.asarray(X)[:, mask]
    Z = np.asarray(Z)[:, mask]
    counts = np.zeros((X.shape[0], Z.shape[0]))
    scratch = np.empty_like(counts, dtype=bool)
    for c in range(X.shape[1]):                      # one pass per categorical column
        np.not_equal(X[:, c, None], Z[None, :, c], out=scratch)
        counts += scratch
    return counts


def _sq_euclidean(A: np.ndarray, B: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``||a - b||^2`` for all row pairs with ONE GEMM, clipped at 0.

    The row norms ride in two extra columns: ``[A, |A|^2, 1] @ [-2B, 1, |B|^2]^T``.
    """
    d = A.shape[1]
    Aa = np.empty((A.shape[0], d + 2))
    Ba = np.empty((B.shape[0], d + 2))
    Aa[:, :d] = A
    Aa[:, d] = np.einsum("ij,ij->i", A, A)
    Aa[:, d + 1] = 1.0
    np.multiply(B, -2.0, out=Ba[:, :d])
    Ba[:, d] = 1.0
    Ba[:, d + 1] = np.einsum("ij,ij->i", B, B)
    out = np.matmul(Aa, Ba.T, out=out)
    return np.maximum(out, 0.0, out=out)


def _finish(D2: np.ndarray, X, Z, mask, symmetric: bool, gamma, alpha, beta) -> np.ndarray:
    """``exp(-gamma (alpha D2 + beta Delta_01^2))``, in place on D2 (the one exit of every kernel).

    A square Gram matrix (``Z is None``) gets an exactly zero diagonal distance and exact
    symmetry, so ``k(x, x) = 1``.
    """
    if symmetric:
        D2 += D2.T
        D2 *= 0.5
        np.fill_diagonal(D2, 0.0)
    if alpha != 1:
        D2 *= alpha
    if mask is not None and beta != 0:
        counts = mismatch_counts(X, Z, mask)
        D2 += beta * counts ** 2
    D2 *= -gamma
    return np.exp(D2, out=D2)


def smallest_eigenvalue(K: np.ndarray) -> float:
    """Smallest eigenvalue of a symmetric Gram matrix (negative: the kernel is indefinite there)."""
    K = np.asarray(K, dtype=float)
    return float(np.linalg.eigvalsh(0.5 * (K + K.T))[0])


def clip_spectrum(K: np.ndarray) -> np.ndarray:
    """Nearest positive semi-definite matrix (Frobenius): negative eigenvalues set to 0.

    Parameters
    ----------
    K : ndarray of shape (n, n), symmetric

    Returns
    -------
    ndarray of shape (n, n), symmetric positive semi-definite
    """
    K = np.asarray(K, dtype=float)
    w, U = np.linalg.eigh(0.5 * (K + K.T))
    if w[0] >= 0:
        return 0.5 * (K + K.T)
    out = (U * np.clip(w, 0.0, None)) @ U.T
    return 0.5 * (out + out.T)


# --------------------------------------------------------------------------- RBF


def rbf_gram(X: np.ndarray, Z: np.ndarray | None = None, *, gamma: float,
             categorical=None, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """RBF Gram matrix ``exp(-gamma ||x - z||^2)``, the baseline (same path as the RWM kernel).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d), optional
        Default: ``X`` (a square, exactly symmetric Gram matrix with unit diagonal).
    gamma : float
        Kernel width, ``gamma >= 0``.
    categorical : array-like of bool, shape (d,), optional
        Categorical columns; with them the kernel is
        ``exp(-gamma (alpha ||x' - z'||^2 + beta Delta_01(x'', z'')^2))`` over the continuous
        part ``x'`` and the categorical part ``x''`` (Reitmaier et al. 2016, eq 14 with the
        Euclidean distance, as §5.1.1 extends every kernel).
    alpha, beta : float, default=1
        Weights of the continuous and categorical parts, ``>= 0`` with ``alpha + beta > 0``.

    Returns
    -------
    K : ndarray of shape (n, m)
    """
    owner = "rbf_gram"
    check_real(owner, "gamma", gamma, 0.0)
    _check_weights(owner, alpha, beta)
    X, Z, mask, symmetric = _split(owner, X, Z, categorical)
    cont = slice(None) if mask is None else ~mask
    D2 = _sq_euclidean(X[:, cont], Z[:, cont])
    return _finish(D2, X, Z, mask, symmetric, gamma, alpha, beta)


# --------------------------------------------------------------------------- RWM and GMM


def _check_mixture(owner: str, resp_X, resp_Z, precisions_cholesky, n: int, m: int, d: int):
    P = np.asarray(precisions_cholesky, dtype=float)
    J = P.shape[0] if P.ndim else 0
    shapes = {3: (J, d, d), 2: (J, d), 1: (J,)}
    if P.ndim not in shapes or P.shape != shapes[P.ndim] or J == 0 or not np.isfinite(P).all():
        raise ValueError(f"{owner}: invalid precisions_cholesky of shape {P.shape}; valid: "
                         f"finite (J, {d}, {d}) full, (J, {d}) diagonal or (J,) spherical "
                         "factors (sklearn's precisions_cholesky_)")
    out = []
    for name, R, rows in (("resp_X", resp_X, n), ("resp_Z", resp_Z, m)):
        R = np.asarray(R, dtype=float)
        if R.shape != (rows, J) or not np.isfinite(R).all() or (R < 0).any():
            raise ValueError(f"{owner}: invalid {name} of shape {R.shape}; valid: non-negative "
                             f"responsibilities of shape ({rows}, {J})")
        out.append(R)
    return P, out[0], out[1]


def _whiten(Xc: np.ndarray, P: np.ndarray, j: int) -> np.ndarray:
    """Rows mapped by component j's precision Cholesky factor: ``||(x - z) P_j||^2`` = eq 5^2."""
    if P.ndim == 3:
        return Xc @ P[j]
    return Xc * P[j]


def rwm_sq_distances(X: np.ndarray, Z: np.ndarray, resp_X: np.ndarray, resp_Z: np.ndarray,
                     precisions_cholesky: np.ndarray, *, combine: str = "distance") -> np.ndarray:
    """Squared RWM distance ``Delta_RWM(x, z)^2`` (Reitmaier et al. 2016, eqs 5 and 13) for all row
    pairs.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)
        Continuous columns only.
    resp_X : ndarray of shape (n, J)
    resp_Z : ndarray of shape (m, J)
        Responsibilities ``rho_j`` (eq 2) of the rows; each row should sum to 1.
    precisions_cholesky : ndarray of shape (J, d, d), (J, d) or (J,)
        sklearn's ``precisions_cholesky_``: ``Sigma_j^{-1} = P_j P_j^T`` ("full"), or
        ``1 / sqrt(variances)`` per feature ("diag") or per component ("spherical"); the shape
        selects the type ("tied": pass ``np.broadcast_to(P, (J, d, d))``). Covariances convert
        with sklearn's or ``alprbf.prbf.compute_precision_cholesky``.
    combine : {"distance", "squared"}, default="distance"
        "distance", the literal reading: eq 13 sums Mahalanobis *distances* (eq 5 has the
        square root) and eq 12 squares the sum,
        ``Delta^2 = (sum_j w_j(x, z) Delta_Sigma_j(x, z))^2``;
        "squared": a responsibility-weighted mean of squared Mahalanobis distances,
        ``Delta^2 = sum_j w_j(x, z) Delta_Sigma_j(x, z)^2``;
        with ``w_j(x, z) = (rho_j(x) + rho_j(z)) / 2`` in both. They agree when one component
        carries all the weight and both equal ``||x - z||^2`` when every ``Sigma_j = I``
        (responsibilities summing to 1); by Jensen "squared" >= "distance".

    Returns
    -------
    D2 : ndarray of shape (n, m), >= 0

    Notes
    -----
    One GEMM per component: the rows are centred on the mean of ``Z`` (distances are
    translation invariant; centring limits the round-off of the expanded form), whitened by
    ``P_j`` and the squared distances taken as ``|a|^2 + |b|^2 - 2 a b^T`` (clipped at 0) in one
    product. Components without responsibility on any row are skipped.
    """
    owner = "rwm_sq_distances"
    check_choice(owner, "combine", combine, COMBINE)
    X = _rows(owner, "X", X)
    Z = _rows(owner, "Z", Z, X.shape[1])
    n, m = X.shape[0], Z.shape[0]
    P, resp_X, resp_Z = _check_mixture(owner, resp_X, resp_Z, precisions_cholesky, n, m,
                                       X.shape[1])
    shift = Z.mean(axis=0)
    Xc, Zc = X - shift, Z - shift
    acc = np.zeros((n, m))
    D = np.empty((n, m))
    W = np.empty((n, m))
    for j in np.flatnonzero(resp_X.any(axis=0) | resp_Z.any(axis=0)):
        _sq_euclidean(_whiten(Xc, P, j), _whiten(Zc, P, j), out=D)
        if combine == "distance":
            np.sqrt(D, out=D)
        np.add(resp_X[:, j, None], resp_Z[None, :, j], out=W)
        W *= D
        acc += W
    acc *= 0.5
    if combine == "distance":
        np.square(acc, out=acc)
    return acc


def rwm_gram(X: np.ndarray, Z: np.ndarray | None = None, *, resp_X: np.ndarray,
             resp_Z: np.ndarray | None = None, precisions_cholesky: np.ndarray, gamma: float,
             categorical=None, alpha: float = 1.0, beta: float = 1.0,
             combine: str = "distance", psd: str = "none") -> np.ndarray:
    """Responsibility weighted Mahalanobis (RWM) Gram matrix, Reitmaier et al. 2016, eqs 12-16.

    ``k(x, z) = exp(-gamma (alpha Delta_RWM(x', z')^2 + beta Delta_01(x'', z'')^2))`` with the
    continuous part ``x'`` and the categorical part ``x''``; without categorical columns this is
    eq 12 (``alpha = 1``).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d), optional
        Default: ``X`` (square, exactly symmetric, unit diagonal).
    resp_X : ndarray of shape (n, J)
    resp_Z : ndarray of shape (m, J), optional
        Responsibilities of the rows under the density model (eq 2, computed on all columns,
        eq 7). ``resp_Z`` defaults to ``resp_X`` when ``Z`` is None.
    precisions_cholesky : ndarray of shape (J, d', d'), (J, d') or (J,)
        The Gaussian parts of the components over the d' continuous columns (see
        :func:`rwm_sq_distances`).
    gamma : float
        Kernel width, ``gamma >= 0`` (the paper: ``1 / (2 sigma^2)``).
    categorical : array-like of bool, shape (d,), optional
        Categorical (integer-coded) columns, compared for equality (eq 16).
    alpha, beta : float, default=1
        Weights of eq 14, ``>= 0`` with ``alpha + beta > 0`` (the paper searches [0, 1]).
    combine : {"distance", "squared"}, default="distance"
        What eq 13 sums; see :func:`rwm_sq_distances`. "distance" is the literal reading.
    psd : {"none", "clip"}, default="none"
        The RWM kernel need not be positive semi-definite (the weights depend on both rows).
        "none": use the matrix as is (libsvm's SMO copes with an indefinite matrix; the
        paper says nothing else); "clip": set the negative eigenvalues of the square training
        Gram matrix to 0 (:func:`clip_spectrum`); only for ``Z=None``, cross Gram matrices
        (prediction) are then used as is. :func:`smallest_eigenvalue` measures the defect.

    Returns
    -------
    K : ndarray of shape (n, m), entries in [0, 1] (before any clipping)
    """
    return _mixture_gram("rwm_gram", X, Z, resp_X, resp_Z, precisions_cholesky, gamma,
                         categorical, alpha, beta, combine, psd, hard=False)


def _mixture_gram(owner, X, Z, resp_X, resp_Z, precisions_cholesky, gamma, categorical, alpha,
                  beta, combine, psd, hard: bool) -> np.ndarray:
    """The shared body of :func:`rwm_gram` and :func:`gmm_gram` (``hard``: MAP weights)."""
    check_real(owner, "gamma", gamma, 0.0)
    _check_weights(owner, alpha, beta)
    check_choice(owner, "combine", combine, COMBINE)
    check_choice(owner, "psd", psd, PSD_HANDLING)
    X, Z, mask, symmetric = _split(owner, X, Z, categorical)
    if psd == "clip" and not symmetric:
        raise ValueError(f"{owner}: invalid psd='clip' with Z given; valid: psd='clip' only for "
                         "the square training Gram matrix (Z=None), else psd='none'")
    if resp_Z is None:
        if not symmetric:
            raise ValueError(f"{owner}: invalid resp_Z=None with Z given; valid: the "
                             "responsibilities of the rows of Z")
        resp_Z = resp_X
    cont = slice(None) if mask is None else ~mask
    X_cont, Z_cont = X[:, cont], Z[:, cont]
    P, resp_X, resp_Z = _check_mixture(owner, resp_X, resp_Z, precisions_cholesky,
                                       X.shape[0], Z.shape[0], X_cont.shape[1])
    if hard:
        resp_X, resp_Z = map_responsibilities(resp_X), map_responsibilities(resp_Z)
    D2 = rwm_sq_distances(X_cont, Z_cont, resp_X, resp_Z, P, combine=combine)
    K = _finish(D2, X, Z, mask, symmetric, gamma, alpha, beta)
    return clip_spectrum(K) if psd == "clip" else K


def map_responsibilities(resp: np.ndarray) -> np.ndarray:
    """Hard responsibilities: 1 for each row's most responsible component (the first on ties)."""
    resp = np.asarray(resp, dtype=float)
    hard = np.zeros_like(resp)
    if resp.size:
        hard[np.arange(resp.shape[0]), resp.argmax(axis=1)] = 1.0
    return hard


def gmm_gram(X: np.ndarray, Z: np.ndarray | None = None, *, resp_X: np.ndarray,
             resp_Z: np.ndarray | None = None, precisions_cholesky: np.ndarray, gamma: float,
             categorical=None, alpha: float = 1.0, beta: float = 1.0,
             combine: str = "distance", psd: str = "none") -> np.ndarray:
    """"GMM kernel" Gram matrix: **project-defined**, not the paper's.

    Reitmaier et al. 2016 reports a "GMM kernel" in Tables 2-4 but neither it nor any source at hand
    defines it. This project defines it as the RWM kernel with *hard* responsibilities: each
    row gives its whole weight to its most responsible component (MAP assignment, the first on
    ties). Two rows of the same component are compared by that component's Mahalanobis
    distance alone; rows of components a and b by ``(Delta_a + Delta_b) / 2`` (squared
    afterwards, ``combine="distance"``) or ``(Delta_a^2 + Delta_b^2) / 2`` (``"squared"``).
    Numbers obtained with it do not reproduce the paper's GMM column.

    Parameters
    ----------
    X, Z, resp_X, resp_Z, precisions_cholesky, gamma, categorical, alpha, beta, combine, psd
        As :func:`rwm_gram`; the soft responsibilities are given, the MAP assignment is taken
        here.

    Returns
    -------
    K : ndarray of shape (n, m)
    """
    return _mixture_gram("gmm_gram", X, Z, resp_X, resp_Z, precisions_cholesky, gamma,
                         categorical, alpha, beta, combine, psd, hard=True)


# --------------------------------------------------------------------------- LAP


def lapsvm_C(gamma_A: float, n_labeled: int) -> float:
    """SVC penalty that makes an SVM on the LAP kernel the LapSVM: ``C = 1 / (2 gamma_A l)``.

    LapSVM (Belkin et al. 2006) minimises
    ``(1/l) sum_i max(0, 1 - y_i f(x_i)) + gamma_A ||f||_K^2 + gamma_I / N^2 f^T L f``; with the
    deformed kernel its last two terms are ``gamma_A ||f||^2`` in the deformed space, and
    dividing by ``2 gamma_A`` gives the SVC objective ``||f||^2 / 2 + C sum_i hinge``.
    """
    check_positive("lapsvm_C", "gamma_A", gamma_A)
    check_int("lapsvm_C", "n_labeled", n_labeled, 1)
    return 1.0 / (2.0 * gamma_A * n_labeled)


@dataclass
class LapRows:
    """Rows prepared once for :meth:`LaplacianDeformation.gram` (reuse them across a grid).

    Attributes
    ----------
    X : ndarray of shape (n, d)
        The rows.
    index : ndarray of shape (n,) or None
        Their positions in the pool, when they are pool rows.
    K_pool : ndarray of shape (N, n)
        Base kernel between the pool and the rows.
    G : ndarray of shape (r, n) or None
        ``Q^T B^T K_pool``: the rows in the basis where ``I + c A`` is banded; computed on
        first use (:meth:`LaplacianDeformation.gram` projects only the rows it needs).
    W : dict
        Kept rows only (:meth:`LaplacianDeformation.kept_rows`): ratio ``c`` ->
        ``c B Q (I + c T)^{-1} G`` (N, n), the rows mapped back to the pool, computed on first
        use with that ratio.
    kept : {None, "rows", "columns"}
        None: plain rows; "rows": they keep ``W``; "columns": also assembled from columns
        the deformation keeps between calls.
    """

    X: np.ndarray
    index: np.ndarray | None
    K_pool: np.ndarray
    G: np.ndarray | None = None
    W: dict = field(default_factory=dict)
    kept: str | None = None


class LaplacianDeformation:
    """The LAP kernel: LapSVM's deformed kernel over a pool, for any ``(gamma_I, gamma_A)``.

    ``k~(x, z) = k(x, z) - k_x^T (I + M K)^{-1} M k_z`` (Sindhwani, Niyogi & Belkin 2005), where
    ``K`` is the base Gram matrix of the N pool rows, ``k_x = K(pool, x)`` and
    ``M = gamma_I / (gamma_A N^2) L^p`` with ``L`` the Laplacian of the pool's symmetric kNN graph
    (:func:`knn_laplacian`). An SVC on ``k~`` with ``C = 1 / (2 gamma_A l)``
    (:func:`lapsvm_C`) is the LapSVM of Belkin, Niyogi & Sindhwani (2006) with the intrinsic
    term ``gamma_I / N^2 f^T L^p f`` (their 1/(u+l)^2 scaling, N = u + l the whole pool, labeled
    rows included, as Reitmaier et al. 2016, §5.1.1 builds the graph on the whole training set).

    Parameters
    ----------
    X_pool : ndarray of shape (N, d)
        The pool (labeled and unlabeled rows).
    base_kernel : callable
        ``base_kernel(X, Z) -> (n, m)`` Gram matrix, symmetric on the pool, e.g.
        ``functools.partial(rbf_gram, gamma=0.1)`` (LapSVM's usual base; Reitmaier et al. 2016
        searches its gamma over ``10^{-3..2}``: build one deformation per gamma, sharing
        ``laplacian``).
    laplacian : sparse array of shape (N, N), optional
        A precomputed graph Laplacian (share it across base kernels); default
        ``knn_laplacian(X_pool, n_neighbors, weights, heat_sigma)``.
    n_neighbors : int, default=7
    weights : {"binary", "heat"}, default="binary"
    heat_sigma : float, optional
        Graph parameters, see :func:`knn_laplacian` (Reitmaier et al. 2016: k = 7).
    degree : int, default=1
        p, the power of the Laplacian (Reitmaier et al. 2016: p = 1).
    bandwidth : int, default=64
        Band width of the reduction (a speed setting; results do not depend on it).

    Notes
    -----
    Derivation of the shortcut. With ``c = gamma_I / (gamma_A N^2)`` and an exact factor
    ``B B^T = L^p`` (:func:`.laplacian_factor`: a grounded Cholesky factor for odd p, no
    eigendecomposition), the push-through identity
    ``(I + c B B^T K)^{-1} B = B (I + c B^T K B)^{-1}`` gives
    ``(I + M K)^{-1} M = c B (I + c A)^{-1} B^T`` with ``A = B^T K B`` symmetric (positive
    semi-definite when ``K`` is), so
    ``k~(x, z) = k(x, z) - c (B^T k_x)^T (I + c A)^{-1} (B^T k_z)``.
    ``A`` does not depend on ``(gamma_I, gamma_A)``: it is reduced once, ``A = Q T Q^T`` with
    ``T`` banded (:func:`.band_reduce`), and for every grid point
    ``(I + c A)^{-1} = Q (I + c T)^{-1} Q^T`` costs one banded Cholesky, ``O(N b^2)``; rows are
    projected once (``G = Q^T B^T k_x``, kept in their :class:`LapRows`). Between many rows
    and few (the pool against the labeled rows) only the few are projected and mapped back
    to the pool (see :meth:`gram`). :meth:`gram_direct` evaluates the
    direct formula (one LU solve) for checks.

    Cost: the reduction is paid once per base kernel, each grid point is one banded Cholesky;
    measured against the direct formula in ``docs/history/notes.md``, 'LAP deformation cost'.

    Choices where the papers are silent: binary kNN weights with the "or" symmetrisation
    (:func:`knn_laplacian`); Belkin et al.'s ``1 / N^2`` scaling of the intrinsic term, N = the
    whole pool; the base kernel need not be positive semi-definite (when ``I + c T`` is not
    definite the banded solve switches from Cholesky to LU). The kernel depends on
    ``(gamma_I, gamma_A)`` only through :meth:`ratio`, so a grid search may evaluate each
    distinct ratio once; ``gamma_A`` still sets ``C`` (:func:`lapsvm_C`).

    Examples
    --------
    >>> lap = LaplacianDeformation(X_pool, functools.partial(rbf_gram, gamma=0.1))
    >>> train = lap.rows(index=labeled)                      # once per labeled set
    >>> K_fit = lap.gram(train, gamma_I=1.0, gamma_A=1e-2)   # (l, l), for SVC.fit
    >>> K_new = lap.gram(lap.rows(X=X_new), train, gamma_I=1.0, gamma_A=1e-2)  # (n, l)
    """

    def __init__(self, X_pool: np.ndarray, base_kernel: Callable[..., np.ndarray], *,
                 laplacian=None, n_neighbors: int = 7, weights: str = "binary",
                 heat_sigma: float | None = None, degree: int = 1, bandwidth: int = 64) -> None:
        owner = "LaplacianDeformation"
        self.X_pool = _rows(owner, "X_pool", X_pool)
        n = self.X_pool.shape[0]
        check_int(owner, "degree", degree, 1)
        check_int(owner, "bandwidth", bandwidth, 1)
        if not callable(base_kernel):
            raise ValueError(f"{owner}: invalid base_kernel={base_kernel!r}; valid: a callable "
                             "(X, Z) -> Gram matrix, e.g. functools.partial(rbf_gram, gamma=0.1)")
        if laplacian is None:
            laplacian = knn_laplacian(self.X_pool, n_neighbors, weights, heat_sigma)
        elif laplacian.shape != (n, n):
            raise ValueError(f"{owner}: invalid laplacian of shape {laplacian.shape}; valid: "
                             f"({n}, {n})")
        self.base_kernel = base_kernel
        self.laplacian = sp.csr_array(laplacian, dtype=float)
        self.degree = degree
        self.K = np.asarray(base_kernel(self.X_pool, self.X_pool), dtype=float)
        self._factor = laplacian_factor(self.laplacian, degree)
        A = self._factor.congruence(self.K)
        self._band, self._reflectors = band_reduce(A, bandwidth, overwrite_a=True)
        self._kept_G = _ColumnStore(order="F")        # pool row -> its column of G
        self._kept_W = _ColumnStore(ratio=np.nan)     # pool row -> its column of W at c = ratio
        self._kept_D = _ColumnStore(ratio=np.nan)     # pool row -> k~(pool, row) at c = ratio

    @property
    def n_pool(self) -> int:
        """N, the number of pool rows."""
        return self.X_pool.shape[0]

    def rows(self, X: np.ndarray | None = None, index=None) -> LapRows:
        """Rows for :meth:`gram`: pool rows by ``index`` (no new kernel values) or any rows
        ``X``, with their base kernel against the pool (projected on first use, then kept).

        Parameters
        ----------
        X : ndarray of shape (n, d), optional
        index : array-like of int, shape (n,), optional
            Positions in the pool; exactly one of ``X`` and ``index``.

        Returns
        -------
        LapRows
        """
        owner = "LaplacianDeformation.rows"
        if (X is None) == (index is None):
            raise ValueError(f"{owner}: invalid arguments; valid: exactly one of X and index")
        if index is not None:
            index = np.asarray(index, dtype=int).ravel()
            if index.size and (index.min() < 0 or index.max() >= self.n_pool):
                raise ValueError(f"{owner}: invalid index; valid: integers in "
                                 f"[0, {self.n_pool - 1}]")
            X, K_pool = self.X_pool[index], self.K[:, index]
        else:
            X = _rows(owner, "X", X, self.X_pool.shape[1])
            K_pool = np.asarray(self.base_kernel(self.X_pool, X), dtype=float)
        return LapRows(X=X, index=index, K_pool=K_pool)

    def kept_rows(self, index, columns: bool = False) -> LapRows:
        """Pool rows ``index`` as :meth:`rows` gives them, to be used many times as the
        second argument of :meth:`gram` (an active-learning loop's labeled rows).

        The rows keep their back-projection ``W`` for every ratio ``c`` they meet (one per
        ratio, not one per grid point or call): exact, the same arithmetic.

        With ``columns`` their projection ``G`` and back-projection ``W`` are assembled from
        columns this deformation keeps between calls: a column depends on its own row only,
        so each row's columns are computed once, in one batch with the other rows first
        asked for together, and copied afterwards (``W`` for one ratio at a time; another
        ratio starts that store afresh).  Equal to :meth:`rows` up to round-off only: the
        BLAS does not compute a column of a product independently of the other columns of
        its batch (OpenBLAS ``dtrmm`` at any width, ``dgemm`` below about 8 columns), so a
        column computed in a batch of one differs from the same column computed beside
        others in the last bits (``tests/test_kernels_lap_cache.py``: within 1e-12).
        """
        rows = self.rows(index=index)
        rows.kept = "columns" if columns else "rows"
        return rows

    def kept_columns(self) -> dict:
        """What :meth:`kept_rows` with ``columns`` keeps that the same deformation, rebuilt,
        needs to give the same numbers (:meth:`restore_kept_columns`): the back-projected
        and deformed Gram columns with their ratio; the projected columns are needed only
        to compute those of rows not kept yet."""
        return {"W": self._kept_W, "D": self._kept_D}

    def restore_kept_columns(self, kept: dict) -> None:
        """Take the columns :meth:`kept_columns` of an identical deformation returned."""
        self._kept_W, self._kept_D = kept["W"], kept["D"]

    def _kept_columns(self, store: _ColumnStore, A: LapRows,
                      compute: Callable[[LapRows], np.ndarray]) -> np.ndarray:
        """``compute(A)`` for the kept pool rows ``A``, column by column from ``store``; the
        missing columns are computed in one batch (``compute`` on fresh kept rows) and kept.
        The result has the memory layout ``compute`` gives (so later products see the same
        operands)."""
        index = A.index.tolist()
        missing = [i for i in dict.fromkeys(index) if i not in store.columns]
        if missing:
            new = compute(self.kept_rows(missing, columns=True))
            if new.flags.f_contiguous != new.flags.c_contiguous:   # (one column: both)
                store.order = "F" if new.flags.f_contiguous else "C"
            store.length = new.shape[0]
            for j, i in enumerate(missing):
                store.columns[i] = new[:, j]
        out = np.empty((store.length, len(index)), order=store.order)
        for j, i in enumerate(index):
            out[:, j] = store.columns[i]
        return out

    def _as_rows(self, A) -> LapRows:
        return A if isinstance(A, LapRows) else self.rows(X=A)

    def project(self, A: LapRows) -> LapRows:
        """The rows with their projection ``G = Q^T B^T K_pool`` (computed once, O(N^2 n));
        :meth:`gram` calls it when it needs it."""
        if A.G is None and A.kept == "columns":
            A.G = self._kept_columns(self._kept_G, A, self._projection)
        elif A.G is None:
            A.G = self._projection(A)
        return A

    def _projection(self, A: LapRows) -> np.ndarray:
        return apply_qt(self._reflectors, self._factor.t_times(A.K_pool))

    def _projected(self, A: LapRows) -> np.ndarray:
        return self.project(A).G

    def _base(self, A: LapRows, B: LapRows) -> np.ndarray:
        if A.index is not None and B.index is not None:
            return self.K[np.ix_(A.index, B.index)]
        return np.asarray(self.base_kernel(A.X, B.X), dtype=float)

    def ratio(self, gamma_I: float, gamma_A: float) -> float:
        """``c = gamma_I / (gamma_A N^2)``, the only way the two parameters enter the kernel."""
        owner = "LaplacianDeformation"
        check_real(owner, "gamma_I", gamma_I, 0.0)
        check_positive(owner, "gamma_A", gamma_A)
        return gamma_I / (gamma_A * self.n_pool ** 2)

    def _band_factor(self, c: float):
        """``I + c T`` factored: ("chol", F) with ``F F^T = I + c T`` in lower band storage, or
        ("lu", ((b, b), ab)) when it is not definite (an indefinite base kernel).  The last
        ratio's factor is kept: a grid point asks for it once per set of rows it scores."""
        kept = self.__dict__.get("_last_factor")
        if kept is not None and kept[0] == c:
            return kept[1]
        band = c * self._band
        band[0] += 1.0
        try:
            factor = "chol", cholesky_banded(band, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            factor = "lu", _symmetric_band(band)
        self._last_factor = (c, factor)
        return factor

    def gram(self, A, B=None, *, gamma_I: float, gamma_A: float) -> np.ndarray:
        """Deformed Gram matrix ``k~(A, B)`` through the band shortcut.

        Parameters
        ----------
        A : LapRows or ndarray of shape (n, d)
        B : LapRows or ndarray of shape (m, d), optional
            Default: ``A`` (square, exactly symmetric). Pass :class:`LapRows` from
            :meth:`rows` to reuse the projection across a grid.
        gamma_I, gamma_A : float
            LapSVM's intrinsic (``>= 0``) and ambient (``> 0``) regularisation weights.

        Returns
        -------
        K : ndarray of shape (n, m)

        Notes
        -----
        A square matrix, or two sets of rows both projected already (a grid over the same
        rows), costs ``O(r b (n + m) + r n m)``: ``G_A^T (I + c T)^{-1} G_B``. Otherwise only
        the smaller set is projected and mapped back to the pool,
        ``W = c B Q (I + c T)^{-1} G`` (N, m), and ``k~ = K_AB - K_pool_A^T W``: scoring n pool
        rows against m labeled rows costs ``O(N^2 m + N n m)``, not ``O(N^2 n)``.
        """
        c = self.ratio(gamma_I, gamma_A)
        A = self._as_rows(A)
        symmetric = B is None or B is A
        B = A if symmetric else self._as_rows(B)
        K = self._base(A, B)
        if c == 0:
            return K
        kind, factor = self._band_factor(c)
        if symmetric:
            G = self._projected(A)
            if kind == "chol":
                H = _lower_banded_solve(factor, G)
                S = blas.dsyrk(c, H, trans=1, lower=1)        # c H^T H, lower triangle
                K = K - (np.tril(S) + np.tril(S, -1).T)
            else:
                K = K - c * (G.T @ solve_banded(*factor, G, check_finite=False))
            return 0.5 * (K + K.T)
        if A.G is not None and B.G is not None:
            if kind == "chol":
                H_A, H_B = _lower_banded_solve(factor, A.G), _lower_banded_solve(factor, B.G)
                return K - c * (H_A.T @ H_B)
            return K - c * (A.G.T @ _band_solve(kind, factor, B.G))
        if B.K_pool.shape[1] <= A.K_pool.shape[1]:
            return K - A.K_pool.T @ self._back_projected(B, c, kind, factor)
        return K - (B.K_pool.T @ self._back_projected(A, c, kind, factor)).T

    def _back_projected(self, A: LapRows, c: float, kind: str, factor) -> np.ndarray:
        """``W = c B Q (I + c T)^{-1} G_A`` (N, n): ``(I + M K)^{-1} M K_pool_A``; kept rows
        (:meth:`kept_rows`) keep it for every ratio ``c`` they meet, and with kept columns
        the deformation keeps its columns for the last ratio."""
        if A.kept is None:
            return self._back_projection(A, c, kind, factor)
        if c not in A.W:
            if A.kept == "rows":
                A.W[c] = self._back_projection(A, c, kind, factor)
            else:
                if self._kept_W.ratio != c:
                    self._kept_W = _ColumnStore(ratio=c)
                A.W[c] = self._kept_columns(
                    self._kept_W, A, lambda R: self._back_projection(R, c, kind, factor))
        return A.W[c]

    def pool_gram(self, B: LapRows, *, gamma_I: float, gamma_A: float) -> np.ndarray:
        """``k~(pool, B)`` (N, m) for rows with kept columns (``kept_rows(index,
        columns=True)``): every pool row against them, assembled from columns this
        deformation keeps for the last ratio, so a row's column costs ``O(N^2)`` once.

        ``K_pool_B - K W_B`` with the pool's base Gram matrix ``K`` (the same matrix as
        :meth:`gram` between pool rows by index and ``B``, up to round-off)."""
        if B.kept != "columns":
            raise ValueError("LaplacianDeformation.pool_gram: invalid rows; valid: "
                             "kept_rows(index, columns=True)")
        c = self.ratio(gamma_I, gamma_A)
        if c == 0:
            return self.K[:, B.index]
        if self._kept_D.ratio != c:
            self._kept_D = _ColumnStore(ratio=c)
        return self._kept_columns(
            self._kept_D, B,
            lambda R: R.K_pool - self.K @ self._back_projected(R, c, *self._band_factor(c)))

    def _back_projection(self, A: LapRows, c: float, kind: str, factor) -> np.ndarray:
        Y = _band_solve(kind, factor, self._projected(A))
        Y *= c
        return self._factor.times(apply_q(self._reflectors, Y))

    def gram_direct(self, A, B=None, *, gamma_I: float, gamma_A: float) -> np.ndarray:
        """The same matrix from the definition: one dense LU solve of ``(I + M K) U = M k_B``.

        Parameters and returns as :meth:`gram` (A, B as rows or :class:`LapRows`).
        """
        c = self.ratio(gamma_I, gamma_A)
        A = self._as_rows(A)
        B = A if B is None else self._as_rows(B)
        return deformed_gram_direct(self.K, self.laplacian, A.K_pool, B.K_pool,
                                    self._base(A, B), c, self.degree)


@dataclass
class _ColumnStore:
    """Columns kept by :meth:`LaplacianDeformation.kept_rows` (pool row -> column), their
    length and the memory layout of the batches they came from, for one ``ratio`` (W only)."""

    ratio: float = np.nan
    columns: dict[int, np.ndarray] = field(default_factory=dict)
    length: int = 0
    order: str = "C"


def _band_solve(kind: str, factor, G: np.ndarray) -> np.ndarray:
    """``(I + c T)^{-1} G`` from :meth:`LaplacianDeformation._band_factor`."""
    if kind == "chol":
        return cho_solve_banded((factor, True), G, check_finite=False)
    return solve_banded(*factor, G, check_finite=False)


def _lower_banded_solve(factor: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``F^{-1} G`` for a lower triangular band matrix F in LAPACK lower band storage."""
    H, info = lapack.dtbtrs(factor, G, uplo="L")
    if info != 0:
        raise np.linalg.LinAlgError(f"dtbtrs failed (info={info})")
    return H


def _symmetric_band(lower: np.ndarray) -> tuple[tuple[int, int], np.ndarray]:
    """``((b, b), ab)`` for ``scipy.linalg.solve_banded`` from a symmetric lower band storage."""
    r = lower.shape[1]
    b = min(lower.shape[0] - 1, max(r - 1, 0))    # a band wider than the matrix holds nothing
    lower = lower[:b + 1]
    ab = np.zeros((2 * b + 1, r))
    ab[b:] = lower
    for o in range(1, b + 1):                     # the upper diagonals mirror the lower ones
        ab[b - o, o:] = lower[o, :r - o]
    return (b, b), ab


def deformed_gram_direct(K: np.ndarray, laplacian, K_pool_A: np.ndarray,
                         K_pool_B: np.ndarray, K_AB: np.ndarray, c: float,
                         degree: int = 1) -> np.ndarray:
    """Deformed Gram matrix from its definition, ``K_AB - K_pool_A^T (I + M K)^{-1} M K_pool_B``.

    One dense LU solve with ``M = c L^p``; the reference for :class:`LaplacianDeformation`.

    Parameters
    ----------
    K : ndarray of shape (N, N)
        Base Gram matrix of the pool.
    laplacian : sparse array of shape (N, N)
    K_pool_A : ndarray of shape (N, n)
    K_pool_B : ndarray of shape (N, m)
        Base kernel between the pool and the rows of A and B.
    K_AB : ndarray of shape (n, m)
        Base kernel between the rows.
    c : float
        ``gamma_I / (gamma_A N^2)``.
    degree : int, default=1

    Returns
    -------
    ndarray of shape (n, m)
    """
    if c == 0:
        return np.array(K_AB, dtype=float)
    Lp = sparse_power(sp.csr_array(laplacian, dtype=float), degree)
    system = c * (Lp @ K)
    system[np.diag_indices_from(system)] += 1.0
    U = solve(system, c * (Lp @ K_pool_B), overwrite_a=True, check_finite=False)
    return K_AB - K_pool_A.T @ U


def lap_gram(X, Z=None, *, deformation: LaplacianDeformation, gamma_I: float,
             gamma_A: float) -> np.ndarray:
    """LAP Gram matrix through a prepared :class:`LaplacianDeformation` (registry form).

    Parameters
    ----------
    X : LapRows or ndarray of shape (n, d)
    Z : LapRows or ndarray of shape (m, d), optional
    deformation : LaplacianDeformation
        Built once per pool and base kernel.
    gamma_I, gamma_A : float

    Returns
    -------
    K : ndarray of shape (n, m)
    """
    if not isinstance(deformation, LaplacianDeformation):
        raise ValueError(f"lap_gram: invalid deformation={type(deformation).__name__}; valid: a "
                         "LaplacianDeformation built on the pool")
    return deformation.gram(X, Z, gamma_I=gamma_I, gamma_A=gamma_A)


# --------------------------------------------------------------------------- registry


KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "rbf": rbf_gram,
    "rwm": rwm_gram,
    "gmm": gmm_gram,
    "lap": lap_gram,
}
"""Kernel name -> Gram function ``f(X, Z=None, **params)``."""


def gram(kind: str, X, Z=None, **params) -> np.ndarray:
    """Gram matrix of the kernel named ``kind`` (a key of :data:`KERNELS`).

    Parameters
    ----------
    kind : {"rbf", "rwm", "gmm", "lap"}
    X, Z : rows (see the kernel's function)
    **params
        The kernel's keyword parameters (e.g. ``gamma``; ``resp_X``, ``precisions_cholesky``
        for "rwm"/"gmm"; ``deformation``, ``gamma_I``, ``gamma_A`` for "lap").

    Returns
    -------
    K : ndarray of shape (n, m)
    """
    check_choice("gram", "kind", kind, KERNELS)
    return KERNELS[kind](X, Z, **params)

