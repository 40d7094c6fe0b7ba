"""Candidate regions for a new PRBF component: a principal-direction kd-tree (Constantinopoulos &
Likas 2006, §III.B).

The data assigned to one component (the set ``S_j`` of eq. 21) is split recursively.  At every
node the cutting hyperplane is perpendicular to the node's principal direction (the leading
eigenvector of the node's sample covariance) and passes through the node's **mean** -- the
principal-direction divisive partitioning used by the kd-tree variant the paper cites; the paper
does not say where along the direction the cut lies, so ``split_point="median"`` is offered too
(balanced halves).  A point exactly on the hyperplane goes to the first child.

Every node below the root is a candidate subset (they overlap across levels): with ``kd_depth = 3``
levels below the root that is ``2 + 4 + 8 = 14`` subsets per component, the paper's count (its
"level four" counts the root as level one).  Subsets that are too small to split simply have no
children, so a tiny ``S_j`` yields fewer candidates.

Everything here is a pure function of its arguments; no random numbers are drawn.
"""

from __future__ import annotations

import numpy as np

SPLIT_POINTS = ("mean", "median")


def n_tree_subsets(kd_depth: int) -> int:
    """Nodes below the root of a full binary tree with ``kd_depth`` levels: 2^(kd_depth+1)-2."""
    return 2 ** (kd_depth + 1) - 2


def principal_direction(X: np.ndarray) -> np.ndarray:
    """Unit leading principal direction of the rows of ``X`` (shape (n, d) -> (d,)).

    Computed as the leading eigenvector of the scatter matrix ``Xc^T Xc`` (d x d) with
    ``eigh`` rather than by an SVD of the n x d data: a choice for speed on the many small
    nodes; the leading direction's accuracy depends on the eigen-gap either way (evidence:
    docs/history/notes.md, 'kd-tree principal direction').  The sign is fixed so that the
    largest-magnitude entry is positive, which makes the split deterministic.
    """
    Xc = X - X.mean(axis=0)
    _, vecs = np.linalg.eigh(Xc.T @ Xc)
    v = vecs[:, -1]
    i = int(np.argmax(np.abs(v)))
    return v if v[i] >= 0 else -v


def split_node(X: np.ndarray, idx: np.ndarray, split_point: str = "mean"
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """Split the rows ``idx`` of ``X`` by the hyperplane normal to their principal direction.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    idx : ndarray of int, shape (m,)
        Rows belonging to the node.
    split_point : {"mean", "median"}
        Where the hyperplane crosses the principal axis.

    Returns
    -------
    (left, right) : two index arrays (subsets of ``idx``), or None when the node cannot be split
        (fewer than 2 rows, all rows identical, or one side would be empty).
    """
    if split_point not in SPLIT_POINTS:
        raise ValueError(f"split_point must be one of {SPLIT_POINTS}, got {split_point!r}")
    if idx.size < 2:
        return None
    Xn = X[idx]
    if np.ptp(Xn, axis=0).max() == 0.0:
        return None
    proj = Xn @ principal_direction(Xn)
    cut = proj.mean() if split_point == "mean" else np.median(proj)
    left = proj <= cut
    if left.all() or not left.any():
        return None
    return idx[left], idx[~left]


def kdtree_subsets(X: np.ndarray, kd_depth: int = 3, split_point: str = "mean",
                   min_size: int = 2) -> list[np.ndarray]:
    """All kd-tree nodes below the root, breadth first, as row-index arrays into ``X``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The data of one component's partition ``S_j``.
    kd_depth : int
        Levels below the root (3 gives the paper's 14 subsets).
    split_point : {"mean", "median"}
    min_size : int
        Nodes with fewer rows are neither returned nor split further.

    Returns
    -------
    list of ndarray of int
        At most ``n_tree_subsets(kd_depth)`` arrays; exactly that many when every node splits.
    """
    if kd_depth < 1:
        raise ValueError(f"kd_depth must be >= 1, got {kd_depth}")
    out: list[np.ndarray] = []
    level = [np.arange(X.shape[0])]
    for _ in range(kd_depth):
        nxt: list[np.ndarray] = []
        for idx in level:
            if idx.size < max(min_size, 2):
                continue
            halves = split_node(X, idx, split_point)
            if halves is None:
                continue
            for h in halves:
                if h.size >= min_size:
                    nxt.append(h)
        out.extend(nxt)
        level = nxt
    return out


def subset_moments(X: np.ndarray, covariance_type: str, reg_covar: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Sample mean and (floored) covariance of ``X`` in the given parametrisation.

    Returns
    -------
    mean : ndarray of shape (d,)
    cov : ndarray of shape (d, d) ("full"), (d,) ("diag") or () ("spherical")
        Maximum-likelihood (divide by n) estimate plus ``reg_covar`` on the diagonal.
    """
    mean = X.mean(axis=0)
    Xc = X - mean
    n, d = X.shape
    if covariance_type == "full":
        cov = Xc.T @ Xc / n
        cov.flat[:: d + 1] += reg_covar
        return mean, cov
    var = np.mean(Xc * Xc, axis=0) + reg_covar
    if covariance_type == "diag":
        return mean, var
    if covariance_type == "spherical":
        return mean, np.asarray(var.mean())
    raise ValueError(f"unknown covariance_type {covariance_type!r}")


def kdtree_candidates(X: np.ndarray, covariance_type: str = "full", reg_covar: float = 1e-6,
                      kd_depth: int = 3, split_point: str = "mean", min_size: int = 2
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (mean, covariance) pairs from every kd-tree node below the root.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    covariance_type : {"full", "diag", "spherical"}
    reg_covar : float
        Added to the diagonal of every candidate covariance.
    kd_depth, split_point, min_size
        See :func:`kdtree_subsets`.

    Returns
    -------
    means : ndarray of shape (c, d)
    covariances : ndarray of shape (c, d, d), (c, d) or (c,)
        ``c <= n_tree_subsets(kd_depth)`` candidates (``c`` may be 0).
    """
    d = X.shape[1]
    subsets = kdtree_subsets(X, kd_depth, split_point, min_size)
    shape = {"full": (d, d), "diag": (d,), "spherical": ()}[covariance_type]
    means = np.empty((len(subsets), d))
    covs = np.empty((len(subsets), *shape))
    for i, idx in enumerate(subsets):
        means[i], covs[i] = subset_moments(X[idx], covariance_type, reg_covar)
    return means, covs
