"""Constrained PRBF (Titsias & Likas 2001, eqs 3-14)."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.datasets import load_iris, load_wine

from alprbf.prbf._data import prepare_data
from alprbf.prbf._em import initialize_params
from alprbf.prbf._predict import predict_log_proba
from alprbf.prbf.constrained import (
    ConstrainedPRBF,
    constrained_em,
    initial_sharing,
    update_sharing,
)
from alprbf.prbf.estimators import PRBF
from tests.prbf_data import standardized


@pytest.mark.parametrize("ct", ["full", "diag", "spherical"])
def test_fixed_uniform_sharing_is_plain_prbf(ct):
    X, y = standardized()
    c = ConstrainedPRBF(4, covariance_type=ct, update_r=False, random_state=3, n_init=2).fit(X, y)
    p = PRBF(4, covariance_type=ct, random_state=3, n_init=2).fit(X, y)
    assert np.allclose(c.params_.means, p.params_.means)
    assert np.allclose(c.params_.covariances, p.params_.covariances)
    assert np.allclose(c.params_.weights, p.params_.weights)
    assert np.allclose(c.sharing_, 1 / 3)
    # objective = PRBF eq 6 - N log K; the core's history is eq 17 = eq 6 + sum_k N_k log p(k)
    counts = np.bincount(y)
    const = counts @ np.log(counts / counts.sum())
    assert np.allclose(c.objective_history_, p.loglik_history_ - const - len(y) * np.log(3))
    assert np.array_equal(c.predict(X), p.predict(X))


@pytest.mark.parametrize("loader,ct", [(load_iris, "full"), (load_wine, "diag"),
                                       (load_wine, "spherical")])
def test_objective_is_non_decreasing(loader, ct):
    X, y = standardized(loader)
    c = ConstrainedPRBF(6, covariance_type=ct, random_state=0, tol=0.0, max_iter=60).fit(X, y)
    h = c.objective_history_
    assert len(h) > 5
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h).max())
    assert np.allclose(c.sharing_.sum(1), 1) and np.all(c.sharing_ >= 0)
    assert np.allclose(c.params_.weights.sum(0), 1)


def test_one_em_step_matches_naive_equations():
    X, y = standardized()
    X = X[:, :2]
    data = prepare_data(X, y, 3, "full")
    p0 = initialize_params(data, 3, random_state=1)
    rng = np.random.default_rng(0)
    r0 = rng.dirichlet(np.ones(3), size=3)  # arbitrary r with rows summing to 1
    pi0 = rng.dirichlet(np.ones(3), size=3).T  # columns sum to 1
    from alprbf.prbf._em import with_params
    p0 = with_params(p0, weights=pi0)
    res = constrained_em(data, p0, r0, max_iter=1, tol=0.0)
    f = np.column_stack([multivariate_normal(p0.means[j], p0.covariances[j]).pdf(X)
                         for j in range(3)])
    num = r0.T[y] * pi0.T[y] * f  # (n, M): r_jk pi_jk f_j(x) at each row's class
    Phi = num / num.sum(1, keepdims=True)                          # eq 8
    mu = Phi.T @ X / Phi.sum(0)[:, None]                            # eq 10
    S = np.array([(Phi[:, j, None] * (X - mu[j])).T @ (X - mu[j]) / Phi[:, j].sum()
                  for j in range(3)])                               # eq 11
    Nk = np.bincount(y)
    pi = np.array([[Phi[y == k, j].sum() / Nk[k] for k in range(3)] for j in range(3)])  # 12
    r = np.array([[Phi[y == k, j].sum() for k in range(3)] for j in range(3)])
    r /= r.sum(1, keepdims=True)                                    # eq 13
    assert np.allclose(res.params.means, mu)
    assert np.allclose(res.params.covariances, S + 1e-6 * np.eye(2))
    assert np.allclose(res.params.weights, pi)
    assert np.allclose(res.sharing, r)
    assert np.allclose(update_sharing(pi, Nk.astype(float)), r)     # eq 14 == eq 13
    # objective before the step: eq 6 with phi (eq 3)
    assert np.isclose(res.objective_history[0], np.log(num.sum(1)).sum())


def test_prediction_uses_unconstrained_densities_eq_1():
    X, y = standardized(load_wine)
    c = ConstrainedPRBF(5, covariance_type="diag", random_state=0).fit(X, y)
    assert np.allclose(c.predict_log_proba(X), predict_log_proba(X, c.params_))
    assert np.allclose(c.params_.class_priors, np.bincount(y) / len(y))
    assert c.score(X, y) > 0.9
    assert not np.allclose(c.sharing_, 1 / 3)


def test_initial_sharing_options():
    pi = np.array([[0.5, 0.0], [0.5, 1.0]])
    assert np.allclose(initial_sharing(pi, np.array([2.0, 2.0])), 0.5)
    assert np.allclose(initial_sharing(pi, np.array([2.0, 2.0]), "proportional"),
                       [[1.0, 0.0], [1 / 3, 2 / 3]])
    assert np.allclose(update_sharing(np.zeros((1, 2)), np.ones(2)), 0.5)
