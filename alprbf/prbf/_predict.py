"""Class posteriors of a PRBF network (001 eqs 1-2, 000 eqs 3 and 15), in log space."""

from __future__ import annotations

import numpy as np

from ..numerics import logsumexp_rows
from ._estep import estimate_log_gaussian_prob, safe_log
from ._gaussian import GaussianFeatures
from ._params import PRBFParams
from .reference import exp_flushed


def log_class_conditional(log_prob: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``log p(x|k) = log sum_j pi_jk N_j(x)`` (001 eq 2 / 15), shape (n, K).

    Parameters
    ----------
    log_prob : ndarray (n, M)
        ``log N_j(x_i)``.
    weights : ndarray (M, K)

    Notes
    -----
    Sparse weights (a split network: every component serves one class) take an exact
    log-sum-exp per class over that class's components, ``n * M`` work in all.  Otherwise
    the result is ``m_i + log(exp(log_prob - m) @ weights)`` (one matrix product); entries that
    underflow (below 1e-280 before the log) are recomputed with an exact log-sum-exp over the
    (rows, M, K) array.  Either way the result is accurate in log space and ``-inf`` only when
    every ``pi_jk N_j(x)`` is exactly zero.
    """
    support = weights > 0
    if support.sum() <= 2 * weights.shape[0]:
        return _log_class_conditional_sparse(log_prob, weights, support)
    m = log_prob.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    e = log_prob - m[:, None]
    exp_flushed(e, out=e)   # subnormal operands make the product ~100x slower
    prob = e @ weights
    low = prob < 1e-280
    with np.errstate(divide="ignore"):
        out = np.log(prob) + m[:, None]
    rows = np.flatnonzero(low.any(axis=1))
    if len(rows):
        a = log_prob[rows][:, :, None] + safe_log(weights)[None]   # (r, M, K)
        am = a.max(axis=1)
        am = np.where(np.isfinite(am), am, 0.0)
        with np.errstate(divide="ignore"):
            exact = am + np.log(np.exp(a - am[:, None, :]).sum(axis=1))
        out[rows] = np.where(low[rows], exact, out[rows])
    return out


def _log_class_conditional_sparse(log_prob: np.ndarray, weights: np.ndarray,
                                  support: np.ndarray) -> np.ndarray:
    """:func:`log_class_conditional`, one class at a time over the components it uses.

    The maximum is taken per class, so the largest term of each sum is ``pi_jk >= tiny``
    and nothing underflows."""
    n, K = log_prob.shape[0], weights.shape[1]
    out = np.full((n, K), -np.inf)
    for k in range(K):
        cols = np.flatnonzero(support[:, k])
        if not len(cols):
            continue
        sub = log_prob[:, cols]
        m = sub.max(axis=1)
        m = np.where(np.isfinite(m), m, 0.0)
        sub -= m[:, None]
        exp_flushed(sub, out=sub)
        with np.errstate(divide="ignore"):
            out[:, k] = m + np.log(sub @ weights[cols, k])
    return out


def _log_prob(X: np.ndarray, params: PRBFParams, features: GaussianFeatures | None
              ) -> np.ndarray:
    return estimate_log_gaussian_prob(X, params.means, params.precisions_cholesky,
                                      params.covariance_type, features=features)


def log_joint_from_log_prob(log_prob: np.ndarray, params: PRBFParams) -> np.ndarray:
    """``log p(k) + log p(x|k)`` (n, K) from precomputed ``log N_j(x_i)`` (n, M) of ``params``."""
    return log_class_conditional(log_prob, params.weights) + safe_log(params.class_priors)


def log_proba_from_log_prob(log_prob: np.ndarray, params: PRBFParams) -> np.ndarray:
    """Log class posteriors (n, K) from precomputed ``log N_j(x_i)`` (n, M) of ``params``."""
    lj = log_joint_from_log_prob(log_prob, params)
    return lj - logsumexp_rows(lj)[:, None]


def predict_log_joint(X: np.ndarray, params: PRBFParams,
                      features: GaussianFeatures | None = None) -> np.ndarray:
    """``log p(k) + log p(x|k)`` (000 eq 15), shape (n, K)."""
    return log_joint_from_log_prob(_log_prob(X, params, features), params)


def predict_log_proba(X: np.ndarray, params: PRBFParams,
                      features: GaussianFeatures | None = None) -> np.ndarray:
    """Log class posteriors ``log p(k|x)`` (001 eq 1 / 000 eq 3), shape (n, K).

    Classes with prior 0 get ``-inf``; rows never contain ``nan``.
    """
    return log_proba_from_log_prob(_log_prob(X, params, features), params)
