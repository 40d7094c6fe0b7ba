"""Brute-force reference formulas for the PRBF tests (helper module, no tests of its own).

Deliberately written the slow, obvious way, independent of alprbf's vectorised code.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats import multivariate_normal


def full_cov(cov: np.ndarray, covariance_type: str, d: int) -> np.ndarray:
    """(M, d, d) covariance matrices from any covariance type."""
    if covariance_type == "full":
        return cov
    if covariance_type == "diag":
        return np.array([np.diag(c) for c in cov])
    return np.array([c * np.eye(d) for c in cov])


def log_gauss(X, means, covs):
    """(n, M) log N(x_i; mu_j, Sigma_j) with scipy."""
    return np.column_stack([multivariate_normal(m, c).logpdf(X).reshape(-1)
                            for m, c in zip(means, covs, strict=True)])


def brute_e_step(X, y, means, covs, weights, priors):
    """Joint posteriors p(j, k|x) (n, M, K) by 000 eqs 21-25 and the log-likelihood eq 17."""
    n = len(X)
    M, K = weights.shape
    lg = log_gauss(X, means, covs)
    joint = np.zeros((n, M, K))
    ll = 0.0
    for i in range(n):
        with np.errstate(divide="ignore"):
            a = lg[i][:, None] + np.log(weights) + np.log(priors)[None]   # log p(j, k, x)
        if y[i] >= 0:
            k = y[i]
            lk = logsumexp(a[:, k])
            joint[i, :, k] = np.exp(a[:, k] - lk)
            ll += lk
        else:
            lx = logsumexp(a)
            joint[i] = np.exp(a - lx)
            ll += lx
    return joint, ll


def brute_m_step(X, y, joint, reg_covar, covariance_type, update_priors, priors):
    """000 eqs 26-29 (001 eqs 8-10 when there are no unlabeled rows) with explicit sums."""
    n, d = X.shape
    _, M, K = joint.shape
    r = joint.sum(axis=2)
    means = np.zeros((M, d))
    covs = np.zeros((M, d, d))
    for j in range(M):
        s = r[:, j].sum()
        means[j] = (r[:, j][:, None] * X).sum(axis=0) / s
        diff = X - means[j]
        covs[j] = sum(r[i, j] * np.outer(diff[i], diff[i]) for i in range(n)) / s
        covs[j] += reg_covar * np.eye(d)
    if covariance_type == "diag":
        covs_out = np.array([np.diag(c) for c in covs])
    elif covariance_type == "spherical":
        covs_out = np.array([np.mean(np.diag(c)) for c in covs])
    else:
        covs_out = covs
    Nk = np.array([np.sum(y == k) for k in range(K)], dtype=float)
    unl = y < 0
    weights = np.zeros((M, K))
    for k in range(K):
        denom = Nk[k] + joint[unl][:, :, k].sum()
        weights[:, k] = joint[:, :, k].sum(axis=0) / denom
    if update_priors:
        new_priors = np.array([(Nk[k] + joint[unl][:, :, k].sum()) / n for k in range(K)])
    else:
        new_priors = priors
    return means, covs_out, weights, new_priors


def class_loglik(X, y, means, covs, weights):
    """Per-class sum_{x in X_k} log p(x|k) (001 eq 6 split by class), shape (K,)."""
    lg = log_gauss(X, means, covs)
    K = weights.shape[1]
    out = np.zeros(K)
    with np.errstate(divide="ignore"):
        lw = np.log(weights)
    for k in range(K):
        rows = y == k
        out[k] = np.sum(logsumexp(lg[rows] + lw[:, k], axis=1))
    return out
