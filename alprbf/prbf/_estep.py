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

The arithmetic, step by step in NumPy, is :mod:`~alprbf.prbf.reference`; this module chooses
between it and the fast paths (:mod:`~alprbf.prbf.fast`, same bits) by the switch
``ALPRBF_FAST``.  The M-step and the EM loop are in :mod:`~alprbf.prbf._em`.
"""

from __future__ import annotations

import numpy as np

from . import _gaussian, fast, reference
from ._data import PRBFData
from ._gaussian import GaussianFeatures
from ._params import PRBFParams
from .fast import estep as fast_estep
from .fast import far_rows
from .reference import EStep, finish_e_step, mixture_weights, offset_table, safe_log

__all__ = ["EStep", "e_step", "estimate_log_gaussian_prob", "finish_e_step", "joint_log_resp",
           "mixture_weights", "offset_table", "safe_log"]


def e_step(data: PRBFData, params: PRBFParams, log_prob: np.ndarray | None = None,
           reuse: EStep | None = None) -> EStep:
    """Posterior responsibilities and log-likelihood for the current parameters:
    :func:`alprbf.prbf.reference.e_step`, or its fast form
    (:func:`alprbf.prbf.fast.estep.e_step`, same bits) when the switch is on.

    Parameters
    ----------
    data : PRBFData
    params : PRBFParams
        With ``params.n_classes == data.n_classes`` and the same covariance type.
    log_prob : ndarray (n, M), optional
        Precomputed ``log N(x_i; mu_j, Sigma_j)`` (skips the Gaussian evaluation).
    reuse : EStep, optional
        A spent E-step whose (n, M) arrays the fast path may overwrite (an EM loop passes the
        previous iteration's).  Do not use ``reuse`` after.

    Returns
    -------
    EStep
    """
    if fast.enabled():
        return fast_estep.e_step(data, params, log_prob, reuse)
    return reference.e_step(data, params, log_prob)


def estimate_log_gaussian_prob(X: np.ndarray | None, means: np.ndarray,
                               precisions_cholesky: np.ndarray, covariance_type: str,
                               features: GaussianFeatures | None = None,
                               out: np.ndarray | None = None) -> np.ndarray:
    """:func:`alprbf.prbf._gaussian.estimate_log_gaussian_prob` (001 eq 5; see it for the
    arguments), with the far rows compiled (:mod:`alprbf.prbf.fast.far_rows`, same bits) when
    the switch is on."""
    if fast.enabled():
        return far_rows.estimate_log_gaussian_prob(X, means, precisions_cholesky,
                                                   covariance_type, features, out)
    return _gaussian.estimate_log_gaussian_prob(X, means, precisions_cholesky, covariance_type,
                                                features, out)


def joint_log_resp(estep: EStep, params: PRBFParams, rows: np.ndarray) -> np.ndarray:
    """``log p(j, k|x)`` (len(rows), M, K) for unlabeled ``rows`` (000 eq 21), from an E-step."""
    w = mixture_weights(params)
    log_c = safe_log(params.weights) + safe_log(params.class_priors) - safe_log(w)[:, None]
    log_c[~np.isfinite(log_c)] = -np.inf
    return estep.log_resp[rows][:, :, None] + log_c[None]
