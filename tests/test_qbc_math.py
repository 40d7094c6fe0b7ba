"""Committee sampling (Constantinopoulos & Likas 2008, eqs 40-49) and KL-to-the-mean disagreement
(eqs 50-51)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import logsumexp
from scipy.stats import entropy

from alprbf.prbf.qbc import (
    committee_posterior,
    component_statistics,
    kl_to_mean,
    sample_member,
)


def _toy(seed=0, n=60, d=3, M=4, K=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(0.5, 2.0, d) + 0.3
    y = rng.integers(0, K, n)
    # p(j | x, k): a random distribution over components for every labeled row
    pj = rng.dirichlet(np.ones(M), size=n)
    resp = pj
    counts = np.zeros((M, K))
    for i in range(n):
        counts[:, y[i]] += pj[i]
    return X, y, resp, counts


def test_statistics_match_eqs_46_to_49_by_loops():
    X, y, resp, counts = _toy()
    st_ = component_statistics(X, resp, counts, reg_covar=0.0)
    M, d = resp.shape[1], X.shape[1]
    for j in range(M):
        eta = sum(counts[j, k] for k in range(counts.shape[1]))  # eq 48
        assert st_.eta[j] == pytest.approx(eta)
        for dd in range(d):
            mu = sum(resp[i, j] * X[i, dd] for i in range(len(X))) / eta  # eq 46
            var = sum(resp[i, j] * (X[i, dd] - mu) ** 2 for i in range(len(X))) / eta  # eq 47
            assert st_.means[j, dd] == pytest.approx(mu)
            assert st_.variances[j, dd] == pytest.approx(var)


def test_hyperparameters_are_eqs_43_to_45_with_unit_priors():
    X, y, resp, counts = _toy(1)
    s = component_statistics(X, resp, counts, reg_covar=0.0)
    post = committee_posterior(s)
    eta = counts.sum(1)[:, None]
    np.testing.assert_allclose(post.mean_loc, eta * s.means / (eta + s.variances))  # eq 43
    np.testing.assert_allclose(1.0 / post.mean_var, 1.0 + eta / s.variances)
    np.testing.assert_allclose(post.precision_shape, 1.0 + counts.sum(1) / 2)  # eq 44
    np.testing.assert_allclose(post.precision_rate, 1.0 + eta / 2 * s.variances)
    np.testing.assert_allclose(post.dirichlet, 1.0 + counts)  # eq 45


def test_posteriors_equal_numerical_bayes_on_a_grid():
    """Independent oracle: prior x weighted likelihood, normalised on a grid."""
    rng = np.random.default_rng(3)
    x = rng.normal(1.5, 0.7, size=12)
    w = rng.uniform(0.2, 1.0, size=12)
    counts = np.array([[w.sum()]])
    s = component_statistics(x[:, None], w[:, None], counts, reg_covar=0.0)
    post = committee_posterior(s)
    mu_hat, var_hat = s.means[0, 0], s.variances[0, 0]
    # mean | variance fixed at its ML estimate, prior N(0, 1)
    grid = np.linspace(-3, 5, 40001)
    logp = -0.5 * grid**2 + np.sum(w[:, None] * (-(x[:, None] - grid) ** 2 / (2 * var_hat)),
                                   axis=0)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    m_num = np.sum(p * grid)
    v_num = np.sum(p * (grid - m_num) ** 2)
    assert post.mean_loc[0, 0] == pytest.approx(m_num, rel=1e-6)
    assert post.mean_var[0, 0] == pytest.approx(v_num, rel=1e-4)
    # precision | mean fixed at its ML estimate, prior Gamma(1, rate 1)
    tau = np.linspace(1e-6, 30, 200001)
    logq = -tau + np.sum(w[:, None] * (0.5 * np.log(tau) - tau * (x[:, None] - mu_hat) ** 2 / 2),
                         axis=0)
    q = np.exp(logq - logq.max())
    q /= q.sum()
    t_mean = np.sum(q * tau)
    assert post.precision_shape[0] / post.precision_rate[0, 0] == pytest.approx(t_mean, rel=1e-4)


def test_empty_component_falls_back_to_the_prior():
    X = np.random.default_rng(0).normal(size=(10, 2))
    resp = np.zeros((10, 2))
    resp[:, 0] = 1.0
    counts = np.array([[6.0, 4.0], [0.0, 0.0]])
    post = committee_posterior(component_statistics(X, resp, counts))
    np.testing.assert_allclose(post.mean_loc[1], 0.0)
    np.testing.assert_allclose(post.mean_var[1], 1.0)
    assert post.precision_shape[1] == 1.0
    np.testing.assert_allclose(post.precision_rate[1], 1.0)
    np.testing.assert_allclose(post.dirichlet[1], 1.0)


@pytest.mark.slow
def test_sampled_parameters_follow_eqs_40_to_42():
    """Moments over many draws match the Normal / Gamma / Dirichlet posteriors."""
    X, y, resp, counts = _toy(2, n=30, d=2, M=3, K=2)
    s = component_statistics(X, resp, counts, reg_covar=0.0)
    post = committee_posterior(s)
    rng = np.random.default_rng(7)
    n_draws = 20000
    priors = np.array([0.4, 0.6])
    draws = [sample_member(post, priors, rng, reg_covar=0.0) for _ in range(n_draws)]
    mu = np.stack([p.means for p in draws])
    tau = np.stack([1.0 / p.covariances for p in draws])
    pi = np.stack([p.weights for p in draws])
    se = lambda v: np.sqrt(v / n_draws)  # noqa: E731
    # Normal (eq 40): mean m, variance s
    assert np.all(np.abs(mu.mean(0) - post.mean_loc) < 5 * se(post.mean_var))
    np.testing.assert_allclose(mu.var(0), post.mean_var, rtol=0.05)
    # Gamma (eq 41): mean alpha / beta, variance alpha / beta^2
    a, b = post.precision_shape[:, None], post.precision_rate
    assert np.all(np.abs(tau.mean(0) - a / b) < 5 * se(a / b**2))
    np.testing.assert_allclose(tau.var(0), a / b**2, rtol=0.06)
    # Dirichlet per class (eq 42): mean theta / theta0,
    # variance theta (theta0 - theta) / (theta0^2 (theta0 + 1))
    th = post.dirichlet
    th0 = th.sum(0, keepdims=True)
    dvar = th * (th0 - th) / (th0**2 * (th0 + 1))
    assert np.all(np.abs(pi.mean(0) - th / th0) < 5 * se(dvar))
    np.testing.assert_allclose(pi.var(0), dvar, rtol=0.06)
    np.testing.assert_allclose(pi.sum(1), 1.0)
    assert all(p.covariance_type == "diag" for p in draws[:3])
    np.testing.assert_allclose(draws[0].precisions_cholesky, 1 / np.sqrt(draws[0].covariances))
    np.testing.assert_array_equal(draws[0].class_priors, priors)


def test_sampling_is_deterministic_under_a_seed():
    X, y, resp, counts = _toy(4)
    post = committee_posterior(component_statistics(X, resp, counts))
    a = sample_member(post, np.ones(3) / 3, np.random.default_rng(5))
    b = sample_member(post, np.ones(3) / 3, np.random.default_rng(5))
    np.testing.assert_array_equal(a.means, b.means)
    np.testing.assert_array_equal(a.weights, b.weights)


def test_optional_class_prior_sampling_is_dirichlet():
    X, y, resp, counts = _toy(5, K=3)
    post = committee_posterior(component_statistics(X, resp, counts))
    rng = np.random.default_rng(0)
    n_k = np.array([3.0, 10.0, 20.0])
    pk = np.stack([sample_member(post, np.ones(3) / 3, rng, expected_class_counts=n_k)
                   .class_priors for _ in range(5000)])
    th = 1 + n_k
    np.testing.assert_allclose(pk.mean(0), th / th.sum(), atol=0.01)


def _kl_direct(P):
    pbar = P.mean(0)
    return np.array([np.mean([entropy(P[c, i], pbar[i]) for c in range(P.shape[0])])
                     for i in range(P.shape[1])])


def test_kl_to_mean_matches_direct_computation():
    P = np.array([[[0.7, 0.2, 0.1], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]],
                  [[0.1, 0.8, 0.1], [0.5, 0.5, 0.0], [0.0, 1.0, 0.0]],
                  [[0.3, 0.3, 0.4], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]])
    with np.errstate(divide="ignore"):
        got = kl_to_mean(np.log(P))
    np.testing.assert_allclose(got, _kl_direct(P), rtol=1e-12, atol=1e-15)
    assert got[1] == 0.0  # identical members: no disagreement
    np.testing.assert_allclose(got[2], np.log(3))  # three certain, different votes


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, (4, 5, 3), elements=st.floats(0, 1, allow_subnormal=False)),
       arrays(np.bool_, (4, 5, 3)))
def test_kl_to_mean_finite_with_zero_probabilities(raw, zero):
    w = np.where(zero, 0.0, raw)
    w[..., 0] = np.where(w.sum(-1) == 0, 1.0, w[..., 0])  # every row a valid distribution
    P = w / w.sum(-1, keepdims=True)
    with np.errstate(divide="ignore"):
        logP = np.log(P)
    got = kl_to_mean(logP)
    assert np.all(np.isfinite(got)) and np.all(got >= 0)
    # generalised Jensen-Shannon bound: at most log C
    assert np.all(got <= np.log(4) + 1e-12)
    np.testing.assert_allclose(got, _kl_direct(P), rtol=1e-9, atol=1e-12)


def test_kl_to_mean_survives_underflowing_log_posteriors():
    logP = np.array([[[-2000.0, 0.0]], [[0.0, -3000.0]]])
    got = kl_to_mean(logP)
    np.testing.assert_allclose(got, np.log(2))
    # equivalent normalised input in a shifted representation
    shifted = logP - logsumexp(logP, axis=2, keepdims=True)
    np.testing.assert_allclose(kl_to_mean(shifted), got)
