"""Graph and linear algebra behind the LAP (Laplacian SVM) kernel of :mod:`.gram`.

This module owns three pieces, each a pure function:

* :func:`knn_laplacian`: the unnormalised Laplacian ``L = D - W`` of the symmetric
  k-nearest-neighbour graph of the pool;
* :func:`laplacian_factor`: an exact factor ``B = S C`` with ``B B^T = L^p`` (``S`` sparse,
  ``C`` dense lower triangular or absent), built without any eigendecomposition;
* :func:`band_reduce` / :func:`apply_qt`: an orthogonal reduction ``A = Q T Q^T`` of a
  symmetric matrix to a band matrix ``T`` (blocked Householder, BLAS-3 only), so that
  ``(I + c A)^{-1}`` costs one banded Cholesky for every ``c``.

Why a band reduction and not an eigendecomposition: the LAP kernel needs ``(I + c A)^{-1}``
for every ratio ``c`` of a parameter grid. An eigendecomposition gives it as a diagonal, but
LAPACK's symmetric eigensolvers spend half of their flops in a memory-bound (BLAS-2)
tridiagonal reduction: at N = 4 000 (``benchmarks/bench_kernels.py``, one BLAS thread, CPU
time) ``numpy.linalg.eigh`` alone cost about 6 times one direct evaluation of the deformed
kernel (an LU solve), the whole band decomposition about 3 times. Stopping at a band of
width ``b`` (64) keeps every step a matrix-matrix product (4/3 N^3 flops) and a banded
Cholesky of ``I + c T`` costs only ``O(N b^2)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas, cholesky, lapack
from scipy.sparse.csgraph import connected_components
from sklearn.neighbors import NearestNeighbors

from alprbf.validation import check_choice, check_int, check_real

GRAPH_WEIGHTS = ("binary", "heat")
"""Edge weights of the k-nearest-neighbour graph (see :func:`knn_laplacian`)."""


def knn_laplacian(X: np.ndarray, n_neighbors: int = 7, weights: str = "binary",
                  heat_sigma: float | None = None) -> sp.csr_array:
    """Unnormalised Laplacian of the symmetric k-nearest-neighbour graph of the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (N, d)
        The pool (labeled and unlabeled rows).
    n_neighbors : int, default=7
        k, the number of Euclidean nearest neighbours of each row (the row itself excluded);
        ``1 <= k <= N - 1``. Seed 003 fixes k = 7.
    weights : {"binary", "heat"}, default="binary"
        "binary": every edge weighs 1. "heat": ``exp(-||x_i - x_j||^2 / (2 sigma^2))``.
    heat_sigma : float, optional
        sigma of the heat weights; default: the mean length of the graph's edges (1 if every
        edge has length 0, e.g. a pool of identical rows).

    Returns
    -------
    L : scipy.sparse.csr_array of shape (N, N)
        ``L = D - W`` with ``W`` symmetric (an edge joins i and j when either is among the
        other's k nearest neighbours, the "or" rule) and ``D = diag(W 1)``.

    Notes
    -----
    The paper (seed 003, §5.1.1) fixes k = 7 and the degree p = 1 and leaves the weights and the
    symmetrisation open; binary weights with the "or" rule are this module's default. Ties
    among equidistant neighbours (duplicate rows) are broken by sklearn's neighbour search.
    """
    owner = "knn_laplacian"
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    check_choice(owner, "weights", weights, GRAPH_WEIGHTS)
    check_int(owner, "n_neighbors", n_neighbors, 1)
    if n_neighbors > n - 1:
        raise ValueError(f"{owner}: invalid n_neighbors={n_neighbors}; valid: an integer in "
                         f"[1, {n - 1}] (the pool size minus 1)")
    adjacency = sp.csr_array(
        NearestNeighbors(n_neighbors=n_neighbors).fit(X).kneighbors_graph(mode="connectivity"))
    W = adjacency.maximum(adjacency.T).tocoo()       # symmetric "or" rule
    if weights == "heat":
        length = np.linalg.norm(X[W.row] - X[W.col], axis=1)
        if heat_sigma is None:
            heat_sigma = float(length.mean()) if length.mean() > 0 else 1.0
        check_real(owner, "heat_sigma", heat_sigma, 0.0)
        if heat_sigma == 0:
            raise ValueError(f"{owner}: invalid heat_sigma=0; valid: a real number > 0")
        W.data = np.exp(-(length ** 2) / (2.0 * heat_sigma ** 2))
    W = W.tocsr()
    degree = np.asarray(W.sum(axis=1)).ravel()
    return sp.csr_array(sp.diags_array(degree) - W)


def laplacian_factor(L: sp.csr_array, degree: int = 1) -> tuple[sp.csr_array, np.ndarray | None]:
    """Exact factor ``B = S C`` of ``L^p`` (``B B^T = L^p``), without eigendecomposition.

    Parameters
    ----------
    L : sparse array of shape (N, N)
        A graph Laplacian (symmetric, rows summing to 0).
    degree : int, default=1
        p >= 1.

    Returns
    -------
    S : scipy.sparse.csr_array of shape (N, r)
    C : ndarray of shape (r, r), lower triangular, or None (``C = I``)

    Notes
    -----
    Even p: ``B = L^{p/2}`` (sparse, ``C = None``, r = N). Odd p: ``L`` is "grounded": in every
    connected component one node g (its last) is removed, and with
    ``(T x)_i = x_i - x_{g(i)}`` over the remaining r = N - (number of components) nodes,
    ``L = T^T L_r T`` where ``L_r`` (``L`` without the grounded rows and columns) is positive
    definite; with its Cholesky factor ``L_r = C C^T``, ``B = L^{(p-1)/2} T^T C``.
    """
    check_int("laplacian_factor", "degree", degree, 1)
    L = sp.csr_array(L, dtype=float)
    n = L.shape[0]
    half = sparse_power(L, degree // 2)
    if degree % 2 == 0:
        return half, None
    n_comp, labels = connected_components(L, directed=False)
    ground_of = np.full(n_comp, -1)
    np.maximum.at(ground_of, labels, np.arange(n))   # the last node of every component
    ground = np.zeros(n, dtype=bool)
    ground[ground_of] = True
    keep = np.flatnonzero(~ground)
    if keep.size == 0:
        raise ValueError("laplacian_factor: the graph has no edge (every node is isolated)")
    r = keep.size
    T = sp.csr_array((np.r_[np.ones(r), -np.ones(r)],
                      (np.r_[np.arange(r), np.arange(r)], np.r_[keep, ground_of[labels[keep]]])),
                     shape=(r, n))
    L_r = L[keep][:, keep].toarray()
    C = cholesky(L_r, lower=True, overwrite_a=True, check_finite=False)
    S = T.T.tocsr() if half is None else sp.csr_array(half @ T.T)
    return S, C


def sparse_power(L: sp.csr_array, power: int) -> sp.csr_array | None:
    """``L^power`` (power >= 0) as a sparse array; ``None`` for power 0 (the identity)."""
    out = None
    for _ in range(power):
        out = L if out is None else sp.csr_array(out @ L)
    return out


def factor_t_times(S: sp.csr_array, C: np.ndarray | None, Y: np.ndarray) -> np.ndarray:
    """``B^T Y`` with ``B = S C`` (see :func:`laplacian_factor`); Y of shape (N, n) -> (r, n)."""
    SY = np.asarray(S.T @ Y, dtype=float, order="F")
    if C is None:
        return SY
    return blas.dtrmm(1.0, C, SY, side=0, lower=1, trans_a=1, overwrite_b=1)


def factor_congruence(S: sp.csr_array, C: np.ndarray | None, K: np.ndarray) -> np.ndarray:
    """``A = B^T K B`` (r, r) for ``B = S C`` and symmetric ``K`` (N, N); lower triangle valid.

    ``S^T K S`` goes through the sparse side; ``C^T (.) C`` is LAPACK ``dsygst`` (N^3 flops, half
    of two triangular products).
    """
    SK = np.asarray(S.T @ K, dtype=float)
    A = np.asarray(S.T @ SK.T, dtype=float, order="F")          # S^T K S (K symmetric)
    if C is None:
        return A
    A, info = lapack.dsygst(A, C, itype=2, lower=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dsygst failed (info={info})")
    return A


def band_reduce(A: np.ndarray, bandwidth: int = 64) -> tuple[np.ndarray, list]:
    """Orthogonal reduction of a symmetric matrix to band form, ``A = Q T Q^T``.

    Parameters
    ----------
    A : ndarray of shape (r, r)
        Symmetric (only its lower triangle is read).
    bandwidth : int, default=64
        b, the number of sub-diagonals of ``T``.

    Returns
    -------
    ab : ndarray of shape (b + 1, r)
        ``T`` in LAPACK's lower band storage: ``ab[i - j, j] = T[i, j]`` for ``0 <= i - j <= b``
        (the layout of ``scipy.linalg.solveh_banded(..., lower=True)``).
    reflectors : list of (start, V, Tw)
        ``Q = Q_1 Q_2 ...`` with ``Q_k = I - V Tw V^T`` acting on rows ``start:`` (compact WY
        form of LAPACK ``geqrt``); apply ``Q^T`` with :func:`apply_qt`.

    Notes
    -----
    Blocked Householder, panel by panel: the QR factorisation of the panel below the band
    (``dgeqrt``) gives ``Q_k``; the trailing matrix is updated two-sided,
    ``Q_k^T A Q_k = A - V Z^T - Z V^T`` with ``Y = A V Tw`` and
    ``Z = Y - V Tw^T V^T Y / 2`` (one ``dsymm`` and one ``dsyr2k``, lower triangle only).
    """
    check_int("band_reduce", "bandwidth", bandwidth, 1)
    b = bandwidth
    r = A.shape[0]
    ab = np.zeros((b + 1, r))
    reflectors = []
    W = np.array(A, dtype=float, order="F")
    k = 0
    while r - k > b + 1:
        m = r - k
        _store_lower(ab, k, W[:b, :b], offset=0)
        w = min(b, m - b)
        qr, tw, _ = lapack.dgeqrt(w, W[b:, :b])
        V = np.tril(qr[:, :w], -1)
        V[np.arange(w), np.arange(w)] = 1.0
        _store_lower(ab, k, qr[:w, :], offset=b)
        W = np.asfortranarray(W[b:, b:])
        Y = blas.dsymm(1.0, W, V @ tw, side=0, lower=1)
        Z = Y - 0.5 * (V @ (tw.T @ (V.T @ Y)))
        W = blas.dsyr2k(-1.0, V, Z, beta=1.0, c=W, lower=1, overwrite_c=1)
        reflectors.append((k + b, V, tw))
        k += b
    _store_lower(ab, k, W, offset=0)
    return ab, reflectors


def _store_lower(ab: np.ndarray, col: int, block: np.ndarray, offset: int) -> None:
    """Write ``T[col + offset + i, col + j] = block[i, j]`` into ab where it lies in the band.

    Entries with ``offset + i - j`` outside ``[0, b]`` are skipped: for the diagonal block
    (offset 0) that keeps its lower triangle, for the panel's R (offset b) its upper triangle.
    """
    i, j = np.indices(block.shape)
    o = offset + i - j
    inside = (o >= 0) & (o <= ab.shape[0] - 1)
    ab[o[inside], col + j[inside]] = block[inside]


def apply_qt(reflectors: list, Y: np.ndarray) -> np.ndarray:
    """``Q^T Y`` for the ``Q`` of :func:`band_reduce`; Y of shape (r, n), not modified."""
    Y = np.array(Y, dtype=float)
    for start, V, tw in reflectors:
        Y[start:] -= V @ (tw.T @ (V.T @ Y[start:]))
    return Y
