"""Nguyen & Smeulders 2004's estimator end to end: with one cluster per row and sigma -> 0 it is
sklearn's L2-regularised logistic regression (eq 14 with lam = 1 / C); the data-derived sigma0; the
diagnostics it reports."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.linear_model import LogisticRegression

from alprbf.models import MODELS
from alprbf.preclustering import PreclusteringClassifier
from alprbf.preclustering.clustering import initial_partition


def labeled_task(seed, n, d, n_unlabeled=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n // 2, d)), rng.normal(1.2, 1, (n - n // 2, d))])
    y = np.repeat([0.0, 1.0], [n // 2, n - n // 2])
    y_obs = y.copy()
    y_obs[rng.choice(n, n_unlabeled, replace=False)] = np.nan
    return X, y, y_obs


@pytest.mark.parametrize(("d", "scale", "paper_range"),
                         [(4, 1.0, None), (40, 1.0, None), (4, 3.0, 255.0)])
def test_one_cluster_per_row_and_tiny_sigma_is_sklearn_logistic_regression(d, scale,
                                                                            paper_range):
    """Through the estimator (clustering, priors, memberships, label model, prediction):
    every row its own medoid (K0 = n, one subset) and sigma so small that p(k|x) is one-hot.
    Eq 14 divided by C is sklearn's objective ``C sum log-loss + |w|^2 / 2`` (intercept
    unpenalised) when ``lam_ = 1 / C``; ``lam_ = lam * s^2`` with ``s = max|X| / paper_range``
    (the ``paper_range`` units), so the third case checks that conversion too.  Unlabeled rows
    have clusters of their own that no labeled row touches: they must not matter."""
    n = 36
    X, _, y_obs = labeled_task(1, n, d, n_unlabeled=6)
    X = X * scale
    lam = 2.5
    est = PreclusteringClassifier(sigma0=1e-6, n_medoids=n, subset_size=n, lam=lam,
                                  paper_range=paper_range, coarse_to_fine=False,
                                  random_state=0).fit(X, y_obs)
    assert est.partition_.n_clusters == n
    s = 1.0 if paper_range is None else np.abs(X).max() / paper_range
    assert est.lam_ == pytest.approx(lam * s ** 2, rel=1e-12)
    lab = ~np.isnan(y_obs)
    ref = LogisticRegression(C=1 / est.lam_, tol=1e-14, max_iter=10000,
                             solver="newton-cholesky").fit(X[lab], y_obs[lab].astype(int))
    assert est.fits_[0].converged
    np.testing.assert_allclose(est.coef_[0], ref.coef_[0], atol=1e-5)
    np.testing.assert_allclose(est.intercept_[0], ref.intercept_[0], atol=1e-5)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    # a wrong mapping (C = lam, or lam unscaled) is far from it
    wrong = LogisticRegression(C=est.lam_, tol=1e-14, max_iter=10000,
                               solver="newton-cholesky").fit(X[lab], y_obs[lab].astype(int))
    assert np.abs(wrong.coef_[0] - est.coef_[0]).max() > 1e-3


def grey_task(seed=0, n=240, d=30):
    """Two blobs on grey levels (0..255), like raw pixels."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(80, 30, (n // 2, d)), rng.normal(150, 30, (n // 2, d))])
    X = np.clip(X, 0, 255)
    y_obs = np.full(n, np.nan)
    y_obs[:3], y_obs[n // 2:n // 2 + 3] = 0.0, 1.0
    return X, y_obs


def test_sigma0_from_the_data_is_the_largest_initial_radius_over_kappa():
    X, y_obs = grey_task()
    params = {"n_medoids": 8, "subset_size": 120, "coarse_to_fine": False, "random_state": 5}
    est = PreclusteringClassifier(sigma0="max_radius", **params).fit(X, y_obs)
    part = initial_partition(X, 8, 120, np.random.default_rng(5))
    assert est.sigma_ == part.radii.max() / est.kappa
    # kappa sigma0 equals the largest radius: eq 10 splits that cluster at the start
    assert est.partition_.n_splits >= 1 and est.partition_.n_clusters > part.n_clusters
    # the literal 2.2 d on grey levels: kappa sigma0 above every radius, no split
    literal = PreclusteringClassifier(**params).fit(X, y_obs)
    assert literal.sigma_ == pytest.approx(2.2 * X.shape[1] * X.max() / 255)
    assert literal.partition_.n_splits == 0


@pytest.mark.parametrize("bad", ["max", "", [1.0]])
def test_sigma0_refuses_other_values(bad):
    with pytest.raises(ValueError, match="invalid sigma0.*max_radius"):
        MODELS["preclustering"](n_classes=2, sigma0=bad)


def test_diagnostics_report_the_fit_and_change_nothing():
    X, y_obs = grey_task(1)
    learner = MODELS["preclustering"](n_classes=2, random_state=3, n_medoids=8,
                                      subset_size=120, sigma0=40.0)
    learner.fit(X, y_obs)
    est = learner.estimator_
    before = est.predict_proba(X)
    diag = learner.diagnostics()
    np.testing.assert_array_equal(est.predict_proba(X), before)
    pool = np.isnan(y_obs)
    mix = est.mixture_
    assert diag["sigma"] == est.sigma_ and diag["K"] == est.partition_.n_clusters
    assert diag["n_shrinks"] == est.n_shrinks_
    assert diag["max_prior"] == pytest.approx(mix.alpha.max(), rel=1e-12)
    assert diag["median_max_membership"] == np.median(mix.resp[pool].max(axis=1))
    flat = softmax(-mix.sqdist / (2 * mix.sigma ** 2), axis=1).max(axis=1)
    assert diag["median_max_membership_equal_priors"] == pytest.approx(np.median(flat[pool]))
    assert diag["n_labeled_clusters"] == len(set(est.partition_.labels[~pool]))
    assert 1 <= diag["n_fit_clusters"] <= diag["K"]
    # the cached maxima are reused while the clustering stays and give the same answer
    y_next = y_obs.copy()
    y_next[np.flatnonzero(pool)[0]] = 0.0
    learner.fit(X, y_next)
    if learner.estimator_.mixture_ is mix:
        assert learner.diagnostics() == learner.estimator_.diagnostics()
    assert MODELS["preclustering"](n_classes=2).diagnostics() == {}


def test_uniform_memberships_show_in_the_diagnostics():
    """A huge sigma makes every Gaussian factor alike: the equal-prior membership of the
    nearest cluster is then about 1/K, whatever the priors do."""
    X, y_obs = grey_task(2)
    est = PreclusteringClassifier(sigma0=1e7, n_medoids=8, subset_size=120,
                                  coarse_to_fine=False, random_state=0).fit(X, y_obs)
    diag = est.diagnostics()
    assert diag["median_max_membership_equal_priors"] == pytest.approx(1 / diag["K"], rel=1e-3)
