"""PRBF numerical core: Gaussian densities, supervised E/M steps, EM loop, split, prediction.

Oracles: sklearn's GaussianMixture private steps (one class), brute-force formulas from
``test_prbf_core_oracles`` (scipy densities, explicit loops), hand-worked 2-D cases.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture

from alprbf.prbf import (
    PRBF,
    GaussianFeatures,
    PRBFParams,
    PRBFSplit,
    compute_precision_cholesky,
    e_step,
    estimate_gaussian_parameters,
    estimate_log_gaussian_prob,
    fit_em,
    has_converged,
    initialize_params,
    log_class_conditional,
    m_step,
    predict_log_proba,
    prepare_data,
    run_em,
    split_params,
)
from alprbf.prbf._gaussian import gaussian_parameters_and_precisions, weighted_moments

from .prbf_data import random_params
from .test_prbf_core_oracles import (
    brute_e_step,
    brute_m_step,
    class_loglik,
    full_cov,
    log_gauss,
)

CTS = ("full", "diag", "spherical")


def _blobs(seed, n=120, d=3, K=2, shift=2.5):
    rng = np.random.default_rng(seed)
    y = rng.integers(K, size=n)
    A = rng.normal(size=(d, d)) * 0.4 + np.eye(d)
    X = rng.normal(size=(n, d)) @ A + shift * np.eye(K, d)[y] + np.array([3.0, -1.0, 0.5])[:d]
    return X, y


# ---------------------------------------------------------------- Gaussian building blocks

@pytest.mark.parametrize("ct", CTS)
def test_log_gaussian_prob_matches_scipy(ct):
    rng = np.random.default_rng(1)
    X, _ = _blobs(1, n=50)
    p = random_params(rng, 4, 3, 2, ct, X, jitter=0.1)
    got = estimate_log_gaussian_prob(X, p.means, p.precisions_cholesky, ct)
    want = log_gauss(X, p.means, full_cov(p.covariances, ct, 3))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_full_features_blockwise_equals_cached():
    X, _ = _blobs(2, n=70)
    rng = np.random.default_rng(2)
    p = random_params(rng, 3, 3, 2, "full", X, jitter=0.1)
    cached = GaussianFeatures(X, "full")
    blocked = GaussianFeatures(X, "full", max_bytes=0)
    blocked.block_rows = 16                      # force several blocks
    assert cached.ZT is not None and blocked.ZT is None
    a = estimate_log_gaussian_prob(None, p.means, p.precisions_cholesky, "full", features=cached)
    b = estimate_log_gaussian_prob(None, p.means, p.precisions_cholesky, "full", features=blocked)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    resp = rng.dirichlet(np.ones(3), size=len(X))
    for u, v in zip(estimate_gaussian_parameters(None, resp, 1e-6, "full", features=cached),
                    estimate_gaussian_parameters(None, resp, 1e-6, "full", features=blocked),
                    strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ct", CTS)
@pytest.mark.parametrize("cached", [True, False])
def test_weighted_moments_equal_direct_sums(ct, cached):
    X, _ = _blobs(7, n=50)
    rng = np.random.default_rng(7)
    extra = rng.normal(size=(2, len(X)))
    f = GaussianFeatures(X, ct, extra=extra, max_bytes=2**30 if cached else 0)
    f.block_rows = 16
    assert (f.weights_T is not None) == cached
    np.testing.assert_array_equal(f.extra, extra)
    assert not cached or np.shares_memory(f.extra, f.weights_T)   # stored once
    resp = rng.dirichlet(np.ones(4), size=len(X))
    for r in (resp, np.asfortranarray(resp)):
        S = weighted_moments(f, r)
        Xc = X - X.mean(axis=0)
        if ct == "full":
            iu = np.triu_indices(X.shape[1])
            quad = Xc[:, iu[0]] * Xc[:, iu[1]]
        elif ct == "diag":
            quad = Xc * Xc
        else:
            quad = np.sum(Xc * Xc, axis=1, keepdims=True)
        rows = np.hstack([quad, Xc, np.ones((len(X), 1)), np.sum(Xc * Xc, axis=1)[:, None],
                          extra.T])
        direct = np.array([[np.sum(r[:, j] * rows[:, c]) for c in range(rows.shape[1])]
                           for j in range(r.shape[1])])
        np.testing.assert_allclose(S, direct, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ct", CTS)
def test_e_step_reusing_a_spent_e_step_equals_a_fresh_one(ct):
    X, y = _blobs(8, n=80)
    y = y.astype(float)
    y[::3] = np.nan                                  # labeled and unlabeled rows
    data = prepare_data(X, y, 2, ct)
    rng = np.random.default_rng(8)
    p1, p2 = (random_params(rng, 4, 3, 2, ct, X, jitter=0.1) for _ in range(2))
    spent = e_step(data, p1)
    fresh = e_step(data, p2)
    reused = e_step(data, p2, reuse=spent)
    assert np.shares_memory(reused.resp, spent.resp)   # the arrays were recycled
    for name in ("log_prob", "log_weighted", "resp", "log_norm", "counts", "moments"):
        np.testing.assert_array_equal(getattr(reused, name), getattr(fresh, name), err_msg=name)
    assert reused.loglik == fresh.loglik
    # given its own log densities back, a spent E-step recomputes in place what it had
    again = e_step(data, p2, log_prob=reused.log_prob, reuse=reused)
    for name in ("log_prob", "log_weighted", "resp", "log_norm", "counts", "moments"):
        np.testing.assert_array_equal(getattr(again, name), getattr(fresh, name), err_msg=name)
    # the fused moments are those of the responsibilities, and give the same M-step
    np.testing.assert_allclose(fresh.moments, weighted_moments(data.features, fresh.resp),
                               rtol=1e-12, atol=1e-12)
    a = gaussian_parameters_and_precisions(data.features, fresh.resp, 1e-6, fresh.moments)
    b = gaussian_parameters_and_precisions(data.features, fresh.resp, 1e-6)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("labeled", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_e_step_offsets_are_exact_for_any_share_of_labeled_rows(labeled):
    # the E-step adds log pi_{j,y} (labeled) or log w_j (unlabeled) by a gather when most rows
    # are labeled and by broadcasting otherwise: either way one addition per entry
    X, y = _blobs(9, n=90)
    y = y.astype(float)
    y[np.random.default_rng(9).random(len(y)) >= labeled] = np.nan
    data = prepare_data(X, y, 2, "diag")
    p = random_params(np.random.default_rng(9), 5, 3, 2, "diag", X, jitter=0.1)
    w = p.weights @ p.class_priors
    with np.errstate(divide="ignore"):
        offset = np.where(np.isnan(y)[:, None], np.log(w)[None],
                          np.log(p.weights.T)[np.nan_to_num(y).astype(int)])
    for est in (e_step(data, p), e_step(data, p, reuse=e_step(data, p))):
        np.testing.assert_array_equal(est.log_weighted, est.log_prob + offset)


@pytest.mark.parametrize("ct", CTS)
def test_nearly_collapsed_component_keeps_full_accuracy(ct):
    """A component with variances ~1e-10 far from the data mean: the expanded forms would lose
    ~eps * |x|^2 / var ~ 1e-3; the per-component fallback must match direct formulas."""
    from alprbf.prbf._gaussian import gaussian_parameters_and_precisions

    rng = np.random.default_rng(12)
    tight = np.array([10.0, -7.0]) + 1e-5 * rng.normal(size=(6, 2))
    X = np.vstack([rng.normal(size=(40, 2)), tight])
    resp = np.zeros((len(X), 2))
    resp[:40, 0] = 1.0
    resp[40:, 1] = 1.0
    f = GaussianFeatures(X, ct)
    _, means, covs, prec = gaussian_parameters_and_precisions(f, resp, 1e-12)
    diff = tight - tight.mean(axis=0)
    want = diff.T @ diff / 6 + 1e-12 * np.eye(2)
    if ct == "diag":
        want = np.diag(want)
    elif ct == "spherical":
        want = np.mean(np.diag(want))
    np.testing.assert_allclose(covs[1], want, rtol=1e-8)
    got = estimate_log_gaussian_prob(None, means, prec, ct, features=f)
    ref = log_gauss(X, means, full_cov(covs, ct, 2))
    near = slice(40, None)                     # the rows the tight component describes
    np.testing.assert_allclose(got[near, 1], ref[near, 1], rtol=1e-9)


def test_precision_cholesky_survives_indefinite_covariance():
    c = np.array([[[1.0, 1.0], [1.0, 1.0 - 1e-17]]])          # singular / indefinite by round-off
    U = compute_precision_cholesky(c, "full")
    assert np.all(np.isfinite(U))
    assert np.all(np.isfinite(compute_precision_cholesky(np.array([[0.0, 1.0]]), "diag")))


# ---------------------------------------------------------------- one class == sklearn GMM

@pytest.mark.parametrize("ct", CTS)
def test_single_class_steps_equal_sklearn_gaussian_mixture(ct):
    X, _ = _blobs(3, n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = GaussianMixture(4, covariance_type=ct, max_iter=1, random_state=0,
                             reg_covar=1e-6).fit(X)
    data = prepare_data(X, np.zeros(len(X), dtype=int), 1, ct)
    p = PRBFParams(gm.means_.copy(), gm.covariances_.copy(), gm.precisions_cholesky_.copy(),
                   gm.weights_[:, None].copy(), np.ones(1), ct)
    for _ in range(3):                               # three consecutive iterations
        est = e_step(data, p)
        ll_sk, log_resp_sk = gm._e_step(X)
        assert est.loglik / len(X) == pytest.approx(ll_sk, abs=1e-10)
        np.testing.assert_allclose(est.log_resp, log_resp_sk, rtol=0, atol=1e-10)
        gm._m_step(X, log_resp_sk)
        p = m_step(data, est, p, reg_covar=1e-6)
        np.testing.assert_allclose(p.means, gm.means_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p.covariances, gm.covariances_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p.weights[:, 0], gm.weights_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p.precisions_cholesky, gm.precisions_cholesky_,
                                   rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- supervised E/M vs brute force

@pytest.mark.parametrize("ct", CTS)
def test_supervised_steps_equal_brute_force(ct):
    X, y = _blobs(4, n=60, K=3)
    rng = np.random.default_rng(4)
    p = random_params(rng, 4, 3, 3, ct, X, jitter=0.1)
    p.class_priors = np.bincount(y, minlength=3) / len(y)
    data = prepare_data(X, y, 3, ct)
    est = e_step(data, p)
    joint, ll = brute_e_step(X, y, p.means, full_cov(p.covariances, ct, 3), p.weights,
                             p.class_priors)
    assert est.loglik == pytest.approx(ll, rel=1e-12)
    # labeled rows: resp = p(j|x, y) = joint[:, :, y]
    np.testing.assert_allclose(est.resp, joint[np.arange(len(y)), :, y], atol=1e-12)
    np.testing.assert_allclose(est.counts, joint.sum(axis=0), atol=1e-10)
    # eq 6 part: sum log p(x|y)
    want6 = class_loglik(X, y, p.means, full_cov(p.covariances, ct, 3), p.weights).sum()
    assert est.loglik_labeled == pytest.approx(want6, rel=1e-12)
    new = m_step(data, est, p, reg_covar=1e-6)
    bm, bc, bw, bp = brute_m_step(X, y, joint, 1e-6, ct, False, p.class_priors)
    np.testing.assert_allclose(new.means, bm, atol=1e-10)
    np.testing.assert_allclose(new.covariances, bc, atol=1e-10)
    np.testing.assert_allclose(new.weights, bw, atol=1e-12)
    np.testing.assert_array_equal(new.class_priors, p.class_priors)   # fixed: N_k / N


def test_zero_weight_and_dead_component_give_no_nan():
    X, y = _blobs(5, n=40)
    ct = "full"
    rng = np.random.default_rng(5)
    p = random_params(rng, 3, 3, 2, ct, X, jitter=0.1)
    p.means[2] = 1e3                                   # far from every row: no responsibility
    p.weights[:, 1] = [0.0, 1.0, 0.0]                  # class 1 uses component 1 only
    p.weights[:, 0] = [0.5, 0.25, 0.25]
    p.class_priors = np.array([0.5, 0.5])
    data = prepare_data(X, y, 2, ct)
    res = run_em(data, p, max_iter=5, tol=0.0)
    for arr in (res.params.means, res.params.covariances, res.params.weights,
                res.estep.resp, res.loglik_history):
        assert np.all(np.isfinite(arr))
    np.testing.assert_array_equal(res.params.means[2], p.means[2])      # dead: kept
    assert res.params.weights[0, 1] == 0.0 and res.params.weights[2, 1] == 0.0
    lp = predict_log_proba(X, res.params)
    assert not np.any(np.isnan(lp))
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-12)


def test_log_class_conditional_exact_when_product_underflows():
    # component 0 (the only one of class 1) is ~1e-400 relative to component 1 at these rows
    log_prob = np.array([[-1000.0, -10.0], [-900.0, -5.0], [-3.0, -4.0]])
    weights = np.array([[0.0, 1.0], [1.0, 0.0]])
    got = log_class_conditional(log_prob, weights)
    want = np.array([[-10.0, -1000.0], [-5.0, -900.0], [-4.0, -3.0]])
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_log_class_conditional_equals_brute_force_logsumexp(sparse, seed):
    rng = np.random.default_rng(seed)
    n, M, K = 40, 12, 3
    log_prob = rng.uniform(-2000.0, 0.0, size=(n, M))      # spreads far beyond exp's range
    log_prob[rng.random((n, M)) < 0.05] = -np.inf
    if sparse:   # a split network: each component serves one class (one class has none)
        weights = np.zeros((M, K))
        weights[np.arange(M), rng.integers(K - 1, size=M)] = rng.uniform(0.1, 1.0, size=M)
    else:        # a network: most components serve every class, some weights are 0
        weights = rng.uniform(0.0, 1.0, size=(M, K)) * (rng.random((M, K)) < 0.8)
    weights /= np.maximum(weights.sum(axis=0), 1e-300)
    got = log_class_conditional(np.asfortranarray(log_prob), weights)
    with np.errstate(divide="ignore"):
        want = np.array([[logsumexp(log_prob[i], b=weights[:, k]) if weights[:, k].any()
                          else -np.inf for k in range(K)] for i in range(n)])
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12)


@pytest.mark.parametrize("ct", CTS)
def test_predict_log_proba_matches_brute_force(ct):
    X, y = _blobs(6, n=50, K=3)
    p = random_params(np.random.default_rng(6), 5, 3, 3, ct, X, jitter=0.1)
    got = predict_log_proba(X, p)
    lg = log_gauss(X, p.means, full_cov(p.covariances, ct, 3))
    joint = np.array([[np.log(p.class_priors[k]) + np.log(np.sum(p.weights[:, k] * np.exp(lg[i])))
                       for k in range(3)] for i in range(len(X))])
    want = joint - np.log(np.exp(joint).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want, atol=1e-10)
    np.testing.assert_allclose(np.exp(got).sum(axis=1), 1.0, atol=1e-12)


# ---------------------------------------------------------------- EM loop properties

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), ct=st.sampled_from(CTS), M=st.integers(1, 4),
       K=st.integers(1, 3), d=st.integers(1, 3))
def test_supervised_loglik_never_decreases(seed, ct, M, K, d):
    rng = np.random.default_rng(seed)
    n = 40
    X = rng.normal(size=(n, d)) + rng.integers(0, 3, size=(n, 1))
    y = rng.integers(K, size=n)
    data = prepare_data(X, y, K, ct)
    p0 = initialize_params(data, M, reg_covar=1e-10, random_state=seed)
    res = run_em(data, p0, tol=0.0, max_iter=25, reg_covar=1e-10)
    h = res.loglik_history
    assert np.all(np.isfinite(h))
    assert np.all(np.diff(h) >= -1e-7 * (1.0 + np.abs(h[:-1])))


def test_fit_em_is_deterministic_and_keeps_best_restart():
    X, y = _blobs(7, n=90, K=3)
    data = prepare_data(X, y, 3, "diag")
    a = fit_em(data, 4, n_init=3, random_state=11)
    b = fit_em(data, 4, n_init=3, random_state=11)
    np.testing.assert_array_equal(a.params.means, b.params.means)
    np.testing.assert_array_equal(a.loglik_history, b.loglik_history)
    # the restarts of n_init=5 are the five runs drawn one after another from the same generator
    rng = np.random.default_rng(3)
    singles = [fit_em(data, 4, n_init=1, random_state=rng).loglik for _ in range(5)]
    assert fit_em(data, 4, n_init=5, random_state=3).loglik == max(singles)
    assert len(set(np.round(singles, 8))) > 1        # the restarts really differ


def test_fixed_components_keep_their_gaussians():
    X, y = _blobs(10, n=80, K=2)
    data = prepare_data(X, y, 2, "diag")
    p0 = initialize_params(data, 3, random_state=1)
    fixed = np.array([True, False, False])
    res = run_em(data, p0, tol=0.0, max_iter=8, fixed_components=fixed)
    np.testing.assert_array_equal(res.params.means[0], p0.means[0])
    np.testing.assert_array_equal(res.params.covariances[0], p0.covariances[0])
    assert not np.allclose(res.params.means[1:], p0.means[1:])
    assert not np.allclose(res.params.weights[0], p0.weights[0])      # weights still move
    h = res.loglik_history
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[:-1]))               # a generalised EM


# ---------------------------------------------------------------- split

def test_supervised_split_hand_worked_2d():
    """Component A (origin) holds classes 0 and 1, component B (far away) only class 1."""
    X = np.array([[0.0, 0.0], [2.0, 0.0],          # class 0, near A
                  [0.0, 2.0], [0.0, 4.0],          # class 1, near A
                  [100.0, 100.0], [102.0, 100.0]])  # class 1, near B
    y = np.array([0, 0, 1, 1, 1, 1])
    covs = np.array([np.eye(2) * 4.0, np.eye(2) * 2.0])
    p = PRBFParams(np.array([[1.0, 1.0], [101.0, 100.0]]), covs,
                   compute_precision_cholesky(covs, "full"),
                   np.array([[1.0, 0.5], [0.0, 0.5]]), np.array([2 / 6, 4 / 6]), "full")
    data = prepare_data(X, y, 2, "full")
    est = e_step(data, p)
    sp = split_params(data, p, est, reg_covar=0.0)
    # A -> (A, class 0), (A, class 1); B is kept (only class 1)
    np.testing.assert_array_equal(sp.parent, [0, 0, 1])
    np.testing.assert_array_equal(sp.component_class, [0, 1, 1])
    np.testing.assert_allclose(sp.params.means, [[1.0, 0.0], [0.0, 3.0], [101.0, 100.0]],
                               atol=1e-12)
    # (second moments are accumulated around the global mean ~(34, 34): ~1e-12 round-off)
    np.testing.assert_allclose(sp.params.covariances[0], [[1.0, 0.0], [0.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(sp.params.covariances[1], [[0.0, 0.0], [0.0, 1.0]], atol=1e-9)
    np.testing.assert_array_equal(sp.params.covariances[2], covs[1])
    np.testing.assert_allclose(sp.params.weights, [[1.0, 0.0], [0.0, 0.5], [0.0, 0.5]],
                               atol=1e-12)
    np.testing.assert_array_equal(sp.params.class_priors, p.class_priors)


def test_split_min_mass_drops_negligible_subcomponents():
    """With min_mass, (component, class) pairs below it disappear and weights renormalise."""
    X, y = _blobs(11, n=90, K=3, shift=4.0)
    data = prepare_data(X, y, 3, "full")
    res = run_em(data, initialize_params(data, 4, random_state=0), tol=1e-8, max_iter=100)
    m = res.estep.counts
    threshold = float(np.sort(m[m > 0].ravel())[m.size // 3])   # drops about a third
    full = split_params(data, res.params, res.estep, min_mass=0.0)
    cut = split_params(data, res.params, res.estep, min_mass=threshold)
    kept = m[cut.parent, cut.component_class]
    assert np.all(kept > threshold)
    assert cut.params.n_components < full.params.n_components
    n_resp = (m > threshold).sum(axis=1)
    assert cut.params.n_components == int(np.sum(n_resp[n_resp >= 1]))
    for k in range(3):                      # weights of each class: kept masses, renormalised
        rows = cut.component_class == k
        np.testing.assert_allclose(cut.params.weights[rows, k],
                                   kept[rows] / kept[rows].sum(), rtol=1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), ct=st.sampled_from(CTS), M=st.integers(1, 4),
       K=st.integers(2, 3))
def test_split_does_not_lower_class_conditional_likelihood(seed, ct, M, K):
    rng = np.random.default_rng(seed)
    n, d = 60, 2
    y = rng.integers(K, size=n)
    X = rng.normal(size=(n, d)) + 1.5 * np.eye(K, d)[y]
    data = prepare_data(X, y, K, ct)
    res = run_em(data, initialize_params(data, M, reg_covar=1e-9, random_state=seed),
                 tol=1e-8, max_iter=50, reg_covar=1e-9)
    sp = split_params(data, res.params, res.estep, reg_covar=1e-9)
    before = class_loglik(X, y, res.params.means, full_cov(res.params.covariances, ct, d),
                          res.params.weights)
    after = class_loglik(X, y, sp.params.means, full_cov(sp.params.covariances, ct, d),
                         sp.params.weights)
    assert np.all(after >= before - 1e-6), (before, after)
    # every split component describes exactly one class
    assert np.all((sp.params.weights > 0).sum(axis=1) == 1)


# ---------------------------------------------------------------- estimators

def test_estimators_fit_predict_and_are_deterministic():
    X, y = _blobs(8, n=150, K=3)
    labels = np.array(["a", "b", "c"])[y]
    for cls in (PRBF, PRBFSplit):
        a = cls(3, random_state=0).fit(X, labels)
        b = cls(3, random_state=0).fit(X, labels)
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
        assert set(a.predict(X)) <= set(labels)
        assert a.score(X, labels) > 0.8
        np.testing.assert_allclose(a.predict_proba(X).sum(axis=1), 1.0, atol=1e-12)
        assert np.all(np.diff(a.loglik_history_) >= -1e-6 * np.abs(a.loglik_history_[1:]))


def test_invalid_parameters_raise_value_error():
    X, y = _blobs(9, n=30)
    with pytest.raises(ValueError, match="covariance_type"):
        PRBF(covariance_type="tied").fit(X, y)
    with pytest.raises(ValueError, match="n_components"):
        PRBF(n_components=0).fit(X, y)


@pytest.mark.parametrize("ct", CTS)
def test_many_collapsed_components_match_scipy(ct):
    """The per-component fallback for many collapsed components at once."""
    import alprbf.prbf._gaussian as g

    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3)) * 4.0
    means = X[:7] + 1e-4 * rng.normal(size=(7, 3))
    var = 10.0 ** rng.uniform(-11, -9, size=(7, 3))
    covs = {"full": np.stack([np.diag(v) for v in var]), "diag": var,
            "spherical": var.mean(axis=1)}[ct]
    prec = compute_precision_cholesky(covs, ct)
    f = GaussianFeatures(X, ct)
    assert np.all(f.radius > g.accurate_radius(means - f.center, prec, ct))
    got = estimate_log_gaussian_prob(None, means, prec, ct, features=f)
    ref = log_gauss(X, means, full_cov(covs, ct, 3))
    np.testing.assert_allclose(got, ref, rtol=1e-10)


@pytest.mark.parametrize("ct", CTS)
def test_far_outlier_rows_are_recomputed_and_every_row_stays_accurate(ct):
    """A few rows 1000 sd away flag the components globally; the fallback recomputes only the
    rows beyond each component's accuracy radius, and every row must still match scipy."""
    import alprbf.prbf._gaussian as g

    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(size=(200, 5)), 1000.0 * rng.normal(size=(3, 5))])
    means = rng.normal(size=(4, 5))
    var = np.full((4, 5), 1e-4) * rng.uniform(1, 2, size=(4, 5))
    covs = {"full": np.stack([np.diag(v) for v in var]), "diag": var,
            "spherical": var.mean(axis=1)}[ct]
    prec = compute_precision_cholesky(covs, ct)
    f = GaussianFeatures(X, ct)
    muc = means - f.center
    limit = g.accurate_radius(muc, prec, ct)
    assert np.all(f.radius > limit)
    assert np.all(np.sum(f.row_norms[None, :] > limit[:, None], axis=1) == 3)  # the outliers
    got = estimate_log_gaussian_prob(None, means, prec, ct, features=f)
    ref = log_gauss(X, means, full_cov(covs, ct, 5))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-7)


@pytest.mark.parametrize("ct", CTS)
def test_m_step_moments_stay_accurate_with_far_rows(ct):
    """Far rows no longer flag every component in the M-step; the moments must still match
    the direct (per-component centred) formulas, whether a component owns a far row or not."""
    from alprbf.prbf._gaussian import gaussian_parameters_and_precisions

    rng = np.random.default_rng(9)
    X = np.vstack([rng.normal(size=(300, 4)), 300.0 * rng.normal(size=(2, 4))])
    tight = np.array([1.0, 2.0, -1.0, 0.5]) + 1e-3 * rng.normal(size=(30, 4))
    X = np.vstack([X, tight])
    n = len(X)
    resp = np.zeros((n, 3))
    resp[:300, 0] = 1.0                      # the bulk
    resp[300:302, 1] = 1.0                   # the far rows (plus some bulk)
    resp[:20, 1] = 1.0
    resp[302:, 2] = 1.0                      # a tight cluster: sd 1e-3
    f = GaussianFeatures(X, ct)
    nk, means, covs, _ = gaussian_parameters_and_precisions(f, resp, 1e-9)
    # a blocked E-step passes the responsibilities as a function of the components, called
    # only when needed and only for the recomputed ones (here the tight cluster)
    calls = []
    lazy = gaussian_parameters_and_precisions(
        f, lambda comps: calls.append(list(comps)) or resp.T[comps].T, 1e-9,
        weighted_moments(f, resp))
    assert calls == [[2]]
    with pytest.raises(TypeError, match="need their moments"):
        gaussian_parameters_and_precisions(f, lambda comps: resp, 1e-9)
    for a, b in zip(lazy, (nk, means, covs), strict=False):   # and the precisions
        assert np.array_equal(a, b)
    for j in range(3):
        r = resp[:, j]
        mu = r @ X / r.sum()
        diff = X - mu
        want = (r * diff.T) @ diff / r.sum() + 1e-9 * np.eye(4)
        want = {"full": want, "diag": np.diag(want), "spherical": np.diag(want).mean()}[ct]
        np.testing.assert_allclose(means[j], mu, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(covs[j], want, rtol=1e-8)


def test_has_converged_is_the_per_row_rule_elementwise():
    changes = np.array([-0.9, 0.9, 1.0, -1.0, 5.0])
    # tol 1e-2 per row on 100 rows: |change| < 1
    np.testing.assert_array_equal(has_converged(changes, 100, 1e-2),
                                  [True, True, False, False, False])
    assert has_converged(0.0, 1, 0.0) == np.False_       # tol 0 never stops a finite change
