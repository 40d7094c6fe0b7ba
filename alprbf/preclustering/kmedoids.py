"""Euclidean distances by one matrix product, and exact PAM K-medoids (BUILD + SWAP).

PAM (Kaufman & Rousseeuw 1990) minimises the sum of the distances of the points to their
nearest medoid.  BUILD picks the medoids greedily; SWAP then applies, while it lowers the cost,
the best exchange of a medoid with a non-medoid.  Every SWAP iteration evaluates the cost change
of all ``K * n`` exchanges at once from the nearest and second-nearest medoid distances (the
bookkeeping of FastPAM1, Schubert & Rousseeuw 2019: the same exchanges, the same cost changes as
the original PAM), as one ``(K, n) x (n, n)`` matrix product; there is no Python loop over points.

Choices where the sources are silent:

* Ties (equal costs or distances) go to the lowest index, so the result is a function of the
  row order; callers that want random tie-breaking permute the rows first.
* SWAP stops when the best exchange lowers the cost by no more than ``tol`` times the current
  cost (default ``1e-12``: rounding noise, not a real improvement).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import check_int, check_real


def sq_distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances by one GEMM, clipped at 0.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (m, d)

    Returns
    -------
    ndarray of shape (n, m)
    """
    xx = np.einsum("ij,ij->i", X, X)
    yy = np.einsum("ij,ij->i", Y, Y)
    D2 = X @ Y.T
    D2 *= -2.0
    D2 += xx[:, None]
    D2 += yy[None, :]
    np.maximum(D2, 0.0, out=D2)
    return D2


def pairwise_distances(X: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of ``X`` (exact zeros on the diagonal).

    Parameters
    ----------
    X : ndarray of shape (n, d)

    Returns
    -------
    ndarray of shape (n, n), symmetric
    """
    D = sq_distances(X, X)
    np.sqrt(D, out=D)
    D = (D + D.T) / 2.0
    np.fill_diagonal(D, 0.0)
    return D


@dataclass(frozen=True)
class KMedoidsResult:
    """Outcome of :func:`pam`.

    Attributes
    ----------
    medoids : ndarray of int, shape (K,)
        Row indices of the medoids (into the distance matrix).
    labels : ndarray of int, shape (n,)
        Index into ``medoids`` of each row's nearest medoid.
    cost : float
        Sum of the distances of the rows to their nearest medoid.
    n_swaps : int
        Exchanges applied by SWAP.
    """

    medoids: np.ndarray
    labels: np.ndarray
    cost: float
    n_swaps: int


def _nearest_two(D: np.ndarray, medoids: np.ndarray):
    """Index (into ``medoids``) and distance of each row's nearest medoid, and the distance
    to the second nearest (``inf`` with one medoid)."""
    Dm = D[:, medoids]
    near = np.argmin(Dm, axis=1)
    d1 = Dm[np.arange(len(D)), near]
    if len(medoids) == 1:
        return near, d1, np.full(len(D), np.inf)
    Dm[np.arange(len(D)), near] = np.inf
    return near, d1, Dm.min(axis=1)


def _build(D: np.ndarray, n_clusters: int) -> np.ndarray:
    """PAM's greedy BUILD: the most central row, then each time the row that lowers the cost
    most."""
    medoids = [int(np.argmin(D.sum(axis=0)))]
    d1 = D[:, medoids[0]].copy()
    for _ in range(1, n_clusters):
        gain = np.maximum(d1[:, None] - D, 0.0).sum(axis=0)
        gain[medoids] = -1.0
        h = int(np.argmax(gain))
        medoids.append(h)
        np.minimum(d1, D[:, h], out=d1)
    return np.array(medoids, dtype=np.int64)


def swap_deltas(D: np.ndarray, medoids: np.ndarray) -> np.ndarray:
    """Cost change of every exchange (medoid ``i`` out, row ``h`` in).

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Distances.
    medoids : ndarray of int, shape (K,)

    Returns
    -------
    ndarray of shape (K, n)
        ``delta[i, h]`` = cost after replacing ``medoids[i]`` by row ``h`` minus the current
        cost (rows that are medoids get ``+inf``).
    """
    near, d1, d2 = _nearest_two(D, medoids)
    # a row o not served by medoid i moves to h only if h is closer: min(D[o,h] - d1, 0);
    # a row served by i goes to h or to its second nearest medoid: min(D[o,h], d2) - d1
    shared = np.minimum(D - d1[:, None], 0.0)
    own = np.minimum(D, d2[:, None]) - d1[:, None] - shared
    onehot = np.zeros((len(medoids), len(D)))
    onehot[near, np.arange(len(D))] = 1.0
    delta = shared.sum(axis=0)[None, :] + onehot @ own
    delta[:, medoids] = np.inf
    return delta


def pam(D: np.ndarray, n_clusters: int, *, max_iter: int = 1000,
        tol: float = 1e-12) -> KMedoidsResult:
    """PAM K-medoids on a distance matrix.

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Symmetric distances with a zero diagonal.
    n_clusters : int
        ``K``, at most ``n``.
    max_iter : int, default=1000
        Cap on SWAP exchanges.
    tol : float, default=1e-12
        SWAP stops when the best exchange lowers the cost by no more than ``tol * cost``.

    Returns
    -------
    KMedoidsResult
    """
    check_int("pam", "n_clusters", n_clusters, 1)
    check_int("pam", "max_iter", max_iter, 0)
    check_real("pam", "tol", tol, 0.0)
    n = D.shape[0]
    if D.ndim != 2 or D.shape[1] != n:
        raise ValueError(f"pam: D must be a square matrix, got shape {D.shape}")
    if n_clusters > n:
        raise ValueError(f"pam: invalid n_clusters={n_clusters}; valid: at most the {n} rows")
    medoids = _build(D, n_clusters)
    n_swaps = 0
    while n_swaps < max_iter and n_clusters < n:
        delta = swap_deltas(D, medoids)
        i, h = np.unravel_index(np.argmin(delta), delta.shape)
        cost = D[:, medoids].min(axis=1).sum()
        if not delta[i, h] < -tol * max(cost, np.finfo(float).tiny):
            break
        medoids[i] = h
        n_swaps += 1
    near, d1, _ = _nearest_two(D, medoids)
    return KMedoidsResult(medoids=medoids, labels=near, cost=float(d1.sum()), n_swaps=n_swaps)
