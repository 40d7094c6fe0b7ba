"""Semi-supervised PRBF (000 eqs 17-33) and the registered PRBF learners.

Oracles: brute-force joint posteriors over (n, M, K) and explicit M-step sums
(``test_prbf_core_oracles``), a hand-worked 2-D split, and the supervised reference EM.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alprbf.models import MODELS
from alprbf.prbf import (
    PRBF,
    PRBFParams,
    SemiSupervisedPRBF,
    compute_precision_cholesky,
    e_step,
    initialize_params,
    joint_log_resp,
    m_step,
    prepare_data,
    run_em,
    split_params,
)

from .prbf_data import random_params
from .test_prbf_core_oracles import brute_e_step, brute_m_step, full_cov

CTS = ("full", "diag", "spherical")


def _data(seed, n=60, d=2, K=3, frac_unlabeled=0.5):
    rng = np.random.default_rng(seed)
    y = rng.integers(K, size=n)
    X = rng.normal(size=(n, d)) + 2.0 * np.eye(K, d)[y]
    codes = np.where(rng.random(n) < frac_unlabeled, -1, y)
    return X, y, codes


@pytest.mark.parametrize("ct", CTS)
def test_ssl_e_and_m_steps_equal_brute_force(ct):
    X, _, codes = _data(1)
    p = random_params(np.random.default_rng(1), 4, 2, 3, ct, X)
    data = prepare_data(X, codes.astype(float) * np.where(codes < 0, np.nan, 1.0), 3, ct)
    assert data.n_unlabeled > 0 and data.n_labeled > 0
    est = e_step(data, p)
    joint, ll = brute_e_step(X, codes, p.means, full_cov(p.covariances, ct, 2), p.weights,
                             p.class_priors)
    assert est.loglik == pytest.approx(ll, rel=1e-12)                       # eq 17
    np.testing.assert_allclose(est.resp, joint.sum(axis=2), atol=1e-12)     # sum_k p(j,k|x)
    np.testing.assert_allclose(est.counts, joint.sum(axis=0), atol=1e-10)   # sum_x p(j,k|x)
    unl = data.unlabeled
    np.testing.assert_allclose(np.exp(joint_log_resp(est, p, unl)), joint[unl], atol=1e-12)
    new = m_step(data, est, p, reg_covar=1e-6)                              # eqs 26-29
    bm, bc, bw, bp = brute_m_step(X, codes, joint, 1e-6, ct, True, p.class_priors)
    np.testing.assert_allclose(new.means, bm, atol=1e-10)
    np.testing.assert_allclose(new.covariances, bc, atol=1e-10)
    np.testing.assert_allclose(new.weights, bw, atol=1e-12)
    np.testing.assert_allclose(new.class_priors, bp, atol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), ct=st.sampled_from(CTS), M=st.integers(1, 4),
       K=st.integers(1, 3), frac=st.sampled_from([0.2, 0.6, 0.9]))
def test_ssl_joint_loglik_never_decreases(seed, ct, M, K, frac):
    X, _, codes = _data(seed, n=40, K=K, frac_unlabeled=frac)
    if not np.any(codes >= 0):
        codes[0] = 0
    data = prepare_data(X, codes, K, ct)
    res = run_em(data, initialize_params(data, M, reg_covar=1e-10, random_state=seed),
                 tol=0.0, max_iter=25, reg_covar=1e-10)
    h = res.loglik_history
    assert np.all(np.isfinite(h))
    assert np.all(np.diff(h) >= -1e-7 * (1.0 + np.abs(h[:-1])))
    np.testing.assert_allclose(res.params.class_priors.sum(), 1.0)
    np.testing.assert_allclose(res.params.weights.sum(axis=0), 1.0)


@pytest.mark.parametrize("ct", CTS)
def test_ssl_without_unlabeled_rows_is_the_supervised_em(ct):
    """Every iteration equals an independent supervised EM (001 eqs 7-10, brute force)."""
    X, y, _ = _data(2, n=45)
    data = prepare_data(X, y.astype(float), 3, ct)            # float labels, no nan
    p = initialize_params(data, 3, random_state=0)
    ref = p
    for _ in range(4):
        est = e_step(data, p)
        p = m_step(data, est, p, reg_covar=1e-6)              # update_priors=None (auto)
        joint, _ = brute_e_step(X, y, ref.means, full_cov(ref.covariances, ct, 2), ref.weights,
                                ref.class_priors)
        bm, bc, bw, bp = brute_m_step(X, y, joint, 1e-6, ct, False, ref.class_priors)
        ref = PRBFParams(bm, bc, compute_precision_cholesky(bc, ct), bw, bp, ct)
        np.testing.assert_allclose(p.means, ref.means, atol=1e-9)
        np.testing.assert_allclose(p.covariances, ref.covariances, atol=1e-9)
        np.testing.assert_allclose(p.weights, ref.weights, atol=1e-10)
        np.testing.assert_array_equal(p.class_priors, np.bincount(y, minlength=3) / len(y))
    # and the estimators agree exactly
    a = SemiSupervisedPRBF(3, covariance_type=ct, random_state=5).fit(X, y.astype(float))
    b = PRBF(3, covariance_type=ct, random_state=5).fit(X, y)
    for f in ("means", "covariances", "weights", "class_priors"):
        np.testing.assert_array_equal(getattr(a.params_, f), getattr(b.params_, f))
    np.testing.assert_array_equal(a.loglik_history_, b.loglik_history_)


def test_ssl_split_hand_worked_2d():
    """One component, priors (1/2, 1/2): p(1, k|x) = 1/2 for unlabeled x (000 eqs 30-32)."""
    X = np.array([[0.0, 0.0], [2.0, 0.0],      # class 0
                  [4.0, 0.0],                  # class 1
                  [0.0, 4.0], [4.0, 4.0]])     # unlabeled
    codes = np.array([0, 0, 1, -1, -1])
    cov = np.array([np.eye(2)])
    p = PRBFParams(np.array([[2.0, 1.6]]), cov, compute_precision_cholesky(cov, "full"),
                   np.ones((1, 2)), np.array([0.5, 0.5]), "full")
    data = prepare_data(X, codes, 2, "full")
    sp = split_params(data, p, e_step(data, p), reg_covar=0.0)
    np.testing.assert_array_equal(sp.parent, [0, 0])
    np.testing.assert_array_equal(sp.component_class, [0, 1])
    # class 0: weights 1, 1, 1/2, 1/2 on rows 0, 1, 3, 4 -> mass 3
    np.testing.assert_allclose(sp.params.means[0], [4 / 3, 4 / 3], atol=1e-12)
    np.testing.assert_allclose(sp.params.covariances[0], [[20 / 9, 8 / 9], [8 / 9, 32 / 9]],
                               atol=1e-12)
    # class 1: weights 1, 1/2, 1/2 on rows 2, 3, 4 -> mass 2
    np.testing.assert_allclose(sp.params.means[1], [3.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(sp.params.covariances[1], [[3.0, -2.0], [-2.0, 4.0]], atol=1e-12)
    np.testing.assert_allclose(sp.params.weights, np.eye(2), atol=1e-12)     # eq 32


def test_ssl_estimator_uses_unlabeled_rows_and_updates_priors():
    X, y, codes = _data(3, n=200, frac_unlabeled=0.8)
    ynan = np.where(codes < 0, np.nan, codes.astype(float))
    s = SemiSupervisedPRBF(3, random_state=0, split=True).fit(X, ynan)
    sup = PRBF(3, random_state=0).fit(X[codes >= 0], codes[codes >= 0])
    labeled_share = np.bincount(codes[codes >= 0], minlength=3) / np.sum(codes >= 0)
    assert not np.allclose(s.em_params_.class_priors, labeled_share)   # eq 29 moved them
    assert s.score(X, y) > 0.7 and sup.score(X, y) > 0.5
    assert np.all((s.params_.weights > 0).sum(axis=1) == 1)           # split components
    with pytest.raises(ValueError, match="labeled"):
        SemiSupervisedPRBF(2).fit(X, np.full(len(X), np.nan))


# ---------------------------------------------------------------- registered learners

def test_learners_with_few_or_no_labels():
    X, _, _ = _data(5, n=30)
    y = np.full(len(X), np.nan)
    learner = MODELS["prbf"](n_classes=3, random_state=0, n_components=5)
    learner.fit(X, y)
    np.testing.assert_allclose(learner.predict_proba(X), 1 / 3)
    y[:2] = [0, 1]                                   # two labels, five components requested
    learner.fit(X, y)
    assert learner.model_size() == 2
    assert np.all(np.isfinite(learner.predict_log_proba(X)[:, :2]))
