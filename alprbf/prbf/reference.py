"""The PRBF E-step and M-step in plain NumPy: the reference path, to read with the papers open.

This module is what the network computes.  The fast paths (:mod:`alprbf.prbf.fast`, chosen by
the switch ``ALPRBF_FAST``, docs/performance.md) compute the same numbers with the same bits,
block by block and in compiled loops; the tests compare the two bit for bit.

Model (001 eqs 2-5, 000 eqs 16-18).  ``M`` Gaussian components ``N_j(x) = N(x; mu_j, Sigma_j)``
are shared by ``K`` classes; class ``k`` mixes them with weights ``pi_jk = p(j|k)`` (each column
sums to 1) and has prior ``p(k)``::

    p(x|k) = sum_j pi_jk N_j(x)                       class-conditional density (001 eq 3)
    p(x)   = sum_k p(k) p(x|k) = sum_j w_j N_j(x),    w_j = sum_k p(k) pi_jk   (000 eq 18)

Rows are labeled (class code ``y`` in ``0..K-1``) or unlabeled (code ``-1``).  In
:class:`~alprbf.prbf._data.PRBFData` every row also has an *offset column* ``codes_ext``: its
class for a labeled row, ``K`` for an unlabeled one.  The E-step needs, per row and component,
the log of the numerator of its posterior, which is the log density plus one offset::

    labeled (x, y):  log pi_jy + log N_j(x)  ->  p(j|x, y) = pi_jy N_j(x) / p(x|y)
                                                 (001 eq 7, 000 eq 25)
    unlabeled x:     log w_j  + log N_j(x)   ->  r_j(x) = w_j N_j(x) / p(x)
                                                 (000 eqs 21-23, summed over k)

so one (M, K + 1) table of offsets ``[log pi_jk | log w_j]`` (:func:`offset_table`) serves
both kinds of row.  The joint posterior of an unlabeled row is ``p(j, k|x) = c_jk r_j(x)``
with ``c_jk = p(k) pi_jk / w_j`` (000 eq 21), so the (n, M, K) array is never needed.

Log densities.  ``log N_j(x) = -(d log 2 pi)/2 + log det U_j - |U_j^T (x - mu_j)|^2 / 2``
(001 eq 5) with ``U_j`` the Cholesky factor of the precision ``Sigma_j^-1 = U_j U_j^T``.  It is
evaluated as one matrix product with a data-only design matrix (the quadratic form expanded
around the data's mean; :func:`~alprbf.prbf._gaussian.estimate_log_gaussian_prob`), and
directly, per component, for the rows where the expansion would lose accuracy.

Normalisation in log space.  For each row, with ``a_j`` the offset log densities above,
``log p = m + log sum_j exp(a_j - m)`` with ``m = max_j a_j``; the responsibilities are
``exp(a_j - m) / sum``.  Values below ``FLUSH`` (about 1e-200) are set to exactly 0
(:func:`exp_flushed`): their effect on any sum is negligible and products of such numbers would
be subnormal, which the CPU handles a hundred times more slowly.

M-step (001 eqs 8-10, 000 eqs 26-29).  With ``R`` the (n, M) responsibilities, every sum the
M-step needs is one product ``R^T [Z | |x - c|^2 | onehot]`` (the design ``Z``, the squared
norms and each row's offset column one-hot; :func:`~alprbf.prbf._gaussian.weighted_moments`):
component masses ``n_j``, means ``sum_x r_j(x) x / n_j``, covariances around the *new* mean
plus the floor ``reg_covar`` on the diagonal (the exact maximiser; 001 eq 9 prints the old
mean), and the counts ``sum_x p(j, k|x)`` that give ``pi_jk`` (001 eq 10, 000 eq 28) and, with
unlabeled rows, ``p(k)`` (000 eq 29).  Precisions are kept as Cholesky factors
(:func:`~alprbf.prbf._gaussian.compute_precision_cholesky`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._data import PRBFData
from ._gaussian import (
    estimate_log_gaussian_prob,
    gaussian_parameters_and_precisions,
    weighted_moments,
)
from ._params import PRBFParams

FLUSH_LOG = -460.0
FLUSH = float(np.exp(FLUSH_LOG))
"""Responsibilities below ``exp(-460) ~ 1e-200`` are set to 0 (see the module doc)."""
CLIP = FLUSH_LOG - 1.0
"""Arguments below ``CLIP`` give ``exp(e) < FLUSH``: clipped there before the exponential, so
that no argument is ``-inf`` and no result subnormal."""

DEAD_MASS = 1e-10
"""A component whose summed responsibility is below this keeps its previous mean/covariance."""


def safe_log(a: np.ndarray) -> np.ndarray:
    """``log(a)`` with ``log(0) = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(a)


def mixture_weights(params: PRBFParams) -> np.ndarray:
    """``w_j = sum_k p(k) pi_jk`` (M,): the weights of the marginal density ``p(x)`` (000 eq 18)."""
    return params.weights @ params.class_priors


def offset_table(params: PRBFParams, w: np.ndarray) -> np.ndarray:
    """(M, K+1): ``log pi_jk`` (columns ``0..K-1``) and ``log w_j`` (column ``K``; ``w`` the
    :func:`mixture_weights`)."""
    K = params.n_classes
    table = np.empty((params.n_components, K + 1))
    table[:, :K] = safe_log(params.weights)
    table[:, K] = safe_log(w)
    return table


def weighted_logits(lpT: np.ndarray, table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``lpT + table[:, codes]`` (M, n): each row's log density plus its offset."""
    return np.add(lpT, table[:, codes])


def exp_flushed(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``exp(a)`` with every value below ``FLUSH`` (~1e-200) set to exactly 0.

    The arguments are clipped to ``CLIP`` *before* the exponential, so that no result is
    subnormal and no argument is ``-inf``; the small values are then zeroed by a multiplication
    with the mask (evidence: docs/history/notes.md, 'Subnormal flushing').  ``out`` may be
    ``a`` (in place).
    """
    out = np.maximum(a, CLIP, out=out)
    np.exp(out, out=out)
    np.multiply(out, out >= FLUSH, out=out)
    return out


def log_normaliser(maxima: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """``maxima + log(sums)``, element by element (``-inf`` where a sum is 0)."""
    with np.errstate(divide="ignore"):
        return maxima + np.log(sums)


def normalize(aT: np.ndarray, out: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-sum-exp over the components of each row, and the flushed responsibilities.

    Parameters
    ----------
    aT : ndarray (M, n)
        Offset log densities (:func:`weighted_logits`), components by rows.
    out : ndarray (M, n), optional
        Where to write the responsibilities (may be ``aT``).

    Returns
    -------
    maxima : ndarray (n,)
        ``m = max_j a_j`` (0 where it is not finite, so that an all ``-inf`` row gives 0s).
    sums : ndarray (n,)
        ``s = sum_j exp_flushed(a_j - m)``; ``log p = m + log s`` (:func:`log_normaliser`).
    respT : ndarray (M, n)
        ``exp_flushed(a_j - m) / s`` (a row with ``s = 0`` stays all 0).
    """
    m = aT.max(axis=0)
    m[~np.isfinite(m)] = 0.0
    e = exp_flushed(np.subtract(aT, m, out=out), out=out)
    s = e.sum(axis=0)
    e *= 1.0 / np.where(s > 0, s, 1.0)
    return m, s, e


@dataclass(frozen=True, eq=False)
class EStep:
    """Result of an E-step (rows in the order of ``data.X``).

    Attributes
    ----------
    log_prob : ndarray (n, M)
        ``log N(x_i; mu_j, Sigma_j)``.  ``log_prob`` and ``resp`` are ``None`` in the E-steps
        that :func:`~alprbf.prbf._em.run_em` takes between M-steps one block of rows at a time
        (:func:`~alprbf.prbf.fast.blocked.blocked_e_step`); every E-step a caller receives has
        them.
    log_weighted : ndarray (n, M)  (property, computed on access)
        Labeled rows: ``log pi_jy + log N_j(x)`` (= ``log p(j, x|y)``); unlabeled rows:
        ``log w_j + log N_j(x)`` (= ``log p(j, x)``).
    resp : ndarray (n, M)
        Labeled rows: ``p(j|x, y)`` (001 eq 7); unlabeled rows: ``sum_k p(j, k|x)``
        (000 eqs 21-23 marginalised over k).  Rows sum to 1; values below ~1e-200 are 0.
    log_resp : ndarray (n, M)  (property, computed on access)
        ``log_weighted - log_norm``: the exact logarithm of the responsibilities.

    The (n, M) arrays are column-major views of (M, n) arrays (fast per-row reductions over
    the components); index them as usual.
    log_norm : ndarray (n,)
        Labeled rows: ``log p(x|y)``; unlabeled rows: ``log p(x)``.
    counts : ndarray (M, K)
        ``sum_x p(j, k|x)`` over all rows: numerators of 001 eq 10 / 000 eq 28.
    moments : ndarray (M, n_design + 1 + K + 1)
        :func:`~alprbf.prbf._gaussian.weighted_moments` of ``resp``: everything the M-step
        needs, computed here in the same product as ``counts``.
    log_offsets : ndarray (M, K + 1)
        ``log pi_jk`` (columns ``0..K-1``) and ``log w_j`` (column ``K``).
    codes : ndarray (n,)
        Each row's column of ``log_offsets`` (``data.codes_ext``).
    resp_columns : function or None
        A blocked E-step's substitute for ``resp`` where an M-step may need some columns of
        it: ``resp_columns(comps)`` gives ``resp[:, comps]`` (see
        :func:`~alprbf.prbf._gaussian.gaussian_parameters_and_precisions`).
    loglik : float
        Joint log-likelihood, 000 eq 17.
    loglik_labeled : float
        ``sum_labeled log p(x|y)``: 001 eq 6 (the class-conditional likelihood).
    """

    log_prob: np.ndarray | None
    resp: np.ndarray | None
    log_norm: np.ndarray
    counts: np.ndarray
    loglik: float
    loglik_labeled: float
    moments: np.ndarray
    log_offsets: np.ndarray
    codes: np.ndarray
    resp_columns: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)

    @property
    def log_weighted(self) -> np.ndarray:
        # not kept by the E-step (an (n, M) array written and never read in an EM loop)
        return weighted_logits(self.log_prob.T, self.log_offsets, self.codes).T

    @property
    def log_resp(self) -> np.ndarray:
        norm = np.where(np.isfinite(self.log_norm), self.log_norm, 0.0)
        return self.log_weighted - norm[:, None]


def e_step(data: PRBFData, params: PRBFParams, log_prob: np.ndarray | None = None) -> EStep:
    """Posterior responsibilities and log-likelihood for the current parameters.

    Parameters
    ----------
    data : PRBFData
        ``n`` rows, labeled and unlabeled.
    params : PRBFParams
        ``M`` components, ``K = data.n_classes`` classes, the covariance type of ``data``.
    log_prob : ndarray (n, M), optional
        Precomputed ``log N(x_i; mu_j, Sigma_j)``.

    Returns
    -------
    EStep
    """
    if log_prob is None:                                    # 001 eq 5, (n, M)
        log_prob = estimate_log_gaussian_prob(None, params.means, params.precisions_cholesky,
                                              params.covariance_type, features=data.features)
    w = mixture_weights(params)                             # w_j, 000 eq 18
    table = offset_table(params, w)                         # [log pi_jk | log w_j], (M, K+1)
    aT = weighted_logits(log_prob.T, table, data.codes_ext)  # (M, n)
    m, s, respT = normalize(aT, out=aT)                     # 001 eq 7, 000 eqs 21-25
    log_norm = log_normaliser(m, s)                         # log p(x|y) or log p(x), (n,)
    moments = weighted_moments(data.features, respT.T)      # R^T [Z | |x - c|^2 | onehot]
    return finish_e_step(data, params, w, table, log_prob, respT.T, log_norm, moments)


def finish_e_step(data: PRBFData, params: PRBFParams, w: np.ndarray, table: np.ndarray,
                  log_prob: np.ndarray | None, resp: np.ndarray | None, log_norm: np.ndarray,
                  moments: np.ndarray) -> EStep:
    """Class counts and likelihoods from an E-step's normaliser and moments.

    ``counts[j, k] = sum_x p(j, k|x)``: the labeled rows' responsibilities summed per class
    (the one-hot columns of the moments), plus ``c_jk g_j`` with ``g_j`` the unlabeled rows'
    summed ``r_j(x)`` (the last one-hot column) and ``c_jk = p(k) pi_jk / w_j`` (000 eq 21).
    Log-likelihood (000 eq 17): ``sum_labeled log p(k) p(x|k) + sum_unlabeled log p(x)``.
    """
    K = data.n_classes
    cg = moments[:, -(K + 1):]                              # respT @ onehot_ext, (M, K+1)
    counts = np.ascontiguousarray(cg[:, :K])
    if np.all(np.isfinite(log_norm)):
        per_class = log_norm @ data.onehot_ext              # (K+1,) sums of log_norm
    else:  # -inf rows (impossible for valid parameters): avoid -inf * 0 = nan
        per_class = np.array([np.sum(log_norm[data.codes_ext == k]) for k in range(K + 1)])
    loglik_labeled = float(per_class[:K].sum())
    log_prior = safe_log(params.class_priors)
    loglik = loglik_labeled + float(data.class_counts @ np.where(data.class_counts > 0,
                                                                 log_prior, 0.0))
    if data.n_unlabeled:
        with np.errstate(divide="ignore", invalid="ignore"):
            c = params.weights * params.class_priors / w[:, None]   # c_jk, (M, K)
        c[~np.isfinite(c)] = 0.0
        counts = counts + c * cg[:, K:]
        loglik += float(per_class[K])
    return EStep(log_prob, resp, log_norm, counts, loglik, loglik_labeled, moments, table,
                 data.codes_ext)


SquaredDeviations = Callable[[np.ndarray, np.ndarray, np.ndarray], "np.ndarray | None"]


def m_step(data: PRBFData, estep: EStep, params: PRBFParams, reg_covar: float = 1e-6,
           update_priors: bool | None = None, fixed_components: np.ndarray | None = None,
           squared_deviations: SquaredDeviations | None = None) -> PRBFParams:
    """New parameters from the E-step posteriors (001 eqs 8-10, 000 eqs 26-29).

    Parameters
    ----------
    data : PRBFData
    estep : EStep
        E-step of ``params`` on ``data``.
    params : PRBFParams
        Current parameters (kept for dead or fixed components, and for the priors when they
        are not updated).
    reg_covar : float
        Covariance floor added to every variance.
    update_priors : bool or None
        Re-estimate ``p(k)`` by 000 eq 29.  ``None`` (default): only when ``data`` has
        unlabeled rows; otherwise the priors in ``params`` are kept (``N_k / N`` in the
        supervised case).
    fixed_components : bool ndarray (M,), optional
        Components whose mean and covariance are not updated (their weights are).
    squared_deviations : function, optional
        The fast path's ``r @ ((Xc - mu) ** 2)`` for nearly collapsed components, returning
        ``None`` where it does not apply (see
        :func:`~alprbf.prbf._gaussian.gaussian_parameters_and_precisions`); NumPy's product
        by default.

    Returns
    -------
    PRBFParams
        ``weights[:, k] = counts[:, k] / sum_j counts[j, k]``; a class with no mass at all (no
        labeled row, zero prior) gets uniform weights ``1/M`` (irrelevant because ``p(k) = 0``).
    """
    resp = estep.resp
    if resp is None:                # a blocked E-step: the columns it kept, or the whole one's
        def whole_columns(comps: np.ndarray) -> np.ndarray:
            return e_step(data, params).resp.T[comps].T
        resp = estep.resp_columns or whole_columns
    # n_j, means (001 eq 8), covariances around the new means + floor (001 eq 9)
    _, means, covs, prec = gaussian_parameters_and_precisions(
        data.features, resp, reg_covar, estep.moments, squared_deviations)
    keep = estep.counts.sum(axis=1) < DEAD_MASS
    if fixed_components is not None:
        keep = keep | np.asarray(fixed_components, dtype=bool)
    if np.any(keep):
        means[keep] = params.means[keep]
        covs[keep] = params.covariances[keep]
        prec[keep] = params.precisions_cholesky[keep]
    counts = estep.counts                                   # sum_x p(j, k|x), (M, K)
    colsum = counts.sum(axis=0)
    M = counts.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = np.where(colsum > 0, counts / colsum, 1.0 / M)   # pi_jk, 001 eq 10
    if update_priors is None:
        update_priors = data.n_unlabeled > 0
    if update_priors:
        priors = colsum / colsum.sum()                      # p(k), 000 eq 29
    else:
        priors = params.class_priors.copy()
    return PRBFParams(means, covs, prec, weights, priors, params.covariance_type)
