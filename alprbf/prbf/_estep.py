"""The E-step of the PRBF network, labeled and unlabeled rows in one code path (pure functions).

Model (001 eqs 2-5, 000 eqs 16-18): ``p(x|k) = sum_j pi_jk N(x; mu_j, Sigma_j)`` with shared
Gaussian components ``j = 1..M``, class-conditional mixing weights ``pi_jk = p(j|k)`` (columns sum
to 1) and class priors ``p(k)``.

Rows are labeled (class code ``0..K-1``) or unlabeled (code ``-1``; ``nan`` in float label
vectors).  One E-step serves both (000 eqs 21-25):

* labeled row ``(x, k)``: ``p(j|x, k) = pi_jk N_j(x) / p(x|k)``  (001 eq 7, 000 eq 25);
* unlabeled row ``x``: joint posterior ``p(j, k|x) = p(k) pi_jk N_j(x) / p(x)`` (000 eqs 21-23).

The joint posterior of an unlabeled row factorises as ``p(j, k|x) = c_jk * r_j(x)`` with
``r_j(x) = sum_k p(j, k|x) = w_j N_j(x) / p(x)``, ``w_j = sum_k p(k) pi_jk`` and
``c_jk = p(k) pi_jk / w_j`` independent of ``x``.  Every quantity the M-step (000 eqs 26-29) and
the semi-supervised split (eqs 30-32) need is therefore computed from one (n, M) responsibility
matrix plus the (M, K) matrix ``counts[j, k] = sum_x p(j, k|x)``: the (n, M, K) joint array is
never formed (use :func:`joint_log_resp` when it is really wanted).

Log-likelihood (000 eq 17): ``sum_labeled log p(k) p(x|k) + sum_unlabeled log p(x)``.  With no
unlabeled rows it equals 001 eq 6 plus the constant ``sum_k N_k log p(k)``; the eq-6 part is
returned separately as ``EStep.loglik_labeled``.  Class priors are updated (eq 29) only when
there are unlabeled rows; in the supervised case they stay ``N_k / N`` (001 §II.A).

All work is in log space; ``pi_jk = 0`` gives ``log pi_jk = -inf`` and a zero responsibility, never
``nan``.  A component whose total responsibility is (numerically) zero keeps its previous mean and
covariance and gets zero weight.

The M-step and the EM loop are in :mod:`~alprbf.prbf._em`; the same E-step one block of rows
at a time in :mod:`~alprbf.prbf._blocked`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._data import PRBFData
from ._gaussian import estimate_log_gaussian_prob, weighted_moments
from ._normalize import normalize_with_offsets, weighted_logits
from ._params import PRBFParams


def safe_log(a: np.ndarray) -> np.ndarray:
    """``log(a)`` with ``log(0) = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(a)


def mixture_weights(params: PRBFParams) -> np.ndarray:
    """``w_j = sum_k p(k) pi_jk`` (M,): the weights of the marginal density ``p(x)`` (000 eq 18)."""
    return params.weights @ params.class_priors


@dataclass(frozen=True, eq=False)
class EStep:
    """Result of :func:`e_step` (rows in the order of ``data.X``).

    Attributes
    ----------
    log_prob : ndarray (n, M)
        ``log N(x_i; mu_j, Sigma_j)``.  ``log_prob`` and ``resp`` are ``None`` in the E-steps
        that :func:`~alprbf.prbf._em.run_em` takes between M-steps one block of rows at a time
        (:func:`~alprbf.prbf._blocked.blocked_e_step`); every E-step a caller receives has them.
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
        # not kept by the E-step (an (n, M) array written and never read in an EM loop);
        # the same additions as the compiled E-step's, so the same bits
        return weighted_logits(self.log_prob.T, self.log_offsets, self.codes).T

    @property
    def log_resp(self) -> np.ndarray:
        norm = np.where(np.isfinite(self.log_norm), self.log_norm, 0.0)
        return self.log_weighted - norm[:, None]


def e_step(data: PRBFData, params: PRBFParams, log_prob: np.ndarray | None = None,
           reuse: EStep | None = None) -> EStep:
    """Posterior responsibilities and log-likelihood for the current parameters.

    Parameters
    ----------
    data : PRBFData
    params : PRBFParams
        With ``params.n_classes == data.n_classes`` and the same covariance type.
    log_prob : ndarray (n, M), optional
        Precomputed ``log N(x_i; mu_j, Sigma_j)`` (skips the Gaussian evaluation).
    reuse : EStep, optional
        A spent E-step on the same rows with the same number of components: its (n, M)
        arrays are overwritten with the results (an EM loop passes the previous iteration's,
        which saves paging in two fresh arrays per iteration).  Do not use ``reuse`` after.

    Returns
    -------
    EStep
    """
    M = params.n_components
    n = data.n_samples
    bufs = (None, None)
    if reuse is not None and reuse.resp is not None and reuse.resp.shape == (n, M):
        bufs = (reuse.log_prob.T, reuse.resp.T)
    if log_prob is None:
        log_prob = estimate_log_gaussian_prob(None, params.means, params.precisions_cholesky,
                                              params.covariance_type, features=data.features,
                                              out=bufs[0])
    lpT = log_prob.T                                        # (M, n), C-contiguous if ours
    # offsets: log pi_{j, y} for a labeled row, log w_j for an unlabeled one (table column K),
    # added, normalised and exponentiated in one compiled pass (bit-identical to the NumPy
    # expressions it replaced; see _normalize)
    w = mixture_weights(params)
    table = offset_table(params, w)
    log_norm, respT = normalize_with_offsets(lpT, table, data.codes_ext, bufs[1],
                                             data.offset_groups)
    moments = weighted_moments(data.features, respT.T)
    return finish_e_step(data, params, w, table, log_prob, respT.T, log_norm, moments)


def offset_table(params: PRBFParams, w: np.ndarray) -> np.ndarray:
    """(M, K+1): ``log pi_jk`` (columns ``0..K-1``) and ``log w_j`` (column ``K``; ``w`` the
    :func:`mixture_weights`)."""
    K = params.n_classes
    table = np.empty((params.n_components, K + 1))
    table[:, :K] = safe_log(params.weights)
    table[:, K] = safe_log(w)
    return table


def finish_e_step(data: PRBFData, params: PRBFParams, w: np.ndarray, table: np.ndarray,
                   log_prob: np.ndarray | None, resp: np.ndarray | None, log_norm: np.ndarray,
                   moments: np.ndarray) -> EStep:
    """Class counts and likelihoods from an E-step's normaliser and moments."""
    K = data.n_classes
    # counts[j, k] = sum_x p(j, k|x): labeled rows directly, unlabeled ones as c_jk * g_j with
    # g_j = sum_unlabeled r_j(x) (the last column of cg); one product with the M-step moments
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


def joint_log_resp(estep: EStep, params: PRBFParams, rows: np.ndarray) -> np.ndarray:
    """``log p(j, k|x)`` (len(rows), M, K) for unlabeled ``rows`` (000 eq 21), from an E-step."""
    w = mixture_weights(params)
    log_c = safe_log(params.weights) + safe_log(params.class_priors) - safe_log(w)[:, None]
    log_c[~np.isfinite(log_c)] = -np.inf
    return estep.log_resp[rows][:, :, None] + log_c[None]
