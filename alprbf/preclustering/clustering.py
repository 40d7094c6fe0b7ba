"""Pre-clustering of a data set (eqs 9-12): K-medoids per subset, fission, Gaussian mixture terms.

:func:`initial_partition` splits the rows into subsets and runs PAM with ``K0`` medoids on each
(one distance GEMM per subset); :func:`fission` splits the cluster of largest radius (eq 9) in
two until every radius is below ``kappa * sigma`` (eq 10); :func:`cluster_priors` iterates
eqs 11-12 for the priors ``alpha_k``; :func:`mixture_terms` gives ``log p(k|x)`` (eq 11) and
``log p(x)`` (eq 31, unnormalised) of any rows.

Choices where the paper is silent:

* Subsets: the rows are permuted with the caller's generator and cut into
  ``max(1, round(n / subset_size))`` subsets of near-equal size (so ``n = 5 000`` gives four
  subsets of 1 250); a subset smaller than ``K0`` gets one medoid per row.
* Clusters stay in the subset they were found in: a row belongs to the nearest medoid of its own
  subset (as K-medoids left it), not to the nearest medoid overall.
* Fission splits a cluster by PAM with two medoids on its members; ties between equal radii go
  to the lowest cluster index; the first half keeps the index, the second is appended.  Split
  choices are deterministic, so continuing fission from a partition made for a larger
  ``sigma`` gives the partition that fission from the initial clustering would give: that is
  how re-clustering after a smaller ``sigma`` (eq 33) is done.
* Priors: eqs 11-12 start from the cluster sizes ``n_k / n`` and stop when no ``alpha_k``
  changes by more than ``tol`` (or after ``max_iter`` iterations).  The Gaussian factors are
  scaled by their row maximum (log space) before the products.  With a large ``sigma`` the
  iteration is slow and its fixed point (the maximum-likelihood weights) can put almost all the
  weight on one central cluster; that is what the equations give, it is not corrected here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..numerics import logsumexp_rows
from ..validation import check_int, check_real
from .kmedoids import pairwise_distances, pam, sq_distances


@dataclass(frozen=True)
class Partition:
    """Clusters of the rows of a data set, each represented by one of its rows (a medoid).

    Attributes
    ----------
    medoids : ndarray of int, shape (K,)
        Row index of each cluster's representative ``c_k``.
    labels : ndarray of int, shape (n,)
        Cluster of each row.
    radii : ndarray of shape (K,)
        ``r_k``: largest distance of a member to its medoid (eq 9).
    n_splits : int
        Fissions applied since the initial K-medoids.
    """

    medoids: np.ndarray
    labels: np.ndarray
    radii: np.ndarray
    n_splits: int = 0

    @property
    def n_clusters(self) -> int:
        return len(self.medoids)


def subsets(n: int, subset_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Random near-equal subsets of ``range(n)``: ``max(1, round(n / subset_size))`` of them.

    Parameters
    ----------
    n : int
    subset_size : int
    rng : numpy.random.Generator

    Returns
    -------
    list of ndarray of int
    """
    check_int("subsets", "subset_size", subset_size, 1)
    n_sub = max(1, int(round(n / subset_size)))
    return np.array_split(rng.permutation(n), n_sub)


def _radius(X: np.ndarray, members: np.ndarray, medoid: int) -> float:
    return float(np.sqrt(((X[members] - X[medoid]) ** 2).sum(axis=1)).max())


def initial_partition(X: np.ndarray, n_medoids: int, subset_size: int,
                      rng: np.random.Generator) -> Partition:
    """PAM with ``n_medoids`` medoids (``K0``) on each subset of about ``subset_size`` rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    n_medoids : int
        ``K0`` per subset (capped at the subset's size).
    subset_size : int
    rng : numpy.random.Generator
        Draws the subsets.

    Returns
    -------
    Partition
    """
    check_int("initial_partition", "n_medoids", n_medoids, 1)
    labels = np.empty(X.shape[0], dtype=np.int64)
    medoids: list[np.ndarray] = []
    radii: list[np.ndarray] = []
    offset = 0
    for rows in subsets(X.shape[0], subset_size, rng):
        rows = np.sort(rows)
        D = pairwise_distances(X[rows])
        res = pam(D, min(n_medoids, len(rows)))
        labels[rows] = res.labels + offset
        medoids.append(rows[res.medoids])
        k = len(res.medoids)
        dist = D[np.arange(len(rows)), res.medoids[res.labels]]
        r = np.zeros(k)
        np.maximum.at(r, res.labels, dist)
        radii.append(r)
        offset += k
    return Partition(np.concatenate(medoids), labels, np.concatenate(radii))


def fission(X: np.ndarray, partition: Partition, max_radius: float) -> Partition:
    """Split the cluster of largest radius in two until every radius is ``< max_radius``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    partition : Partition
    max_radius : float
        ``kappa * sigma`` (eq 10); must be > 0.

    Returns
    -------
    Partition
        ``partition`` itself when no radius reaches ``max_radius``.
    """
    check_real("fission", "max_radius", max_radius, 0.0)
    if max_radius <= 0:
        raise ValueError(f"fission: invalid max_radius={max_radius!r}; valid: > 0")
    if partition.radii.max() < max_radius:
        return partition
    medoids = list(partition.medoids)
    radii = list(partition.radii)
    labels = partition.labels.copy()
    n_splits = partition.n_splits
    while True:
        k = int(np.argmax(radii))
        if radii[k] < max_radius:
            break
        members = np.flatnonzero(labels == k)
        res = pam(pairwise_distances(X[members]), 2)
        new = len(medoids)
        labels[members[res.labels == 1]] = new
        medoids[k] = int(members[res.medoids[0]])
        medoids.append(int(members[res.medoids[1]]))
        radii[k] = _radius(X, members[res.labels == 0], medoids[k])
        radii.append(_radius(X, members[res.labels == 1], medoids[new]))
        n_splits += 1
    return Partition(np.array(medoids, dtype=np.int64), labels, np.array(radii), n_splits)


def centre_distances(X: np.ndarray, partition: Partition, previous: Partition | None = None,
                     previous_sq: np.ndarray | None = None) -> np.ndarray:
    """Squared distances of every row to every medoid, reusing the columns of an earlier
    partition whose medoid did not change (fission keeps the positions of unsplit clusters).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    partition : Partition
    previous : Partition, optional
        The partition ``previous_sq`` belongs to.
    previous_sq : ndarray of shape (n, K_previous), optional

    Returns
    -------
    ndarray of shape (n, K)
    """
    medoids = partition.medoids
    if previous is None or previous_sq is None:
        return sq_distances(X, X[medoids])
    k_old = min(len(previous.medoids), len(medoids))
    fresh = np.concatenate([np.flatnonzero(previous.medoids[:k_old] != medoids[:k_old]),
                            np.arange(k_old, len(medoids))])
    out = np.empty((X.shape[0], len(medoids)))
    out[:, :k_old] = previous_sq[:, :k_old]
    if len(fresh):
        out[:, fresh] = sq_distances(X, X[medoids[fresh]])
    return out


def _log_gauss(X, centres, sigma, sqdist):
    """``-||x - c_k||^2 / (2 sigma^2)``, shape (n, K)."""
    d2 = sq_distances(X, centres) if sqdist is None else sqdist
    return d2 * (-0.5 / sigma ** 2)


def mixture_terms(X: np.ndarray, centres: np.ndarray, log_alpha: np.ndarray,
                  sigma: float, sqdist: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Log memberships ``log p(k|x)`` (eq 11) and ``log p(x)`` (eq 31) of the rows of ``X``.

    ``p(x) = sum_k alpha_k exp(-||x - c_k||^2 / (2 sigma^2))``, without the Gaussian's
    normalising constant (as eq 31 writes it); eq 11 does not depend on that constant.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    centres : ndarray of shape (K, d)
    log_alpha : ndarray of shape (K,)
        Log priors (``-inf`` allowed).
    sigma : float
    sqdist : ndarray of shape (n, K), optional
        ``||x - c_k||^2`` when already known (:func:`centre_distances`).

    Returns
    -------
    log_resp : ndarray of shape (n, K)
    log_px : ndarray of shape (n,)
    """
    log_w = _log_gauss(X, centres, sigma, sqdist)
    log_w += log_alpha[None, :]
    log_px = logsumexp_rows(log_w)
    log_w -= log_px[:, None]
    return log_w, log_px


def cluster_priors(X: np.ndarray, centres: np.ndarray, sigma: float, init: np.ndarray, *,
                   tol: float = 1e-7, max_iter: int = 10000,
                   sqdist: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Priors ``alpha_k`` by iterating eqs 11-12 until no prior moves by more than ``tol``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    centres : ndarray of shape (K, d)
    sigma : float
    init : ndarray of shape (K,)
        Starting priors (positive, summing to 1).
    tol : float, default=1e-7
    max_iter : int, default=10000
    sqdist : ndarray of shape (n, K), optional
        ``||x - c_k||^2`` when already known.

    Returns
    -------
    alpha : ndarray of shape (K,)
    n_iter : int
    """
    log_k = _log_gauss(X, centres, sigma, sqdist)               # fixed across iterations
    top = log_k.max(axis=1, keepdims=True)
    return _iterate_priors(np.exp(log_k - top), log_k, np.asarray(init, dtype=float), tol,
                           max_iter)


def _iterate_priors(L: np.ndarray, log_k: np.ndarray, alpha: np.ndarray, tol: float,
                    max_iter: int) -> tuple[np.ndarray, int]:
    """Eqs 11-12 as ``alpha <- alpha * L^T (1 / (L alpha)) / n`` with ``L = exp(log_k - row
    max)`` (entries in (0, 1], the largest 1 per row): two matrix-vector products per
    iteration; a step where some ``L alpha`` underflows is taken in log space instead."""
    n = L.shape[0]
    for it in range(1, max_iter + 1):
        q = L @ alpha
        if np.all(q > np.finfo(float).tiny):
            new = alpha * (L.T @ (1.0 / q)) / n
        else:
            with np.errstate(divide="ignore"):
                log_w = np.log(alpha)[None, :] + log_k
            new = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True)).mean(axis=0)
        done = np.max(np.abs(new - alpha)) <= tol
        alpha = new
        if done:
            return alpha, it
    return alpha, max_iter


@dataclass(frozen=True, eq=False)
class Mixture:
    """The Gaussian mixture of a partition over the rows it was fitted on (eqs 11, 12, 31).

    Attributes
    ----------
    sqdist : ndarray of shape (n, K)
        ``||x_i - c_k||^2``.
    sigma : float
    log_alpha : ndarray of shape (K,)
        Log priors.
    log_px : ndarray of shape (n,)
        ``log p(x_i)`` (eq 31).
    resp : ndarray of shape (n, K)
        ``p(k|x_i)`` (eq 11); entries below the smallest double are 0.
    n_iter : int
        Iterations of eqs 11-12.
    alpha : ndarray of shape (K,)
        The priors themselves (``exp(log_alpha)`` need not give them back bit for bit).

    Notes
    -----
    A pickle (a loop checkpoint) leaves ``resp`` out, the largest array with ``sqdist`` (both
    ``n x K``; K reaches n late in a coarse-to-fine run, 200 MB each at n = 5 000), and
    loading recomputes it by the same operations as :func:`fit_mixture`, so a resumed run
    sees the same bits.
    """

    sqdist: np.ndarray
    sigma: float
    log_alpha: np.ndarray
    log_px: np.ndarray
    resp: np.ndarray
    n_iter: int
    alpha: np.ndarray | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.alpha is not None:
            state["resp"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.resp is None:
            log_k, top, L = _exponentials(self.sqdist, self.sigma)
            resp, log_px = _memberships(log_k, top, L, self.alpha, self.log_alpha)
            if not np.array_equal(log_px, self.log_px):
                warnings.warn("preclustering: the memberships recomputed from a checkpoint "
                              "differ in round-off from the saved run's (other BLAS kernels?)",
                              RuntimeWarning, stacklevel=2)
            object.__setattr__(self, "resp", resp)

    def log_resp(self, rows) -> np.ndarray:
        """``log p(k|x_i)`` of the rows ``rows`` in log space (no underflow), shape
        (len(rows), K)."""
        out = self.sqdist[rows] * (-0.5 / self.sigma ** 2)
        out += self.log_alpha[None, :]
        out -= self.log_px[rows][:, None]
        return out


def fit_mixture(sqdist: np.ndarray, sigma: float, init: np.ndarray, *, tol: float = 1e-7,
                max_iter: int = 10000) -> Mixture:
    """Priors by eqs 11-12 (:func:`cluster_priors`) and the memberships and densities they
    give, from one pass of exponentials over the ``n x K`` distances.

    Parameters
    ----------
    sqdist : ndarray of shape (n, K)
        Squared distances of the rows to the centres (:func:`centre_distances`).
    sigma : float
    init : ndarray of shape (K,)
        Starting priors.
    tol, max_iter
        As :func:`cluster_priors`.

    Returns
    -------
    Mixture
    """
    log_k, top, L = _exponentials(sqdist, sigma)
    alpha, n_iter = _iterate_priors(L, log_k, np.asarray(init, dtype=float), tol, max_iter)
    with np.errstate(divide="ignore"):
        log_alpha = np.log(alpha)
    resp, log_px = _memberships(log_k, top, L, alpha, log_alpha)
    return Mixture(sqdist=sqdist, sigma=float(sigma), log_alpha=log_alpha, log_px=log_px,
                   resp=resp, n_iter=n_iter, alpha=alpha)


def _exponentials(sqdist: np.ndarray, sigma: float):
    """``log_k = -||x - c||^2 / (2 sigma^2)``, its row maxima and ``exp(log_k - max)``."""
    log_k = sqdist * (-0.5 / sigma ** 2)
    top = log_k.max(axis=1)
    return log_k, top, np.exp(log_k - top[:, None])


def _memberships(log_k, top, L, alpha, log_alpha):
    """``p(k|x_i)`` (eq 11) and ``log p(x_i)`` (eq 31) from :func:`_exponentials` and the
    priors; ``L`` and ``log_k`` are overwritten."""
    q = L @ alpha
    if np.all(q > np.finfo(float).tiny):
        L *= alpha[None, :]
        L /= q[:, None]
        return L, top + np.log(q)
    log_k += log_alpha[None, :]
    log_px = logsumexp_rows(log_k)
    return np.exp(log_k - log_px[:, None]), log_px


def cluster_sizes(partition: Partition) -> np.ndarray:
    """``n_k / n`` of each cluster, shape (K,)."""
    return np.bincount(partition.labels, minlength=partition.n_clusters) / len(partition.labels)
