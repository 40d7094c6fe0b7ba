"""Folds and initial labeled sets."""

from __future__ import annotations

import numpy as np
import pytest

from alprbf.engine.config import Initial
from alprbf.engine.initial import density_initial, draw_m0_initial, initial_labeled, m0_initial
from alprbf.engine.protocol import make_folds
from alprbf.engine.seeding import derive_seed


def test_folds_partition_rows_and_are_stratified():
    y = np.repeat([0, 1, 2], [30, 60, 90])
    folds = make_folds(y, 3, True, derive_seed(0, "folds", "x", 0))
    allrows = np.sort(np.concatenate(folds))
    assert np.array_equal(allrows, np.arange(len(y)))
    for f in folds:
        assert np.bincount(y[f]).tolist() == [10, 20, 30]


def test_density_initial_picks_dense_rows_of_every_cluster():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    X = np.vstack([c + rng.normal(size=(100, 2)) for c in centres])
    X = np.vstack([X, rng.uniform(-20, 30, size=(30, 2))])  # sparse outliers
    picks = density_initial(X, 6, np.random.default_rng(1), n_components=3)
    assert len(set(picks.tolist())) == 6
    assert np.all(picks < 300)  # no outlier is chosen
    clusters = {int(np.argmin(((X[i] - centres) ** 2).sum(1))) for i in picks}
    assert clusters == {0, 1, 2}  # one sweep visits every component
    again = density_initial(X, 6, np.random.default_rng(1), n_components=3)
    assert np.array_equal(picks, again)


@pytest.mark.slow   # fits M0's grid
def test_m0_initial_draws_central_rows_of_every_cluster_from_the_pools_model():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])
    X = np.vstack([c + rng.normal(size=(80, 2)) for c in centres])
    picks = m0_initial(X, 8, np.random.default_rng(1))
    assert len(set(picks.tolist())) == 8
    owner = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(2), axis=1)
    assert np.bincount(owner[picks], minlength=4).tolist() == [2, 2, 2, 2]
    assert np.all(np.linalg.norm(X[picks] - centres[owner[picks]], axis=1) < 1.5)   # central
    assert np.array_equal(picks, m0_initial(X, 8, np.random.default_rng(1)))
    via_config = initial_labeled(X, np.zeros(len(X), int), Initial("density_m0", 8), 1,
                                 np.random.default_rng(1))
    assert np.array_equal(via_config, np.sort(picks))
    fresh, memo = np.random.default_rng(7), np.random.default_rng(7)
    direct = draw_m0_initial(X, 8, fresh)
    m0_initial(X, 8, np.random.default_rng(7))                  # fills the memo
    assert np.array_equal(m0_initial(X, 8, memo), direct)       # a hit: same picks ...
    assert fresh.integers(10**9) == memo.integers(10**9)        # ... and generator state


@pytest.mark.slow
def test_m0_initial_takes_the_configs_density_options():
    rng = np.random.default_rng(3)       # one tight cluster far from two that overlap (4-d)
    X = np.vstack([rng.normal([-1.0, 0.9, -1.3, -1.25], [0.4, 0.8, 0.1, 0.15], (40, 4)),
                   rng.normal([0.1, -0.65, 0.28, 0.17], [0.6, 0.7, 0.25, 0.25], (40, 4)),
                   rng.normal([0.9, -0.2, 1.0, 1.1], [0.75, 0.7, 0.3, 0.35], (40, 4))])
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    base = {"initial_components": [1, 2, 3, 4]}
    rows = {**base, "representativity": "held_out_rows"}
    via_config = initial_labeled(X, np.zeros(len(X), int), Initial("density_m0", 8, density=rows),
                                 1, np.random.default_rng(1))
    assert np.array_equal(via_config, np.sort(draw_m0_initial(X, 8, np.random.default_rng(1),
                                                              options=rows)))
    other = m0_initial(X, 8, np.random.default_rng(1), options=base)   # not the memo's picks
    assert np.array_equal(other, draw_m0_initial(X, 8, np.random.default_rng(1), options=base))
    assert not np.array_equal(np.sort(other), via_config)
    assert np.sum(via_config < 40) >= 2          # the far cluster is a component of M0


def test_per_class_initial_set():
    y = np.repeat([0, 1], [20, 40])
    X = np.zeros((60, 1))
    idx = initial_labeled(X, y, Initial("per_class", 3), 2, np.random.default_rng(0))
    assert np.bincount(y[idx]).tolist() == [3, 3]
