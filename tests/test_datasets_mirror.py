"""The real files: every mirrored data set loads with the published shape and classes.

Needs ``ALPRBF_DATA_MIRROR`` (e.g. ``../shared/datasets``); skipped cleanly without it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from alprbf.datasets import DATASETS, Preprocessing
from alprbf.datasets.fetch import is_available
from alprbf.datasets.published import PUBLISHED

pytestmark = [pytest.mark.mirror,
              pytest.mark.skipif(not os.environ.get("ALPRBF_DATA_MIRROR"),
                                 reason="ALPRBF_DATA_MIRROR is not set")]


def load(name, **params):
    cls = DATASETS[name]
    if not all(is_available(cls.folder, f) for f in cls.files):
        pytest.skip(f"{name} is not in the mirror")
    return cls(**params).load_files(allow_download=False, progress=False)


@pytest.mark.parametrize("name", PUBLISHED)
def test_mirrored_dataset_matches_published_shape(name):
    ds = load(name)
    assert (ds.n_samples, ds.n_features, ds.n_classes) == DATASETS[name].expected
    assert np.isfinite(ds.X).all() or name == "credit_a"
    assert ds.source in ("mirror", "cache", "cache+mirror")


def test_paper_specific_shapes():
    assert Preprocessing(drop_constant=True).apply_global(load("optdigits")).n_features == 62
    assert load("vowel", subset="all").n_samples == 990
    assert load("mnist", subset="train").n_samples == 60000
    assert np.isnan(load("credit_a").X).sum() == 67
    assert Preprocessing(missing="drop").apply_global(load("credit_a")).n_samples == 653


def test_uci_copies_against_sklearn_copies():
    a, b = DATASETS["iris"]().load(), load("iris_uci")
    assert np.flatnonzero((a.X != b.X).any(axis=1)).tolist() == [34, 37]  # UCI errata
    np.testing.assert_array_equal(DATASETS["wine"]().load().X, load("wine_uci").X)


def test_generator_matches_uci_waveform_statistics():
    uci = load("waveform_uci")
    gen = DATASETS["waveform"](n_samples=30000).load(np.random.SeedSequence(0))
    for c in range(3):
        np.testing.assert_allclose(uci.X[uci.y == c].mean(0), gen.X[gen.y == c].mean(0),
                                   atol=0.2)
