"""Graph and linear algebra behind the LAP (Laplacian SVM) kernel of :mod:`.gram`.

This module owns three pieces, each a pure function:

* :func:`knn_laplacian`: the unnormalised Laplacian ``L = D - W`` of the symmetric
  k-nearest-neighbour graph of the pool;
* :func:`laplacian_factor`: an exact factor ``B`` with ``B B^T = L^p`` (a sparse power of L, a
  grounding map and a dense lower triangular ``C``; :class:`LaplacianFactor`), built without
  any eigendecomposition;
* :func:`band_reduce` / :func:`apply_qt` / :func:`apply_q`: an orthogonal reduction
  ``A = Q T Q^T`` of a symmetric matrix to a band matrix ``T`` (blocked Householder, BLAS-3
  only), so that
  ``(I + c A)^{-1}`` costs one banded Cholesky for every ``c``.

Why a band reduction and not an eigendecomposition: the LAP kernel needs ``(I + c A)^{-1}``
for every ratio ``c`` of a parameter grid. An eigendecomposition gives it as a diagonal, but
LAPACK's symmetric eigensolvers spend half of their flops in a memory-bound (BLAS-2)
tridiagonal reduction: at N = 4 000 (``benchmarks/bench_kernels.py``, one BLAS thread, CPU
time) ``numpy.linalg.eigh`` alone cost about 6 times one direct evaluation of the deformed
kernel (an LU solve), the whole band decomposition about 2.4 times. Stopping at a band of
width ``b`` (64) keeps every step a matrix-matrix product (4/3 N^3 flops) and a banded
Cholesky of ``I + c T`` costs only ``O(N b^2)``.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas, cholesky, cython_blas, lapack
from scipy.sparse.csgraph import connected_components
from sklearn.neighbors import NearestNeighbors

from alprbf.validation import check_choice, check_int, check_positive

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
        ``1 <= k <= N - 1``. Reitmaier et al. 2016 fixes k = 7.
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
    The paper (Reitmaier et al. 2016, §5.1.1) fixes k = 7 and the degree p = 1 and leaves the
    weights and the symmetrisation open; binary weights with the "or" rule are this module's
    default. Ties among equidistant neighbours (duplicate rows) are broken by sklearn's neighbour
    search.
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
        check_positive(owner, "heat_sigma", heat_sigma)
        W.data = np.exp(-(length ** 2) / (2.0 * heat_sigma ** 2))
    W = W.tocsr()
    degree = np.asarray(W.sum(axis=1)).ravel()
    return sp.csr_array(sp.diags_array(degree) - W)


@dataclass(frozen=True)
class LaplacianFactor:
    """An exact factor ``B`` of ``L^p`` (``B B^T = L^p``), from :func:`laplacian_factor`.

    Even p: ``B = L^{p/2}`` (sparse; ``keep``, ``ground`` and ``C`` are None). Odd p:
    ``B = L^{(p-1)/2} T^T C`` with the grounding map ``(T x)_i = x[keep_i] - x[ground_i]``
    (r = N - number of connected components) and ``C`` the lower Cholesky factor of the grounded
    Laplacian.

    Attributes
    ----------
    n : int
        N, the number of nodes.
    half : scipy.sparse.csr_array of shape (N, N) or None
        ``L^{floor(p/2)}`` (None: the identity).
    keep, ground : ndarray of int, shape (r,), or None
    C : ndarray of shape (r, r), lower triangular, or None
    """

    n: int
    half: sp.csr_array | None
    keep: np.ndarray | None
    ground: np.ndarray | None
    C: np.ndarray | None

    @property
    def rank(self) -> int:
        """r, the number of columns of ``B``."""
        return self.n if self.keep is None else len(self.keep)

    def _half_times(self, Y: np.ndarray) -> np.ndarray:
        return Y if self.half is None else np.asarray(self.half @ Y, dtype=float)

    def _ground(self, Y: np.ndarray) -> np.ndarray:
        """``T Y`` (a sparse product: faster than two row gathers and a subtraction)."""
        r = len(self.keep)
        T = sp.csr_array((np.r_[np.ones(r), -np.ones(r)],
                          (np.r_[np.arange(r), np.arange(r)], np.r_[self.keep, self.ground])),
                         shape=(r, self.n))
        return np.asarray(T @ Y, dtype=float)

    def t_times(self, Y: np.ndarray) -> np.ndarray:
        """``B^T Y`` for Y of shape (N, n); returns (r, n), Fortran order."""
        Y = np.asarray(Y, dtype=float)
        if self.keep is None:
            return np.asfortranarray(self._half_times(Y))
        TY = np.asfortranarray(self._ground(self._half_times(Y)))
        return blas.dtrmm(1.0, self.C, TY, side=0, lower=1, trans_a=1, overwrite_b=1)

    def times(self, Z: np.ndarray) -> np.ndarray:
        """``B Z`` for Z of shape (r, n); returns (N, n)."""
        Z = np.asarray(Z, dtype=float)
        if self.keep is None:
            return np.asarray(self.half @ Z, dtype=float)
        W = blas.dtrmm(1.0, self.C, np.asfortranarray(Z), side=0, lower=1)     # C Z
        out = np.zeros((self.n, W.shape[1]))
        out[self.keep] = W
        r = len(self.keep)
        out -= sp.csr_array((np.ones(r), (self.ground, np.arange(r))), shape=(self.n, r)) @ W
        return self._half_times(out)

    def congruence(self, K: np.ndarray) -> np.ndarray:
        """``A = B^T K B`` (r, r) for a symmetric ``K`` (N, N); Fortran order, lower triangle
        valid.

        ``T (.) T^T`` by sparse products; ``C^T (.) C`` is LAPACK ``dsygst``
        (N^3 flops, half of two triangular products).
        """
        K = np.asarray(K, dtype=float)
        if self.half is not None:                      # L^h K L^h (K and L^h symmetric)
            K = np.asarray(self.half @ np.asarray(self.half @ K).T, dtype=float)
        if self.keep is None:
            return np.asfortranarray(K)
        A = self._ground(self._ground(K).T).T    # T K T^T, Fortran order (K symmetric)
        A, info = lapack.dsygst(A, self.C, itype=2, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsygst failed (info={info})")
        return A

    def toarray(self) -> np.ndarray:
        """``B`` as a dense (N, r) array (for checks)."""
        if self.keep is None:
            return self.half.toarray()
        Tt = np.zeros((self.n, len(self.keep)))
        cols = np.arange(len(self.keep))
        Tt[self.keep, cols] = 1.0
        Tt[self.ground, cols] = -1.0
        return self._half_times(Tt) @ self.C


def laplacian_factor(L: sp.csr_array, degree: int = 1) -> LaplacianFactor:
    """Exact factor ``B`` of ``L^p`` (``B B^T = L^p``), without eigendecomposition.

    Parameters
    ----------
    L : sparse array of shape (N, N)
        A graph Laplacian (symmetric, rows summing to 0).
    degree : int, default=1
        p >= 1.

    Returns
    -------
    LaplacianFactor

    Notes
    -----
    Even p: ``B = L^{p/2}`` (sparse, r = N). Odd p: ``L`` is "grounded": in every connected
    component one node g (its last) is removed, and with ``(T x)_i = x_i - x_{g(i)}`` over the
    remaining r = N - (number of components) nodes, ``L = T^T L_r T`` where ``L_r`` (``L``
    without the grounded rows and columns) is positive definite; with its Cholesky factor
    ``L_r = C C^T``, ``B = L^{(p-1)/2} T^T C``.
    """
    check_int("laplacian_factor", "degree", degree, 1)
    L = sp.csr_array(L, dtype=float)
    n = L.shape[0]
    half = sparse_power(L, degree // 2)
    if degree % 2 == 0:
        return LaplacianFactor(n, half, None, None, None)
    n_comp, labels = connected_components(L, directed=False)
    ground_of = np.full(n_comp, -1)
    np.maximum.at(ground_of, labels, np.arange(n))   # the last node of every component
    grounded = np.zeros(n, dtype=bool)
    grounded[ground_of] = True
    keep = np.flatnonzero(~grounded)
    if keep.size == 0:
        raise ValueError("laplacian_factor: the graph has no edge (every node is isolated)")
    L_r = L[keep][:, keep].toarray()
    C = cholesky(L_r, lower=True, overwrite_a=True, check_finite=False)
    return LaplacianFactor(n, half, keep, ground_of[labels[keep]], C)


def sparse_power(L: sp.csr_array, power: int) -> sp.csr_array | None:
    """``L^power`` (power >= 0) as a sparse array; ``None`` for power 0 (the identity)."""
    out = None
    for _ in range(power):
        out = L if out is None else sp.csr_array(out @ L)
    return out


def band_reduce(A: np.ndarray, bandwidth: int = 64,
                overwrite_a: bool = False) -> tuple[np.ndarray, list]:
    """Orthogonal reduction of a symmetric matrix to band form, ``A = Q T Q^T``.

    Parameters
    ----------
    A : ndarray of shape (r, r)
        Symmetric (only its lower triangle is read).
    bandwidth : int, default=64
        b, the number of sub-diagonals of ``T``.
    overwrite_a : bool, default=False
        Work in ``A`` itself when it is a Fortran-ordered float array (its content is lost).

    Returns
    -------
    ab : ndarray of shape (b + 1, r)
        ``T`` in LAPACK's lower band storage: ``ab[i - j, j] = T[i, j]`` for ``0 <= i - j <= b``
        (the layout of ``scipy.linalg.solveh_banded(..., lower=True)``).
    reflectors : list of (start, V, Tw)
        ``Q = Q_1 Q_2 ...`` with ``Q_k = I - V Tw V^T`` acting on rows ``start:`` (compact WY
        form of LAPACK ``geqrt``); apply ``Q^T`` with :func:`apply_qt`, ``Q`` with
        :func:`apply_q`.

    Notes
    -----
    Blocked Householder, panel by panel: the QR factorisation of the panel below the band
    (``dgeqrt``) gives ``Q_k``; the trailing matrix is updated two-sided,
    ``Q_k^T A Q_k = A - V Z^T - Z V^T`` with ``Y = A V Tw`` and
    ``Z = Y - V Tw^T V^T Y / 2`` (one ``dsymm`` and one ``dsyr2k``, lower triangle only).
    Both run in place on the trailing block of the one r x r array (BLAS through
    ``scipy.linalg.cython_blas`` with the array's leading dimension), so the trailing matrix
    is never copied.
    """
    check_int("band_reduce", "bandwidth", bandwidth, 1)
    b = bandwidth
    r = A.shape[0]
    ab = np.zeros((b + 1, r))
    reflectors = []
    W = A if overwrite_a and A.dtype == np.float64 and A.flags.f_contiguous else \
        np.array(A, dtype=np.float64, order="F")
    k = 0
    while r - k > b + 1:
        m = r - k
        _store_lower(ab, k, W[k:k + b, k:k + b], offset=0)
        w = min(b, m - b)
        qr, tw, _ = lapack.dgeqrt(w, W[k + b:, k:k + b])
        V = np.asfortranarray(np.tril(qr[:, :w], -1))
        V[np.arange(w), np.arange(w)] = 1.0
        _store_lower(ab, k, qr[:w, :], offset=b)
        Y = _symm_lower(W, k + b, np.asfortranarray(V @ tw))           # A_22 V Tw
        Z = np.asfortranarray(Y - 0.5 * (V @ (tw.T @ (V.T @ Y))))
        _syr2k_lower(W, k + b, V, Z)                                   # A_22 -= V Z^T + Z V^T
        reflectors.append((k + b, V, tw))
        k += b
    _store_lower(ab, k, W[k:, k:], offset=0)
    return ab, reflectors


def _blas_function(name: str, *argtypes) -> ctypes._CFuncPtr:
    """A BLAS routine of ``scipy.linalg.cython_blas`` (the BLAS SciPy links) callable on raw
    pointers, so that it can work on a sub-block of an array with its leading dimension."""
    capsule = cython_blas.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                  ctypes.c_char_p]
    return ctypes.CFUNCTYPE(None, *argtypes)(get_pointer(capsule, get_name(capsule)))


_CHAR, _INT, _PTR = ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_void_p
_DSYMM = _blas_function("dsymm", _CHAR, _CHAR, _INT, _INT, _PTR, _PTR, _INT, _PTR, _INT, _PTR,
                        _PTR, _INT)
_DSYR2K = _blas_function("dsyr2k", _CHAR, _CHAR, _INT, _INT, _PTR, _PTR, _INT, _PTR, _INT,
                         _PTR, _PTR, _INT)


def _int(value: int):
    return ctypes.byref(ctypes.c_int(value))


def _real(value: float):
    return ctypes.cast(ctypes.pointer(ctypes.c_double(value)), ctypes.c_void_p)


def _block(W: np.ndarray, start: int) -> int:
    """Address of ``W[start, start]`` in the Fortran-ordered array W."""
    return W.ctypes.data + start * (W.shape[0] + 1) * W.itemsize


def _symm_lower(W: np.ndarray, start: int, B: np.ndarray) -> np.ndarray:
    """``S B`` for the symmetric ``S = W[start:, start:]`` (lower triangle read), in place."""
    m, n = B.shape
    C = np.empty((m, n), order="F")
    _DSYMM(b"L", b"L", _int(m), _int(n), _real(1.0), _block(W, start), _int(W.shape[0]),
           B.ctypes.data, _int(m), _real(0.0), C.ctypes.data, _int(m))
    return C


def _syr2k_lower(W: np.ndarray, start: int, V: np.ndarray, Z: np.ndarray) -> None:
    """``W[start:, start:] -= V Z^T + Z V^T`` on the lower triangle, in place."""
    m, n = V.shape
    _DSYR2K(b"L", b"N", _int(m), _int(n), _real(-1.0), V.ctypes.data, _int(m), Z.ctypes.data,
            _int(m), _real(1.0), _block(W, start), _int(W.shape[0]))


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


def apply_q(reflectors: list, Y: np.ndarray) -> np.ndarray:
    """``Q Y`` for the ``Q`` of :func:`band_reduce`; Y of shape (r, n), not modified."""
    Y = np.array(Y, dtype=float)
    for start, V, tw in reversed(reflectors):
        Y[start:] -= V @ (tw @ (V.T @ Y[start:]))
    return Y
