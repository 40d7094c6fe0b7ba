"""Incremental node addition for the PRBF network (Constantinopoulos & Likas 2006, §III eqs 16-26;
Constantinopoulos & Likas 2008, eqs 34-37).

Adding component ``M+1`` to a network ``PRBF(M)`` with parameters ``Theta_M`` (pure functions):

1. **Partition** (001 eq 21 / 000 eq 36).  Every labeled row goes to the component with the
   largest ``P(j|x) = sum_k P(j|x,k) P(k)``, ``P(k) = N_k / N`` the labeled class proportions.
   (The paper marginalises the per-class posteriors with the class *priors*, not with
   ``P(k|x)``; we follow the formula as printed.)
2. **Candidates** (001 §III.B).  For every non-empty partition ``S_j`` a principal-direction
   kd-tree (:mod:`alprbf.prbf._kdtree`) gives up to 14 overlapping subsets; the sample mean and
   covariance (in the network's covariance type, floored by ``reg_covar``) of each subset is a
   candidate, with mixing weights ``alpha_k = pi_jk / 2``.
3. **Partial EM** (001 eqs 22-25).  ``Theta_M`` is frozen; only the candidate's mean,
   covariance and ``alpha`` move.  All candidates are refined *together* as the columns of one
   batch (they are independent, so this is exact and uses one matrix product per step).  The
   covariance is taken around the updated mean (the exact M-step maximiser; eq 24 prints the
   previous mean).  Classes without labeled rows keep their initial ``alpha_k`` (eq 25 is 0/0).
   Iterations stop when no candidate's partial log-likelihood (eq 17) per row changes by more
   than ``partial_tol`` or after ``partial_max_iter`` steps (the paper: "a couple").
4. **Criterion** (001 eq 26 / 000 eq 37).  ``dL_k = mean_{x in X_k} log(1 - a_k + a_k f(x) /
   p(x|k; Theta_M))`` computed in log space.  Candidates that raise the likelihood of at least
   ``min_classes`` (= 2) classes are kept; their total is the sum of their positive ``dL_k``;
   the best candidate is added when its total exceeds ``add_threshold`` (= 0.01).
   *Degenerate candidates are discarded first* (a choice the paper does not discuss): with
   discrete-valued features partial EM can collapse a candidate onto the rows that share a
   value, whose singular density "raises" the likelihood of every class on that plane and
   would pass the test at every step; a candidate with a variance below ``degenerate_tol``
   times the data's variance in the same direction is rejected
   (:func:`degenerate_candidates`; evidence: docs/history/notes.md, 'Degenerate candidates').  The
   supervised incremental estimators use 1e-3; the default of :func:`try_add_component` is 0
   (off, the literal procedure) because with fewer labeled rows than features every candidate
   is singular in this sense, and the semi-supervised EM that follows an addition uses all
   rows.
   (A singular covariance makes the log density infinite or undefined, so an implementation
   without a covariance floor cannot accept such a candidate either.)
5. **Insertion** (001 eq 16): ``pi_jk <- (1 - a_k) pi_jk`` for the old components and
   ``pi_{M+1,k} = a_k``; class priors are unchanged.  Then (optionally) EM on the grown network:
   supervised EM when every row is labeled, semi-supervised EM (000 eqs 17-29) otherwise.

Only labeled rows enter steps 1-4 (in the supervised case that is all rows); unlabeled rows
(``y`` = nan or -1) are used only by the final EM, as Constantinopoulos & Likas 2008, §4.1
prescribes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from ._data import label_codes, prepare_data
from ._em import EMResult, run_em
from ._estep import e_step, estimate_log_gaussian_prob, safe_log
from ._gaussian import GaussianFeatures, compute_precision_cholesky, estimate_gaussian_parameters
from ._kdtree import SPLIT_POINTS, kdtree_candidates, subset_moments
from ._params import PRBFParams
from ._predict import log_class_conditional
from .reference import exp_flushed


def one_component_params(X: np.ndarray, y_codes: np.ndarray, n_classes: int,
                         covariance_type: str = "full", reg_covar: float = 1e-6) -> PRBFParams:
    """The one-component network PRBF(1) of 001 eqs 18-20.

    Mean and covariance of all rows of ``X``, ``pi_1k = 1``, class priors ``N_k / N`` from the
    labeled rows (uniform if there are none).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y_codes : ndarray of shape (n,)
        Class codes, -1 (or nan) for unlabeled rows.
    n_classes : int
    covariance_type : {"full", "diag", "spherical"}
    reg_covar : float

    Returns
    -------
    PRBFParams with one component.
    """
    y_codes = label_codes(y_codes)
    mean, cov = subset_moments(X, covariance_type, reg_covar)
    counts = np.bincount(y_codes[y_codes >= 0], minlength=n_classes).astype(float)
    priors = counts / counts.sum() if counts.sum() > 0 else np.full(n_classes, 1.0 / n_classes)
    covs = cov[None]
    return PRBFParams(means=mean[None], covariances=covs,
                      precisions_cholesky=compute_precision_cholesky(covs, covariance_type),
                      weights=np.ones((1, n_classes)), class_priors=priors,
                      covariance_type=covariance_type)


def component_partition(log_f: np.ndarray, weights: np.ndarray, class_priors: np.ndarray
                        ) -> np.ndarray:
    """Index of the component with the largest ``P(j|x) = sum_k P(j|x,k) P(k)`` (eq 21).

    Parameters
    ----------
    log_f : ndarray of shape (n, M)
    weights : ndarray of shape (M, K)
    class_priors : ndarray of shape (K,)

    Returns
    -------
    ndarray of int, shape (n,)

    Notes
    -----
    With ``P(j|x,k) = pi_jk f_j(x) / p(x|k)``,
    ``log P(j|x) = log f_j(x) + log sum_k pi_jk exp(b_ik)`` where ``b_ik = log P(k) -
    log p(x|k)``: two (n, K) x (K, M) matrix products instead of a log-sum-exp over an
    (n, M, K) array.  ``log p(x|k)`` is exact in log space (:func:`log_class_conditional`);
    the second product is shifted by ``max_k b_ik`` and rows where a component with a positive
    weight underflows (below 1e-280) are recomputed by the exact (r, M, K) log-sum-exp.
    """
    log_w = safe_log(weights)  # (M, K)
    log_prior = safe_log(class_priors)
    with np.errstate(invalid="ignore"):
        b = log_prior[None, :] - log_class_conditional(log_f, weights)   # (n, K)
    b[~np.isfinite(b)] = -np.inf         # classes with P(k) = 0 or p(x|k) = 0 do not count
    bm = b.max(axis=1)
    bm = np.where(np.isfinite(bm), bm, 0.0)
    prod = exp_flushed(b - bm[:, None]) @ weights.T                   # (n, M)
    with np.errstate(divide="ignore"):
        score = np.log(prod) + bm[:, None] + log_f
    live = weights.sum(axis=1) > 0
    rows = np.flatnonzero(((prod < 1e-280) & live[None, :]).any(axis=1))
    if len(rows):
        joint = log_f[rows][:, :, None] + log_w[None]   # (r, M, K): log pi_jk f_j(x)
        with np.errstate(invalid="ignore"):
            log_post = joint - logsumexp(joint, axis=1, keepdims=True)  # log P(j|x,k)
            score[rows] = logsumexp(log_post + log_prior[None, None, :], axis=2)
    return np.argmax(np.nan_to_num(score, nan=-np.inf), axis=1)


@dataclass
class Candidates:
    """A batch of candidate components (one per row).

    Attributes
    ----------
    means : ndarray (C, d)
    covariances : ndarray (C, d, d), (C, d) or (C,)
    alphas : ndarray (C, K)
        Mixing weights of the candidate in every class.
    source : ndarray of int (C,)
        The component whose partition the candidate came from.
    """

    means: np.ndarray
    covariances: np.ndarray
    alphas: np.ndarray
    source: np.ndarray


def initial_candidates(X: np.ndarray, assign: np.ndarray, params: PRBFParams,
                       kd_depth: int = 3, split_point: str = "mean", reg_covar: float = 1e-6,
                       min_size: int = 2) -> Candidates:
    """kd-tree candidates of every partition ``S_j`` with ``alpha_k = pi_jk / 2`` (001 §III.B).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Labeled rows.
    assign : ndarray of int (n,)
        Partition index of each row (:func:`component_partition`).
    params : PRBFParams
    kd_depth, split_point, min_size
        kd-tree settings (:func:`alprbf.prbf._kdtree.kdtree_subsets`); kd_depth 3 -> 14 per
        component.
    reg_covar : float

    Returns
    -------
    Candidates
    """
    ct = params.covariance_type
    means, covs, alphas, source = [], [], [], []
    for j in range(params.n_components):
        Sj = X[assign == j]
        if Sj.shape[0] < min_size:
            continue
        m, c = kdtree_candidates(Sj, ct, reg_covar, kd_depth, split_point, min_size)
        means.append(m)
        covs.append(c)
        alphas.append(np.repeat(params.weights[j][None] / 2.0, len(m), axis=0))
        source.append(np.full(len(m), j))
    d, K = X.shape[1], params.n_classes
    if not means:
        shape = {"full": (0, d, d), "diag": (0, d), "spherical": (0,)}[ct]
        return Candidates(np.empty((0, d)), np.empty(shape), np.empty((0, K)),
                          np.empty(0, dtype=np.int64))
    return Candidates(np.concatenate(means), np.concatenate(covs), np.concatenate(alphas),
                      np.concatenate(source))


def batched_precision_cholesky(covariances: np.ndarray, covariance_type: str) -> np.ndarray:
    """:func:`~alprbf.prbf._gaussian.compute_precision_cholesky` for many small matrices at once.

    One batched ``cholesky`` and one batched triangular inverse instead of a Python loop of
    ``solve_triangular`` calls (which dominates partial EM over ~14 M candidates); falls back
    to the robust per-matrix routine when some covariance is not numerically positive definite.
    """
    if covariance_type != "full" or covariances.shape[0] == 0:
        return compute_precision_cholesky(covariances, covariance_type)
    try:
        L = np.linalg.cholesky(covariances)
    except np.linalg.LinAlgError:
        return compute_precision_cholesky(covariances, covariance_type)
    U = np.swapaxes(np.linalg.inv(L), 1, 2)
    if not np.all(np.isfinite(U)):
        return compute_precision_cholesky(covariances, covariance_type)
    return np.triu(U)


def _log_alpha_rows(alphas: np.ndarray, y_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log a`` and ``log(1 - a)`` with ``a = alphas[c, y_i]``, shapes (n, C); the logs are
    taken on the (C, K) table, then indexed by the row classes.

    ``log(1 - a)`` is computed as ``log1p(-a)``, so that the change a tiny weight ``a`` makes
    to a class's likelihood keeps its true sign.  The plain form rounds to 0 for ``a`` below
    machine epsilon (e.g. a nearly empty component's ``pi_jk / 2``), which turns that change
    into a rounding-sized *positive* amount whatever the candidate's density there, and the
    ">= 2 classes increase" rule of eq 37 would count it (evidence: docs/history/notes.md, 'log1p in
    the candidate test').
    """
    with np.errstate(divide="ignore"):
        log_1ma = np.log1p(-alphas)
    return safe_log(alphas).T[y_codes], log_1ma.T[y_codes]


def _mixed_log_density(log_p_old: np.ndarray, log_f_new: np.ndarray, alphas: np.ndarray,
                       y_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log((1-a) p_old + a f_new)`` and ``log a f_new`` per row and candidate, shapes (n, C),
    with ``a = alphas[c, y_i]``."""
    log_a, log_1ma = _log_alpha_rows(alphas, y_codes)
    new = log_a + log_f_new
    return np.logaddexp(log_1ma + log_p_old[:, None], new), new


@dataclass
class PartialEMResult:
    """Refined candidates and their partial log-likelihood trace.

    Attributes
    ----------
    candidates : Candidates
    precisions_cholesky : ndarray
    log_f : ndarray (n, C)
        Candidate log densities at the labeled rows (final parameters).
    loglik : ndarray (C,)
        Eq 17 per candidate (sum over labeled rows) at the final parameters.
    history : list of ndarray (C,)
        Eq 17 per candidate before each update and at the end.
    n_iter : int
    """

    candidates: Candidates
    precisions_cholesky: np.ndarray
    log_f: np.ndarray
    loglik: np.ndarray
    history: list = field(default_factory=list)
    n_iter: int = 0


def partial_em(X: np.ndarray, y_codes: np.ndarray, log_p_old: np.ndarray, cand: Candidates,
               covariance_type: str, reg_covar: float = 1e-6, max_iter: int = 10,
               tol: float = 1e-5, features: GaussianFeatures | None = None) -> PartialEMResult:
    """Partial EM (001 eqs 22-25) for a batch of candidates, ``Theta_M`` frozen.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Labeled rows.
    y_codes : ndarray of int (n,)
        Their classes (all >= 0).
    log_p_old : ndarray of shape (n,)
        ``log p(x | y; Theta_M)`` (fixed).
    cand : Candidates
        Initial candidates (not modified).
    covariance_type : {"full", "diag", "spherical"}
    reg_covar : float
    max_iter : int
        Maximum number of updates (0: evaluate only).
    tol : float
        Stop when ``max_c |change of eq 17 per row| < tol``.
    features : GaussianFeatures, optional
        Precomputed for ``X``.

    Returns
    -------
    PartialEMResult
    """
    f = features if features is not None else GaussianFeatures(X, covariance_type)
    n = X.shape[0]
    K = cand.alphas.shape[1]
    counts = np.bincount(y_codes, minlength=K).astype(float)
    present = counts > 0
    onehot = np.zeros((n, K))
    onehot[np.arange(n), y_codes] = 1.0
    means, covs, alphas = cand.means.copy(), cand.covariances.copy(), cand.alphas.copy()
    prec = batched_precision_cholesky(covs, covariance_type)
    history = []
    it = 0
    while True:
        log_f = estimate_log_gaussian_prob(None, means, prec, covariance_type, features=f)
        log_mix, log_new = _mixed_log_density(log_p_old, log_f, alphas, y_codes)
        ll = log_mix.sum(axis=0)
        history.append(ll)
        if it >= max_iter or (it > 0 and np.max(np.abs(history[-1] - history[-2])) / n < tol):
            break
        r = np.exp(log_new - log_mix)  # eq 22, (n, C)
        _, means, covs = estimate_gaussian_parameters(None, r, reg_covar, covariance_type,
                                                      features=f)  # eqs 23-24
        new_alpha = (onehot.T @ r).T / np.where(present, counts, 1.0)  # eq 25, (C, K)
        alphas = np.where(present[None, :], new_alpha, alphas)
        prec = batched_precision_cholesky(covs, covariance_type)
        it += 1
    out = Candidates(means, covs, alphas, cand.source.copy())
    return PartialEMResult(out, prec, log_f, history[-1], history, it)


def class_loglik_change(y_codes: np.ndarray, log_p_old: np.ndarray, log_f_new: np.ndarray,
                        alphas: np.ndarray) -> np.ndarray:
    """Per-class mean log-likelihood change of adding each candidate (001 eq 26 / 000 eq 37).

    Parameters
    ----------
    y_codes : ndarray of int (n,)
    log_p_old : ndarray (n,)
        ``log p(x | y; Theta_M)``.
    log_f_new : ndarray (n, C)
        Candidate log densities.
    alphas : ndarray (C, K)

    Returns
    -------
    ndarray of shape (C, K)
        ``dL_k`` per candidate and class; 0 for classes without rows.
    """
    K = alphas.shape[1]
    # log((1 - a) + a f_new / p_old) with the ratio inside the log-sum; log(1 - a) by log1p so
    # that a change of ~a * (r - 1) for a tiny weight a keeps its sign (see _log_alpha_rows)
    log_a, log_1ma = _log_alpha_rows(alphas, y_codes)
    term = np.logaddexp(log_1ma, log_a + log_f_new - log_p_old[:, None])
    counts = np.bincount(y_codes, minlength=K).astype(float)
    onehot = np.zeros((y_codes.size, K))
    onehot[np.arange(y_codes.size), y_codes] = 1.0
    sums = (onehot.T @ term).T  # (C, K)
    return sums / np.where(counts > 0, counts, 1.0)[None, :]


def degenerate_candidates(covariances: np.ndarray, covariance_type: str, X: np.ndarray,
                          tol: float) -> np.ndarray:
    """True for candidates that are (nearly) singular relative to the data's own spread.

    The smallest variance of the candidate in any direction is compared with the data's
    variance in that direction: for "full" the smallest generalised eigenvalue of
    ``(Sigma_cand, Sigma_data)``; for "diag" the smallest per-feature ratio; for "spherical"
    the ratio to the mean feature variance.  A ratio below ``tol`` marks a candidate that sits
    on a lower-dimensional set (typically rows sharing a value of a discrete feature): its
    likelihood gain is an artefact of the singular density, not of class overlap.

    Parameters
    ----------
    covariances : ndarray (C, d, d), (C, d) or (C,)
    covariance_type : {"full", "diag", "spherical"}
    X : ndarray (n, d)
        The data the candidates were built from.
    tol : float

    Returns
    -------
    ndarray of bool, shape (C,)
    """
    if covariances.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    var = np.var(X, axis=0)
    if covariance_type == "full":
        # data covariance with a tiny ridge (it is singular when n <= d, e.g. few labels)
        S = np.atleast_2d(np.cov(X.T, bias=True))
        S.flat[:: S.shape[0] + 1] += 1e-9 * max(float(var.mean()), 1e-300)
        try:
            Linv = np.linalg.inv(np.linalg.cholesky(S))
            ratio = np.linalg.eigvalsh(Linv @ covariances @ Linv.T)[:, 0]
        except np.linalg.LinAlgError:  # fall back to the per-feature test
            diag = np.diagonal(covariances, axis1=1, axis2=2)
            ratio = (diag / np.where(var > 0, var, 1.0)).min(axis=1)
    elif covariance_type == "diag":
        ratio = (covariances / np.where(var > 0, var, 1.0)).min(axis=1)
    else:
        ratio = covariances / max(float(var.mean()), 1e-300)
    return ratio < tol


def select_candidate(delta: np.ndarray, add_threshold: float = 0.01, min_classes: int = 2
                     ) -> tuple[int | None, np.ndarray, np.ndarray]:
    """Apply 001's selection rule to the per-class changes ``delta`` (C, K).

    Returns
    -------
    best : int or None
        Index of the candidate to add, or None when no kept candidate exceeds ``add_threshold``.
    kept : ndarray of bool (C,)
        Candidates that increase the likelihood of at least ``min_classes`` classes.
    total : ndarray (C,)
        Sum of the positive ``dL_k`` of each candidate (-inf for discarded ones).
    """
    pos = delta > 0
    kept = pos.sum(axis=1) >= min_classes
    total = np.where(kept, np.where(pos, delta, 0.0).sum(axis=1), -np.inf)
    if not kept.any():
        return None, kept, total
    best = int(np.argmax(total))
    return (best if total[best] > add_threshold else None), kept, total


def insert_component(params: PRBFParams, mean: np.ndarray, covariance: np.ndarray,
                     precision_cholesky: np.ndarray, alpha: np.ndarray) -> PRBFParams:
    """Network with one more component, mixed in by 001 eq 16 (class priors unchanged)."""
    w = np.vstack([params.weights * (1.0 - alpha)[None, :], alpha[None, :]])
    return PRBFParams(
        means=np.vstack([params.means, mean[None]]),
        covariances=np.concatenate([params.covariances, covariance[None]]),
        precisions_cholesky=np.concatenate([params.precisions_cholesky,
                                            precision_cholesky[None]]),
        weights=w, class_priors=params.class_priors.copy(),
        covariance_type=params.covariance_type)


@dataclass
class AdditionInfo:
    """What :func:`try_add_component` did.

    Attributes
    ----------
    added : bool
    n_candidates : int
        Candidates generated (14 per non-trivial partition).
    n_kept : int
        Candidates raising the likelihood of >= ``min_classes`` classes.
    best_total : float
        Largest total increase among kept candidates (-inf if none).
    best_delta : ndarray (K,) or None
        Per-class changes of the chosen/best candidate.
    source_component : int or None
        Partition the best candidate came from.
    partial_em_iter : int
    em_info : object or None
        Whatever the EM routine returned besides the parameters (None when EM was not run).
    """

    added: bool
    n_candidates: int
    n_kept: int
    best_total: float
    best_delta: np.ndarray | None = None
    source_component: int | None = None
    partial_em_iter: int = 0
    em_info: object = None


def propose_component(X: np.ndarray, y: np.ndarray, params: PRBFParams, *,
                      add_threshold: float = 0.01, min_classes: int = 2, kd_depth: int = 3,
                      split_point: str = "mean", reg_covar: float = 1e-6,
                      partial_max_iter: int = 10, partial_tol: float = 1e-5,
                      min_size: int = 2, degenerate_tol: float = 0.0
                      ) -> tuple[PRBFParams | None, AdditionInfo]:
    """Steps 1-5 of the module docstring on the labeled rows, without the final EM.

    Parameters: see :func:`try_add_component`.

    Returns
    -------
    (PRBFParams or None, AdditionInfo)
    """
    if split_point not in SPLIT_POINTS:
        raise ValueError(f"split_point must be one of {SPLIT_POINTS}, got {split_point!r}")
    codes = label_codes(y)
    lab = codes >= 0
    if not lab.any():
        return None, AdditionInfo(False, 0, 0, -np.inf)
    K = params.n_classes
    ct = params.covariance_type
    data = prepare_data(np.asarray(X, dtype=np.float64)[lab], codes[lab], K, ct)
    est = e_step(data, params)  # log_norm = log p(x | y; Theta_M) for labeled rows
    Xl, yl, log_p_old = data.X, data.codes, est.log_norm
    counts = data.class_counts
    assign = component_partition(est.log_prob, params.weights, counts / counts.sum())
    cand = initial_candidates(Xl, assign, params, kd_depth, split_point, reg_covar, min_size)
    n_cand = cand.means.shape[0]
    if n_cand == 0:
        return None, AdditionInfo(False, 0, 0, -np.inf)
    res = partial_em(Xl, yl, log_p_old, cand, ct, reg_covar, partial_max_iter, partial_tol,
                     features=data.features)
    delta = class_loglik_change(yl, log_p_old, res.log_f, res.candidates.alphas)
    if degenerate_tol > 0:
        bad = degenerate_candidates(res.candidates.covariances, ct, Xl, degenerate_tol)
        delta[bad] = -np.inf
    best, kept, total = select_candidate(delta, add_threshold, min_classes)
    top = int(np.argmax(total)) if kept.any() else None
    info = AdditionInfo(
        added=best is not None, n_candidates=n_cand, n_kept=int(kept.sum()),
        best_total=float(total[top]) if top is not None else -np.inf,
        best_delta=delta[top] if top is not None else None,
        source_component=int(res.candidates.source[top]) if top is not None else None,
        partial_em_iter=res.n_iter)
    if best is None:
        return None, info
    c = res.candidates
    new = insert_component(params, c.means[best], c.covariances[best],
                           res.precisions_cholesky[best], c.alphas[best])
    return new, info


def try_add_component(X: np.ndarray, y: np.ndarray, params: PRBFParams, *,
                      add_threshold: float = 0.01,
                      min_classes: int = 2, kd_depth: int = 3, split_point: str = "mean",
                      reg_covar: float = 1e-6, partial_max_iter: int = 10,
                      partial_tol: float = 1e-5, min_size: int = 2,
                      degenerate_tol: float = 0.0, em: bool = True,
                      tol: float = 1e-4, max_iter: int = 200
                      ) -> tuple[PRBFParams | None, AdditionInfo]:
    """Try to add one component to a PRBF network (001 §III; semi-supervised: 000 eqs 34-37).

    The candidates, their partial EM and the acceptance test use the **labeled** rows only;
    the final EM (``em=True``) uses **all** rows: supervised EM (001 eqs 7-10) when every row
    is labeled, semi-supervised EM (000 eqs 17-29, class priors re-estimated) otherwise.
    Deterministic: no random number is drawn.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        All rows (labeled and unlabeled).
    y : ndarray of shape (n,)
        Class codes ``0..K-1``; ``nan`` (float) or ``-1`` marks an unlabeled row.
    params : PRBFParams
        The current *unsplit* network ``PRBF(M)`` (K = ``params.n_classes`` classes).
    add_threshold : float, default=0.01
        Minimum total per-class increase (sum of the positive eq-26/37 terms) to add a node.
    min_classes : int, default=2
        A candidate must raise the likelihood of at least this many classes.
    kd_depth : int, default=3
        kd-tree levels below the root: 2 + 4 + 8 = 14 candidates per component.
    split_point : {"mean", "median"}, default="mean"
        Where the kd-tree hyperplane crosses the principal axis.
    reg_covar : float, default=1e-6
        Covariance floor (candidates, partial EM, final EM).
    partial_max_iter : int, default=10
        Maximum partial-EM updates per candidate (0: use the raw kd-tree statistics).
    partial_tol : float, default=1e-5
        Partial EM stops when no candidate's eq-17 value per labeled row changes more.
    min_size : int, default=2
        Smallest kd-tree subset used as a candidate.
    degenerate_tol : float, default=0.0
        Candidates whose covariance (after partial EM) has, in some direction, a variance below
        ``degenerate_tol`` times the labeled data's variance in that direction are discarded
        (:func:`degenerate_candidates`); 0 keeps every candidate (the paper's literal
        procedure).
    em : bool, default=True
        Run EM on the grown network (on all rows).  With ``False`` the caller runs it.
    tol, max_iter : float, int
        Passed to :func:`alprbf.prbf._em.run_em`.

    Returns
    -------
    new_params : PRBFParams or None
        The network with ``M + 1`` components (after EM when ``em``), or None when no
        candidate passes the test (then the network should stay as it is).
    info : AdditionInfo
        Candidate counts, the best total increase and per-class changes, and
        ``em_info`` = the :class:`~alprbf.prbf._em.EMResult` of the final EM (or None).

    Examples
    --------
    >>> new, info = try_add_component(X, y_nan, network)               # doctest: +SKIP
    >>> network = new if new is not None else network                    # doctest: +SKIP
    """
    new, info = propose_component(X, y, params, add_threshold=add_threshold,
                                  min_classes=min_classes, kd_depth=kd_depth,
                                  split_point=split_point, reg_covar=reg_covar,
                                  partial_max_iter=partial_max_iter, partial_tol=partial_tol,
                                  min_size=min_size, degenerate_tol=degenerate_tol)
    if new is None or not em:
        return new, info
    data = prepare_data(X, y, params.n_classes, params.covariance_type)
    res: EMResult = run_em(data, new, tol=tol, max_iter=max_iter, reg_covar=reg_covar)
    info.em_info = res
    return res.params, info
