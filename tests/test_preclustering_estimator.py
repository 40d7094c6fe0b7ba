"""Seed 004's estimator: the diagnostics it reports."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from alprbf.models import MODELS
from alprbf.preclustering import PreclusteringClassifier


def grey_task(seed=0, n=240, d=30):
    """Two blobs on grey levels (0..255), like raw pixels."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(80, 30, (n // 2, d)), rng.normal(150, 30, (n // 2, d))])
    X = np.clip(X, 0, 255)
    y_obs = np.full(n, np.nan)
    y_obs[:3], y_obs[n // 2:n // 2 + 3] = 0.0, 1.0
    return X, y_obs


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
