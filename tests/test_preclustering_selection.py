"""Nguyen & Smeulders 2004's selection (eqs 26-33) and learners: the score against a loop over the
pool, the coarse-to-fine rule, the baselines' strategies, parameter checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from sklearn.svm import SVC

from alprbf.models import MODELS
from alprbf.preclustering import PreclusteringClassifier
from alprbf.preclustering.selection import expected_error, next_sigma, selection_score
from alprbf.strategies.preclustering import (
    ClosestToBoundary,
    PreclusteringSelection,
    RepresentativeSampling,
    medoid_scores,
)


def two_class_task(seed=0, n=160, d=5):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n // 2, d)), rng.normal(2.5, 1, (n // 2, d))]) * 40 + 120
    y = np.repeat([0.0, 1.0], n // 2)
    y_obs = np.full(n, np.nan)
    shown = np.concatenate([rng.choice(n // 2, 3, replace=False),
                            n // 2 + rng.choice(n // 2, 3, replace=False)])
    y_obs[shown] = y[shown]
    return X, y, y_obs


def fitted(seed=0, **params):
    X, y, y_obs = two_class_task(seed)
    learner = MODELS["preclustering"](n_classes=2, random_state=seed,
                                      **({"subset_size": 80, "n_medoids": 6} | params))
    return X, y, y_obs, learner.fit(X, y_obs)


def test_selection_score_against_a_loop_over_the_pool():
    X, _, y_obs, learner = fitted()
    est = learner.estimator_
    pool = np.flatnonzero(np.isnan(y_obs))
    a, b = est.coef_[0], est.intercept_[0]
    alpha, sigma = np.exp(est.log_alpha_), est.sigma_
    expected = []
    for i in pool:
        w = np.array([al * np.exp(-np.sum((X[i] - c) ** 2) / (2 * sigma ** 2))
                      for al, c in zip(alpha, est.centres_, strict=True)])
        px = w.sum()                                                     # eq 31
        p_pos = sum(wk / px * expit(c @ a + b)                           # eq 5
                    for wk, c in zip(w, est.centres_, strict=True))
        f = p_pos - (1 - p_pos)                                          # eq 28
        expected.append((1 - abs(f)) * px)                               # eq 30
    expected = np.array(expected)
    np.testing.assert_allclose(learner.selection_scores(X, pool), expected, rtol=1e-7)
    np.testing.assert_allclose(est.selection_scores(X[pool]), expected, rtol=1e-7)
    picked = PreclusteringSelection().query(X, y_obs, learner, 1, np.random.default_rng(0))
    assert picked[0] == pool[np.argmax(expected)]
    assert est.max_score_ == pytest.approx(expected.max(), rel=1e-9)


def test_cached_rows_equal_a_fresh_computation():
    X, _, y_obs, learner = fitted(1)
    rows = np.arange(0, len(X), 7)
    np.testing.assert_allclose(learner.predict_log_proba_rows(X, rows),
                               learner.predict_log_proba(X[rows]), atol=1e-10)
    np.testing.assert_allclose(learner.selection_scores(X, rows),
                               learner.estimator_.selection_scores(X[rows]), rtol=1e-9)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_predictions_of_the_fitted_rows_come_from_the_cache_and_equal_predict(seed):
    # the loop evaluates on the fit's rows through predict_rows, which the learner answers
    # from the posteriors cached at the fit; they equal a fresh prediction
    X, _, y_obs, learner = fitted(seed)
    rows = np.flatnonzero(np.isnan(y_obs))
    np.testing.assert_array_equal(learner.predict_rows(X, rows), learner.predict(X[rows]))
    np.testing.assert_array_equal(learner.predict_rows(X), learner.predict(X))
    calls = []
    learner.estimator_.predict_log_proba = lambda Z: calls.append(Z) or None
    learner.predict_rows(X, rows)
    assert not calls                                  # nothing recomputed for the fit's rows
    other = X[:5] + 1.0                               # other rows: a fresh prediction
    learner.estimator_.__dict__.pop("predict_log_proba")
    np.testing.assert_array_equal(learner.predict_rows(other, np.arange(5)),
                                  learner.predict(other))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 5))
def test_expected_error_is_one_minus_the_posterior_gap(seed, k):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.5, size=20)
    top = np.sort(p, axis=1)
    np.testing.assert_allclose(expected_error(p), 1 - (top[:, -1] - top[:, -2]), atol=1e-12)
    if k == 2:
        f = p[:, 1] - p[:, 0]
        np.testing.assert_allclose(expected_error(p), 1 - np.abs(f), atol=1e-12)   # eq 29
    log_px = rng.normal(size=20)
    np.testing.assert_allclose(selection_score(p, log_px), expected_error(p) * np.exp(log_px))


def test_expected_error_keeps_tiny_posteriors():
    p = np.array([[1 - 1e-20, 1e-20]])
    assert expected_error(p)[0] == pytest.approx(2e-20)


@settings(max_examples=100, deadline=None)
@given(score=st.floats(0, 1), sigma=st.floats(1e-3, 1e4), t_e=st.floats(0.01, 0.9))
def test_sigma_shrinks_only_below_the_threshold(score, sigma, t_e):
    new = next_sigma(score, sigma, t_e, 0.9)
    assert new == (0.9 * sigma if score < t_e else sigma)


def test_coarse_to_fine_in_the_estimator():
    X, _, y_obs, learner = fitted(2, coarse_to_fine=False)
    est = learner.estimator_
    best = est.max_score_                   # the best score at the initial scale
    assert est.n_shrinks_ == 0
    # t_e at the best score: no shrink (eq 32 is strict)
    same = fitted(2, threshold=float(best))[3].estimator_
    assert same.n_shrinks_ == 0 and same.sigma_ == est.sigma_
    # t_e just above: one shrink by eta, re-clustered below kappa * sigma
    above = fitted(2, threshold=float(best) * (1 + 1e-9), eta=0.5)[3].estimator_
    assert above.n_shrinks_ == 1 and above.sigma_ == pytest.approx(0.5 * est.sigma_)
    assert above.partition_.n_clusters >= est.partition_.n_clusters
    assert np.all(above.partition_.radii < above.kappa * above.sigma_)
    # the next fit of the task starts from the shrunk scale and shrinks again if still low
    learner_above = fitted(2, threshold=1.0, eta=0.5)[3]
    y_next = y_obs.copy()
    y_next[np.flatnonzero(np.isnan(y_obs))[0]] = 0.0
    learner_above.fit(X, y_next)
    assert learner_above.estimator_.n_shrinks_ == 2
    assert learner_above.estimator_.sigma_ == pytest.approx(0.25 * est.sigma_)
    # min_sigma stops it
    floor = fitted(2, threshold=1.0, min_sigma=1e9)[3].estimator_
    assert floor.n_shrinks_ == 0


def test_the_model_is_invariant_to_the_data_units():
    """paper_range: the same model on grey levels and on data scaled by 1/255."""
    X, _, y_obs = two_class_task(3)
    params = {"subset_size": 80, "n_medoids": 6}
    a = PreclusteringClassifier(random_state=0, **params).fit(X, y_obs)
    b = PreclusteringClassifier(random_state=0, **params).fit(X / 255.0, y_obs)
    assert b.scale_ == pytest.approx(a.scale_ / 255.0)
    np.testing.assert_allclose(b.predict_proba(X / 255.0), a.predict_proba(X), atol=1e-7)


def test_literal_units_on_grey_levels():
    X = np.random.default_rng(0).integers(0, 256, (50, 784)).astype(float)
    X[0, 0] = 255.0
    y = np.full(50, np.nan)
    y[:2] = [0, 1]
    est = PreclusteringClassifier(random_state=0, coarse_to_fine=False).fit(X, y)
    assert est.sigma_ == pytest.approx(2.2 * 784) and est.lam_ == pytest.approx(80.0)


@pytest.mark.parametrize("bad", [{"kappa": 0.0}, {"eta": 1.0}, {"eta": 0.0}, {"lam": -1.0},
                                 {"n_medoids": 0}, {"subset_size": 0}, {"sigma0": 0.0},
                                 {"paper_range": 0.0}, {"threshold": float("nan")},
                                 {"coarse_to_fine": "yes"}])
def test_bad_parameters_fail_when_the_learner_is_made(bad):
    with pytest.raises(ValueError, match="PreclusteringClassifier: invalid"):
        MODELS["preclustering"](n_classes=2, **bad)


# ------------------------------------------------------------------ linear SVM baselines

def svm_task():
    X, y, y_obs = two_class_task(4)
    return X, y, y_obs, MODELS["linear_svm"](n_classes=2).fit(X, y_obs)


def test_linear_svm_is_sklearn_svc_with_a_linear_kernel():
    X, _, y_obs, learner = svm_task()
    lab = ~np.isnan(y_obs)
    ref = SVC(kernel="linear", C=1.0).fit(X[lab], y_obs[lab].astype(int))
    np.testing.assert_allclose(learner.decision_function(X), ref.decision_function(X),
                               atol=1e-9)
    np.testing.assert_allclose(learner.margin(X), np.abs(ref.decision_function(X)), atol=1e-9)
    np.testing.assert_array_equal(learner.predict(X), ref.predict(X))
    np.testing.assert_allclose(learner.predict_proba(X)[:, 1], expit(ref.decision_function(X)))


def test_closest_boundary_queries_the_smallest_margin():
    X, _, y_obs, learner = svm_task()
    pool = np.flatnonzero(np.isnan(y_obs))
    picked = ClosestToBoundary().query(X, y_obs, learner, 1,
                                                    np.random.default_rng(0))
    assert picked[0] == pool[np.argmin(learner.margin(X[pool]))]


def test_medoid_scores_against_a_loop():
    X = np.random.default_rng(5).normal(size=(40, 3)) * 10
    loop = [-sum(np.linalg.norm(x - z) for z in X) for x in X]
    np.testing.assert_allclose(medoid_scores(X), loop, rtol=1e-9)


def test_representative_sampling_takes_the_medoid_of_the_margin():
    X, _, y_obs, learner = svm_task()
    pool = np.flatnonzero(np.isnan(y_obs))
    inside = pool[learner.margin(X[pool]) <= 1]
    assert 1 < len(inside) < len(pool)
    picked = RepresentativeSampling().query(X, y_obs, learner, 1,
                                                  np.random.default_rng(0))
    sums = [sum(np.linalg.norm(X[i] - X[j]) for j in inside) for i in inside]
    assert picked[0] == inside[np.argmin(sums)]


def test_representative_sampling_with_an_empty_margin_takes_the_closest_rows():
    X, _, y_obs, learner = svm_task()
    pool = np.flatnonzero(np.isnan(y_obs))

    class Wide:                      # a margin that leaves every pool row outside
        def margin(self, Z):
            return learner.margin(Z) + 2.0

    picked = RepresentativeSampling().query(X, y_obs, Wide(), 2, np.random.default_rng(0))
    np.testing.assert_array_equal(picked, pool[np.argsort(learner.margin(X[pool]))[:2]])


def test_representative_batch_is_the_pam_medoids_of_the_margin():
    X, _, y_obs, learner = svm_task()
    picked = RepresentativeSampling().query(X, y_obs, learner, 3,
                                                  np.random.default_rng(0))
    pool = np.flatnonzero(np.isnan(y_obs))
    inside = set(pool[learner.margin(X[pool]) <= 1])
    assert len(set(picked)) == 3 and set(picked) <= inside


def test_pruning_far_clusters_leaves_the_label_model_unchanged():
    """Small sigma: most clusters are exp(-800) away from every labeled row and left out."""
    from alprbf.preclustering.label_model import fit_label_model

    X, _, y_obs, learner = fitted(5, sigma0=1.0, coarse_to_fine=False)
    est = learner.estimator_
    lab = np.flatnonzero(~np.isnan(y_obs))
    full = fit_label_model(est.centres_, est.mixture_.log_resp(lab),
                           np.where(y_obs[lab] == 1, 1.0, -1.0), est.lam_)
    assert est.partition_.n_clusters > 2 * len(lab)
    np.testing.assert_allclose(est.coef_[0], full.coef, rtol=1e-9, atol=1e-12)
    assert est.intercept_[0] == pytest.approx(full.intercept, rel=1e-9, abs=1e-12)
