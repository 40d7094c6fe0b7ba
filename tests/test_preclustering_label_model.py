"""Nguyen & Smeulders 2004's label model (eqs 13-25): sklearn's logistic regression as a special
case, the structured Newton solve against a dense one, the gradient against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from alprbf.preclustering.label_model import (
    fit_label_model,
    label_terms,
    log_label_posteriors,
    newton_step,
)


def dense_newton_step(centres, tau, grad_a, grad_b, lam):
    """Eq 15 with the Hessian of eq 18 built and solved densely."""
    d = centres.shape[1]
    C1 = np.hstack([centres, np.ones((len(centres), 1))])
    H = (C1 * tau[:, None]).T @ C1
    H[:d, :d] += lam * np.eye(d)
    step = -np.linalg.solve(H, np.append(grad_a, grad_b))
    return step[:d], step[d]


def soft_problem(seed, m=12, K=7, d=5):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(K, d)) * 2
    logits = rng.normal(size=(m, K)) * 2
    log_resp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return centres, log_resp, y


def test_one_cluster_per_point_is_sklearn_logistic_regression():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (15, 4)), rng.normal(1.2, 1, (15, 4))])
    y01 = np.repeat([0, 1], 15)
    lam = 2.5
    hard = np.where(np.eye(len(X)) > 0, 0.0, -np.inf)    # log p(k|x_i): row i in cluster i
    fit = fit_label_model(X, hard, 2.0 * y01 - 1, lam)
    ref = LogisticRegression(C=1 / lam, tol=1e-14, max_iter=10000,
                             solver="newton-cholesky").fit(X, y01)
    assert fit.converged
    np.testing.assert_allclose(fit.coef, ref.coef_[0], atol=1e-6)
    np.testing.assert_allclose(fit.intercept, ref.intercept_[0], atol=1e-6)
    log_pos, log_neg = log_label_posteriors(fit.coef, fit.intercept, X, hard)
    np.testing.assert_allclose(np.exp(log_pos), ref.predict_proba(X)[:, 1], atol=1e-6)
    np.testing.assert_allclose(np.exp(log_pos) + np.exp(log_neg), 1.0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_zero=st.integers(0, 6), lam=st.floats(0.1, 100.0),
       d=st.integers(1, 12))
def test_structured_newton_solve_equals_dense_solve(seed, n_zero, lam, d):
    rng = np.random.default_rng(seed)
    K = 7
    centres = rng.normal(size=(K, d)) * rng.uniform(0.1, 50)
    tau = rng.exponential(size=K)
    tau[rng.choice(K, n_zero, replace=False)] = 0.0          # clusters with zero weight
    grad_a, grad_b = rng.normal(size=d), float(rng.normal())
    ra, rb = dense_newton_step(centres, tau, grad_a, grad_b, lam)
    scale = np.abs(np.append(ra, rb)).max()
    for gram in (None, centres @ centres.T):
        da, db = newton_step(centres, tau, grad_a, grad_b, lam, gram=gram)
        np.testing.assert_allclose(da, ra, atol=1e-8 * scale, rtol=1e-7)
        assert db == pytest.approx(rb, rel=1e-7, abs=1e-8 * scale)


def test_structured_solve_at_a_real_iterate_and_high_dimension():
    centres, log_resp, y = soft_problem(1, K=9, d=60)         # d > K: the Woodbury case
    a = np.random.default_rng(2).normal(size=60) * 0.1
    t = label_terms(a, 0.3, centres, log_resp, y, 80.0)
    da, db = newton_step(centres, t.tau, t.grad_a, t.grad_b, 80.0)
    ra, rb = dense_newton_step(centres, t.tau, t.grad_a, t.grad_b, 80.0)
    np.testing.assert_allclose(da, ra, rtol=1e-9, atol=1e-12)
    assert db == pytest.approx(rb, rel=1e-9)


def test_uncentred_columns_as_printed_give_a_different_step():
    """The erratum: eqs 21-24 with columns sqrt(tau) c_k do not solve eq 15."""
    centres, log_resp, y = soft_problem(3)
    t = label_terms(np.zeros(5), 0.0, centres, log_resp, y, 1.0)
    z = t.tau @ centres / t.tau.sum()
    D = centres.T * np.sqrt(t.tau)
    G = D @ D.T + np.eye(5)
    v = t.grad_a - z * t.grad_b
    printed = -np.linalg.solve(G, v)
    ra, _ = dense_newton_step(centres, t.tau, t.grad_a, t.grad_b, 1.0)
    assert np.abs(printed - ra).max() > 1e-3
    da, _ = newton_step(centres, t.tau, t.grad_a, t.grad_b, 1.0)
    np.testing.assert_allclose(da, ra, rtol=1e-9)


def objective(a, b, centres, log_resp, y, lam):
    """Eq 14 by a plain loop over the labeled rows and clusters."""
    total = 0.5 * lam * a @ a
    for i in range(len(y)):
        total -= np.log(sum(np.exp(log_resp[i, k]) * expit(y[i] * (centres[k] @ a + b))
                            for k in range(len(centres))))
    return total


def test_gradient_and_objective_against_a_loop_and_finite_differences():
    centres, log_resp, y = soft_problem(4)
    a, b, lam = np.random.default_rng(5).normal(size=5) * 0.3, -0.2, 3.0
    t = label_terms(a, b, centres, log_resp, y, lam)
    assert t.objective == pytest.approx(objective(a, b, centres, log_resp, y, lam), rel=1e-12)
    h = 1e-6
    num = [(objective(a + h * e, b, centres, log_resp, y, lam)
            - objective(a - h * e, b, centres, log_resp, y, lam)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(t.grad_a, num, atol=1e-6)
    num_b = (objective(a, b + h, centres, log_resp, y, lam)
             - objective(a, b - h, centres, log_resp, y, lam)) / (2 * h)
    assert t.grad_b == pytest.approx(num_b, abs=1e-6)
    assert np.all(t.tau >= 0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(0.05, 100.0))
def test_damped_newton_reaches_a_stationary_point(seed, lam):
    centres, log_resp, y = soft_problem(seed)
    fit = fit_label_model(centres, log_resp, y, lam, max_iter=500, tol=1e-14)
    t = label_terms(fit.coef, fit.intercept, centres, log_resp, y, lam)
    grad = np.append(t.grad_a, t.grad_b)
    assert np.abs(grad).max() < 1e-5
    assert fit.objective <= label_terms(np.zeros(5), 0.0, centres, log_resp, y, lam).objective


def test_saturated_memberships_do_not_break_the_fit():
    """Far-apart centres: every p(y|k) is 0 or 1 in floating point away from the start."""
    rng = np.random.default_rng(6)
    centres = rng.normal(size=(4, 3)) * 1e4
    log_resp = np.log(np.full((6, 4), 0.25))
    y = np.array([1.0, -1, 1, -1, 1, 1])
    fit = fit_label_model(centres, log_resp, y, 80.0)
    assert np.all(np.isfinite(fit.coef)) and np.isfinite(fit.objective)


@pytest.mark.parametrize("bad", [{"lam": 0.0}, {"lam": -1.0}, {"max_iter": -1}, {"tol": -1.0}])
def test_bad_parameters_raise_value_error(bad):
    centres, log_resp, y = soft_problem(0)
    kw = {"lam": 1.0} | bad
    with pytest.raises(ValueError, match="fit_label_model: invalid"):
        fit_label_model(centres, log_resp, y, **kw)


def test_labels_must_be_plus_minus_one():
    centres, log_resp, _ = soft_problem(0)
    with pytest.raises(ValueError, match="-1 or \\+1"):
        fit_label_model(centres, log_resp, np.zeros(12), 1.0)


def test_leaving_negligible_clusters_out_of_the_hessian_keeps_the_solution():
    """tau_rtol changes the path of Newton, not the stationary point (the gradient is exact)."""
    centres, log_resp, y = soft_problem(7, K=9)
    log_resp = log_resp.copy()
    log_resp[:, 7:] -= 300.0          # two clusters with memberships like exp(-300), not zero
    exact = fit_label_model(centres, log_resp, y, 2.0, tau_rtol=0.0, max_iter=500)
    pruned = fit_label_model(centres, log_resp, y, 2.0, tau_rtol=1e-12, max_iter=500)
    assert exact.converged and pruned.converged
    np.testing.assert_allclose(pruned.coef, exact.coef, atol=1e-6)
    assert pruned.intercept == pytest.approx(exact.intercept, abs=1e-6)


def test_structured_solve_with_the_gram_matrix_on_grey_level_scale():
    """Centres like raw pixels (0..255, d = 200): no loss from forming D^T D via C C^T."""
    rng = np.random.default_rng(8)
    centres = rng.integers(0, 256, (30, 200)).astype(float)
    tau = rng.exponential(size=30) * 0.1
    tau[:5] = 0.0
    grad_a, grad_b = rng.normal(size=200) * 100, 3.0
    ra, rb = dense_newton_step(centres, tau, grad_a, grad_b, 80.0)
    da, db = newton_step(centres, tau, grad_a, grad_b, 80.0, gram=centres @ centres.T)
    np.testing.assert_allclose(da, ra, rtol=1e-7, atol=1e-9 * np.abs(ra).max())
    assert db == pytest.approx(rb, rel=1e-7)


def test_posteriors_against_log_space_sums_including_underflow():
    centres, log_resp, _ = soft_problem(9, m=30)
    log_resp = log_resp.copy()
    log_resp[:5] = np.log(np.eye(7)[np.arange(5)] + 1e-300) - 5.0   # rows near underflow
    a, b = np.random.default_rng(9).normal(size=5) * 40, 3.0         # saturated p(y|k)
    log_pos, log_neg = log_label_posteriors(a, b, centres, log_resp)
    t = centres @ a + b
    ref_pos = np.logaddexp.reduce(log_resp - np.logaddexp(0, -t)[None, :], axis=1)
    ref_neg = np.logaddexp.reduce(log_resp - np.logaddexp(0, t)[None, :], axis=1)
    np.testing.assert_allclose(log_pos, ref_pos, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(log_neg, ref_neg, rtol=1e-10, atol=1e-10)
    assert np.all(np.isfinite(log_pos)) and np.all(np.isfinite(log_neg))
