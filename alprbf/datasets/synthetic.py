"""Data sets generated in code from their published definitions."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_moons

from ._base import DATASETS, Dataset, DatasetLoader, make_dataset


def _rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def breiman_waveform(n_samples: int, rng: np.random.Generator, noise: float = 1.0):
    """Breiman et al. (1984, CART, §2.6.2) waveform generator, version 1 (21 attributes).

    Three triangular base waves on ``i = 1..21``: ``h1(i) = max(6 - |i - 11|, 0)``,
    ``h2(i) = h1(i - 4)``, ``h3(i) = h1(i + 4)``.  A sample of class 0 is
    ``u h1 + (1 - u) h2``, class 1 ``u h1 + (1 - u) h3``, class 2 ``u h2 + (1 - u) h3`` with
    ``u ~ U(0, 1)``, plus independent N(0, noise^2) noise on every attribute; classes are drawn
    with equal probability (this is also what UCI's ``waveform.c`` does).

    Returns
    -------
    X : ndarray of shape (n_samples, 21)
    y : ndarray of shape (n_samples,), values in {0, 1, 2}
    """
    i = np.arange(1, 22)
    h1 = np.maximum(6 - np.abs(i - 11), 0).astype(float)
    h2 = np.maximum(6 - np.abs(i - 15), 0).astype(float)
    h3 = np.maximum(6 - np.abs(i - 7), 0).astype(float)
    pairs = np.array([[h1, h2], [h1, h3], [h2, h3]])  # (3, 2, 21)
    y = rng.integers(0, 3, size=n_samples)
    u = rng.uniform(size=(n_samples, 1))
    X = u * pairs[y, 0] + (1 - u) * pairs[y, 1] + noise * rng.standard_normal((n_samples, 21))
    return X, y


@DATASETS.register("waveform")
class Waveform(DatasetLoader):
    """Breiman's waveform data (21 noisy attributes, 3 classes), generated.

    Parameters
    ----------
    n_samples : int, default=5000
        Seed 000 and 001 use 5000 samples.
    noise : float, default=1.0
        Standard deviation of the additive Gaussian noise.
    """

    description = "Breiman waveform, generated (default 5000 x 21, 3 classes)"
    citation = "Breiman, Friedman, Olshen & Stone (1984), Classification and Regression Trees"

    def __init__(self, n_samples: int = 5000, noise: float = 1.0) -> None:
        self.n_samples = n_samples
        self.noise = noise

    def load(self, seed=None) -> Dataset:
        X, y = breiman_waveform(self.n_samples, _rng(seed), self.noise)
        return make_dataset("waveform", X, y)


@DATASETS.register("two_moons")
class TwoMoons(DatasetLoader):
    """Two interleaving half circles (sklearn's ``make_moons``), 2 classes.

    Parameters
    ----------
    n_samples : int, default=800
        800 as in the LapSVM two-moons set used by seed 003.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the points.
    """

    description = "two interleaving moons, generated (default 800 x 2, 2 classes)"

    def __init__(self, n_samples: int = 800, noise: float = 0.1) -> None:
        self.n_samples = n_samples
        self.noise = noise

    def load(self, seed=None) -> Dataset:
        rs = int(_rng(seed).integers(2**31 - 1))
        X, y = make_moons(n_samples=self.n_samples, noise=self.noise, random_state=rs)
        return make_dataset("two_moons", X, y)
