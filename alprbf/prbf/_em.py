"""EM for the PRBF network: the M-step, the loop, initialisation and restarts (pure functions).

The model, the E-step and its factorisation are described in :mod:`~alprbf.prbf._estep`.
The M-step implements 001 eqs 8-10 and 000 eqs 26-29.

Deviation from the printed equations: 001 eq 9 (and 24) write the covariance update around the
*old* mean ``mu_j^(t)``; the exact M-step maximiser (used here, as in 000 eq 27 and sklearn) is
the covariance around the *new* mean.  Only the latter guarantees a non-decreasing likelihood.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from . import fast, reference
from ._data import PRBFData
from ._estep import EStep, e_step
from ._gaussian import compute_precision_cholesky, estimate_gaussian_parameters
from ._params import PRBFParams
from .fast.blocked import blocked_e_step, blocked_workspace, e_step_blocks
from .fast.sparse_variance import sparse_squared_deviations

INIT_METHODS = ("kmeans", "random_from_data", "kmeans_per_class")


# --------------------------------------------------------------------------------------------
# M-step


def m_step(data: PRBFData, estep: EStep, params: PRBFParams, reg_covar: float = 1e-6,
           update_priors: bool | None = None,
           fixed_components: np.ndarray | None = None) -> PRBFParams:
    """New parameters from the E-step posteriors (001 eqs 8-10, 000 eqs 26-29):
    :func:`alprbf.prbf.reference.m_step`, with the fast path's covariance of nearly collapsed
    components (:mod:`alprbf.prbf.fast.sparse_variance`, same bits) when the switch is on.

    The arguments and the result are :func:`~alprbf.prbf.reference.m_step`'s.
    """
    fast_part = sparse_squared_deviations if fast.enabled() else None
    return reference.m_step(data, estep, params, reg_covar, update_priors, fixed_components,
                            fast_part)


# --------------------------------------------------------------------------------------------
# the EM loop


@dataclass(frozen=True, eq=False)
class EMResult:
    """Result of :func:`run_em`.

    Attributes
    ----------
    params : PRBFParams
        Final parameters.
    estep : EStep  (property)
        E-step of the final parameters (responsibilities for a subsequent split).  When the
        loop's last E-step was blocked (:func:`~alprbf.prbf.fast.blocked.blocked_e_step`), the
        whole one is computed on first access, with the same bits.
    loglik_history : ndarray (n_iter + 1,)
        000 eq 17 after initialisation and after each M-step (non-decreasing up to the effect
        of ``reg_covar``).
    converged : bool
    n_iter : int
        Number of M-steps performed.
    restart : int
        Which of :func:`fit_em`'s restarts this run is (0 for a single run).
    restart_logliks : tuple of float
        Final log-likelihood of every restart of :func:`fit_em` (empty for a single run).
    """

    params: PRBFParams
    last_estep: EStep = field(repr=False)
    loglik_history: np.ndarray
    converged: bool
    n_iter: int
    data: PRBFData | None = field(default=None, repr=False)
    restart: int = 0
    restart_logliks: tuple[float, ...] = ()

    @cached_property
    def estep(self) -> EStep:
        if self.last_estep.resp is not None:
            return self.last_estep
        return e_step(self.data, self.params)

    @property
    def loglik(self) -> float:
        return float(self.loglik_history[-1])


def has_converged(change, n_rows: int, tol: float):
    """The stopping rule of the PRBF EM loops: the log-likelihood changed by less than ``tol``
    per row, ``|L_t - L_{t-1}| < tol * n_rows`` (as sklearn's GaussianMixture).  Element-wise
    on an array of changes (e.g. ``np.diff`` of an ``EMResult.loglik_history``)."""
    return np.abs(change) < tol * n_rows


def run_em(data: PRBFData, params: PRBFParams, *, tol: float = 1e-4, max_iter: int = 200,
           reg_covar: float = 1e-6, update_priors: bool | None = None,
           fixed_components: np.ndarray | None = None) -> EMResult:
    """Iterate E and M steps until the log-likelihood stops changing.

    With the fast paths on, the E-steps run one block of rows at a time where that gives the
    same bits (:func:`~alprbf.prbf.fast.blocked.blocked_e_step`); the result's E-step is then
    computed when first read.

    Parameters
    ----------
    data : PRBFData
    params : PRBFParams
        Starting point.
    tol : float
        Stop when ``|L_t - L_{t-1}| / n < tol`` (change of the mean per-row log-likelihood,
        000 eq 17 divided by the number of rows; as in sklearn's GaussianMixture).
    max_iter : int
        Maximum number of M-steps (0 only evaluates ``params``).
    reg_covar, update_priors, fixed_components
        See :func:`m_step`.

    Returns
    -------
    EMResult
    """
    n = max(data.n_samples, 1)
    blocks = (e_step_blocks(data, params.n_components) if max_iter > 0 and fast.enabled()
              else None)
    workspace = blocked_workspace(blocks, params.n_components) if blocks else None
    est = blocked_e_step(data, params, blocks, workspace) or e_step(data, params)
    spent = est if est.resp is not None else None      # arrays a whole E-step may reuse
    history = [est.loglik]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        params = m_step(data, est, params, reg_covar, update_priors, fixed_components)
        est = (blocked_e_step(data, params, blocks, workspace)
               or e_step(data, params, reuse=spent))
        if est.resp is not None:
            spent = est
        history.append(est.loglik)
        if has_converged(history[-1] - history[-2], n, tol):
            converged = True
            break
    return EMResult(params, est, np.asarray(history), converged, it if max_iter > 0 else 0,
                    data)


# --------------------------------------------------------------------------------------------
# initialisation and restarts


def initialize_params(data: PRBFData, n_components: int, *, reg_covar: float = 1e-6,
                      init_params: str = "kmeans",
                      random_state: int | np.random.Generator | None = None) -> PRBFParams:
    """Starting parameters: component means from k-means or random rows, hard-assignment moments.

    Parameters
    ----------
    data : PRBFData
        All rows (labeled and unlabeled) are used for the means and covariances.
    n_components : int
        ``M``; must not exceed the number of rows.
    reg_covar : float
    init_params : {"kmeans", "random_from_data", "kmeans_per_class"}
        "kmeans": sklearn ``KMeans(n_init=1)`` centres of all rows pooled; "random_from_data":
        ``M`` distinct rows; "kmeans_per_class": :func:`per_class_kmeans` (k-means within
        each class's labeled rows, ``M`` shared out equally among the classes).
    random_state : int, Generator or None
        Seed of every draw (KMeans receives an integer drawn from it, one per class for
        "kmeans_per_class").

    Returns
    -------
    PRBFParams
        Means as chosen; covariances = moments of the rows assigned to each mean (their
        cluster; for "random_from_data", and for unlabeled rows under "kmeans_per_class", the
        nearest mean; a component with fewer than two rows gets the global covariance);
        ``pi_jk = 1/M`` (uniform, so that no ``pi_jk`` starts at the absorbing value 0, for
        every start alike); ``p(k) = N_k / N_labeled``.
    """
    if init_params not in INIT_METHODS:
        raise ValueError(f"init_params must be one of {', '.join(INIT_METHODS)}; "
                         f"got {init_params!r}")
    X = data.X
    n = X.shape[0]
    M = int(n_components)
    if M < 1:
        raise ValueError(f"n_components must be >= 1; got {n_components}")
    if n < M:
        raise ValueError(f"n_samples={n} should be >= n_components={M}")
    rng = np.random.default_rng(random_state)
    ct = data.covariance_type
    if init_params == "kmeans":
        seed = int(rng.integers(2**31 - 1))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Number of distinct clusters",
                                    category=ConvergenceWarning)
            km = KMeans(n_clusters=M, n_init=1, random_state=seed).fit(X)
        means = km.cluster_centers_.astype(np.float64)
        labels = km.labels_
    elif init_params == "kmeans_per_class":
        means, labels = per_class_kmeans(data, M, rng)
    else:
        means = X[rng.choice(n, size=M, replace=False)].astype(np.float64)
        labels = _nearest(X, means)
    resp = np.zeros((n, M))
    resp[np.arange(n), labels] = 1.0
    _, _, covs = estimate_gaussian_parameters(None, resp, reg_covar, ct, features=data.features)
    small = np.bincount(labels, minlength=M) < 2
    if np.any(small):
        _, _, gcov = estimate_gaussian_parameters(None, np.ones((n, 1)), reg_covar, ct,
                                                  features=data.features)
        covs[small] = gcov[0]
    prec = compute_precision_cholesky(covs, ct)
    K = data.n_classes
    weights = np.full((M, K), 1.0 / M)
    n_l = data.class_counts.sum()
    priors = data.class_counts / n_l if n_l > 0 else np.full(K, 1.0 / K)
    return PRBFParams(means, covs, prec, weights, priors, ct)


def _nearest(X: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Index of the nearest mean (squared Euclidean distance) of every row of ``X``."""
    d2 = (np.sum(X * X, axis=1)[:, None] - 2.0 * X @ means.T
          + np.sum(means * means, axis=1)[None])
    return np.argmin(d2, axis=1)


def components_per_class(class_counts: np.ndarray, n_components: int) -> np.ndarray:
    """``M`` shared out among the classes for :func:`per_class_kmeans`: one at a time, round
    robin over the classes in order of decreasing size (ties: lower code first), skipping a
    class once it has as many components as rows; so ``M // K`` each and the remainder to the
    larger classes when every class has enough rows."""
    counts = np.asarray(class_counts, dtype=np.int64)
    if n_components > counts.sum():
        raise ValueError(f"kmeans_per_class needs at least n_components={n_components} "
                         f"labeled rows; got {int(counts.sum())}")
    order = np.argsort(-counts, kind="stable")
    share = np.zeros(len(counts), dtype=np.int64)
    left = int(n_components)
    while left:
        for k in order:
            if left and share[k] < counts[k]:
                share[k] += 1
                left -= 1
    return share


def per_class_kmeans(data: PRBFData, n_components: int, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The within-class start: k-means (sklearn ``KMeans(n_init=1)``) on each class's labeled
    rows, with :func:`components_per_class` centres for class ``k`` (seeded by one integer per
    class drawn from ``rng`` in class order).

    Returns
    -------
    means : ndarray (M, d)
        The classes' centres, class 0's first.
    labels : ndarray (n,)
        Component of every row: a labeled row's own cluster, an unlabeled row's nearest mean.
    """
    X = data.X
    share = components_per_class(data.class_counts, n_components)
    means, labels, start = [], np.empty(X.shape[0], dtype=np.int64), 0
    for k, m in enumerate(share):
        if m == 0:
            continue
        rows = data.labeled[data.codes == k]
        seed = int(rng.integers(2**31 - 1))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Number of distinct clusters",
                                    category=ConvergenceWarning)
            km = KMeans(n_clusters=int(m), n_init=1, random_state=seed).fit(X[rows])
        means.append(km.cluster_centers_.astype(np.float64))
        labels[rows] = km.labels_ + start
        start += int(m)
    centres = np.concatenate(means)
    if len(data.unlabeled):
        labels[data.unlabeled] = _nearest(X[data.unlabeled], centres)
    return centres, labels


def fit_em(data: PRBFData, n_components: int, *, tol: float = 1e-4, max_iter: int = 200,
           reg_covar: float = 1e-6, n_init: int = 1, init_params: str = "kmeans",
           random_state: int | np.random.Generator | None = None,
           update_priors: bool | None = None) -> EMResult:
    """EM from ``n_init`` initialisations; keep the run with the largest final log-likelihood.

    Parameters
    ----------
    data : PRBFData
    n_components : int
    tol, max_iter, reg_covar, update_priors
        See :func:`run_em` / :func:`m_step`.
    n_init : int
        Number of restarts (001 §IV uses the best of 5 for PRBFsplit).
    init_params : {"kmeans", "random_from_data", "kmeans_per_class"}
    random_state : int, Generator or None
        One generator drives all restarts (deterministic for an integer seed).

    Returns
    -------
    EMResult
        The best run (ties: the first), with its index among the restarts (``restart``) and
        every restart's final log-likelihood (``restart_logliks``).
    """
    if n_init < 1:
        raise ValueError(f"n_init must be >= 1; got {n_init}")
    rng = np.random.default_rng(random_state)
    best: EMResult | None = None
    logliks: list[float] = []
    for i in range(n_init):
        p0 = initialize_params(data, n_components, reg_covar=reg_covar,
                               init_params=init_params, random_state=rng)
        res = run_em(data, p0, tol=tol, max_iter=max_iter, reg_covar=reg_covar,
                     update_priors=update_priors)
        logliks.append(res.loglik)
        if best is None or res.loglik > best.loglik:
            best = replace(res, restart=i)
    assert best is not None
    return replace(best, restart_logliks=tuple(logliks))


def with_params(params: PRBFParams, **changes) -> PRBFParams:
    """A copy of ``params`` with some fields replaced (precisions recomputed if covariances are)."""
    if "covariances" in changes and "precisions_cholesky" not in changes:
        changes["precisions_cholesky"] = compute_precision_cholesky(
            changes["covariances"], changes.get("covariance_type", params.covariance_type))
    return replace(params, **changes)
