"""Generated data sets: shapes, class proportions, determinism, and their defining laws."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from alprbf.datasets import DATASETS
from alprbf.datasets.synthetic import (
    CLOUDS_CLASS0,
    CLOUDS_CLASS1,
    RIPLEY_MEANS,
    RIPLEY_VAR,
    breiman_waveform,
)
from alprbf.errors import UserError

GENERATED = ["waveform", "two_moons", "clouds", "concentric", "ripley_synthetic"]


@pytest.mark.parametrize("name", GENERATED)
def test_default_shape_and_determinism(name):
    cls = DATASETS[name]
    a = cls().load(np.random.SeedSequence(3))
    b = cls().load(np.random.SeedSequence(3))
    c = cls().load(np.random.SeedSequence(4))
    assert (a.n_samples, a.n_features, a.n_classes) == cls.expected
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    assert a.source == "generated" and np.isfinite(a.X).all()


@pytest.mark.parametrize("name", GENERATED)
def test_bad_sizes_are_user_errors(name):
    with pytest.raises(UserError, match="n_samples"):
        DATASETS[name](n_samples=1).load(0)


def test_concentric_proportions_and_geometry():
    ds = DATASETS["concentric"]().load(np.random.SeedSequence(0))
    share = np.bincount(ds.y) / ds.n_samples
    np.testing.assert_allclose(share, [0.368, 0.632], atol=0.0005)
    r = np.linalg.norm(ds.X - 0.5, axis=1)
    assert r[ds.y == 0].max() <= 0.3 and r[ds.y == 1].min() > 0.3 - 1e-12
    assert r.max() <= 0.5 + 1e-12
    # uniform on the disk: P(r <= 0.15 | class 0) = (0.15/0.3)^2 = 1/4
    assert abs((r[ds.y == 0] <= 0.15).mean() - 0.25) < 0.05
    # uniform on the ring: P(r <= 0.4 | class 1) = (0.16 - 0.09) / (0.25 - 0.09)
    assert abs((r[ds.y == 1] <= 0.4).mean() - 0.07 / 0.16) < 0.05


def test_waveform_class_means_match_breiman_definition():
    X, y = breiman_waveform(60000, np.random.default_rng(0))
    i = np.arange(1, 22)
    h = {p: np.maximum(6 - np.abs(i - p), 0) for p in (7, 11, 15)}
    for c, (a, b) in enumerate([(7, 15), (7, 11), (11, 15)]):
        np.testing.assert_allclose(X[y == c].mean(0), (h[a] + h[b]) / 2, atol=0.06)
    # noise: attribute 1 is 0 in every base wave, so it is pure N(0, 1)
    assert abs(X[:, 0].std() - 1.0) < 0.02
    np.testing.assert_allclose(np.bincount(y) / len(y), [1 / 3] * 3, atol=0.01)


def test_ripley_generator_recovers_its_mixture():
    ds = DATASETS["ripley_synthetic"](n_samples=8000).load(np.random.SeedSequence(1))
    assert np.bincount(ds.y).tolist() == [4000, 4000]
    for c in (0, 1):
        gm = GaussianMixture(2, covariance_type="spherical", random_state=0, n_init=3)
        gm.fit(ds.X[ds.y == c])
        order = np.argsort(gm.means_[:, 0])
        np.testing.assert_allclose(gm.means_[order], RIPLEY_MEANS[c], atol=0.02)
        np.testing.assert_allclose(gm.covariances_, RIPLEY_VAR, rtol=0.1)


def test_clouds_structure_and_bayes_error():
    ds = DATASETS["clouds"]().load(np.random.SeedSequence(2))
    assert np.bincount(ds.y).tolist() == [2500, 2500]
    np.testing.assert_allclose(ds.X[ds.y == 1].mean(0), CLOUDS_CLASS1[0], atol=0.05)
    np.testing.assert_allclose(ds.X[ds.y == 0].mean(0),
                               np.mean([m for m, _ in CLOUDS_CLASS0], axis=0), atol=0.05)
    # Bayes rule with the true densities: error rate near the documented 9.6 %
    from scipy.stats import multivariate_normal as mvn

    d0 = sum(mvn(m, s**2 * np.eye(2)).pdf(ds.X) for m, s in CLOUDS_CLASS0) / len(CLOUDS_CLASS0)
    d1 = mvn(CLOUDS_CLASS1[0], CLOUDS_CLASS1[1] ** 2 * np.eye(2)).pdf(ds.X)
    err = np.mean((d1 > d0).astype(int) != ds.y)
    assert 0.08 < err < 0.115


def test_two_moons_is_balanced():
    ds = DATASETS["two_moons"](n_samples=801).load(np.random.SeedSequence(0))
    assert ds.n_samples == 801 and abs(np.bincount(ds.y)[0] - np.bincount(ds.y)[1]) <= 1
