"""Data sets generated in code from their published definitions.

Every generator draws only from the ``numpy.random.Generator`` built from the loader's seed
(a :class:`numpy.random.SeedSequence` derived from the config seed), so a data set is identical
for the same seed and independent of global random state.
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_moons

from ..errors import UserError
from ._base import DATASETS, Dataset, DatasetLoader, make_dataset


def _rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def _positive_int(value, what: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise UserError(f"dataset '{name}': {what} must be an integer >= 2, got {value!r}")
    return value


def _triangle(peak: int) -> np.ndarray:
    """Breiman's triangular base wave on i = 1..21: max(6 - |i - peak|, 0)."""
    i = np.arange(1, 22)
    return np.maximum(6 - np.abs(i - peak), 0).astype(float)


# Class -> the two base waves it mixes (peaks on the 1..21 grid), numbered as UCI's waveform.c
# and waveform.data: class 0 mixes the outer waves (peaks 7 and 15), class 1 the waves peaking at
# 7 and 11, class 2 those peaking at 11 and 15.  (Breiman's book numbers them 3, 2, 1.)
WAVEFORM_PAIRS = ((7, 15), (7, 11), (11, 15))


def breiman_waveform(n_samples: int, rng: np.random.Generator, noise: float = 1.0):
    """Breiman et al. (1984, CART, §2.6.2) waveform generator, version 1 (21 attributes).

    Three triangular base waves on ``i = 1..21``: ``h1(i) = max(6 - |i - 11|, 0)``,
    ``h2(i) = h1(i - 4)`` (peak at 15), ``h3(i) = h1(i + 4)`` (peak at 7).  A sample mixes two of
    them, ``u h_a + (1 - u) h_b`` with ``u ~ U(0, 1)``, plus independent N(0, noise^2) noise on
    every attribute; classes are drawn with equal probability.  The class numbering follows
    UCI's ``waveform.c`` / ``waveform.data`` (see ``WAVEFORM_PAIRS``), checked against the
    class means of the UCI file: class 0 = (h3, h2), class 1 = (h3, h1), class 2 = (h1, h2).

    Returns
    -------
    X : ndarray of shape (n_samples, 21)
    y : ndarray of shape (n_samples,), values in {0, 1, 2}
    """
    pairs = np.array([[_triangle(a), _triangle(b)] for a, b in WAVEFORM_PAIRS])  # (3, 2, 21)
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
        Constantinopoulos & Likas 2008 and 2006 use 5000 samples (the UCI file is
        ``waveform_uci``).
    noise : float, default=1.0
        Standard deviation of the additive Gaussian noise.
    """

    description = "Breiman waveform, generated (default 5000 x 21, 3 classes)"
    expected = (5000, 21, 3)  # with the default parameters
    papers = "000 T1, 001 TI"
    paper_note = "generated; the UCI file is waveform_uci"
    citation = "Breiman, Friedman, Olshen & Stone (1984), Classification and Regression Trees"

    def __init__(self, n_samples: int = 5000, noise: float = 1.0) -> None:
        self.n_samples = n_samples
        self.noise = noise

    def load(self, seed=None) -> Dataset:
        n = _positive_int(self.n_samples, "n_samples", "waveform")
        X, y = breiman_waveform(n, _rng(seed), self.noise)
        return make_dataset("waveform", X, y)


@DATASETS.register("two_moons")
class TwoMoons(DatasetLoader):
    """Two interleaving half circles (sklearn's ``make_moons``), 2 balanced classes.

    Reitmaier et al. 2016 uses Melacci's LapSVM two-moons set (800 points, 400 per class); its file
    is not available, so it is generated: upper moon ``(cos t, sin t)``, lower moon
    ``(1 - cos t, 1/2 - sin t)``, ``t`` evenly spaced on ``[0, pi]``, plus Gaussian noise.

    Parameters
    ----------
    n_samples : int, default=800
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the points.
    """

    description = "two interleaving moons, generated (default 800 x 2, 2 classes)"
    expected = (800, 2, 2)  # with the default parameters
    papers = "003 T1"
    paper_note = "generated"
    citation = "Melacci & Belkin (2011), LapSVM in the primal (two-moons data); sklearn make_moons"

    def __init__(self, n_samples: int = 800, noise: float = 0.1) -> None:
        self.n_samples = n_samples
        self.noise = noise

    def load(self, seed=None) -> Dataset:
        n = _positive_int(self.n_samples, "n_samples", "two_moons")
        rs = int(_rng(seed).integers(2**31 - 1))
        X, y = make_moons(n_samples=n, noise=self.noise, random_state=rs)
        return make_dataset("two_moons", X, y)


# Clouds: class 0 = equal mixture of three isotropic Gaussians, class 1 = one Gaussian to their
# right.  ELENA's exact parameters could not be retrieved offline; this layout keeps its
# structure (3 + 1 Gaussians, 2 x 2500 points, heavy overlap) and the class-1 spread is set so
# that the Bayes error is 9.63 % (Monte Carlo, 10^6 draws per class), ELENA's published value
# being 9.66 % (quoted from memory of the ELENA report; not re-checkable offline).
CLOUDS_CLASS0 = (((-1.0, 1.0), 0.3), ((-1.0, -1.0), 0.3), ((0.0, 0.0), 0.3))
CLOUDS_CLASS1 = ((1.0, 0.0), 0.82)


def clouds(n_per_class: int, rng: np.random.Generator):
    """Draw the two-class, two-dimensional "clouds" problem (see ``CLOUDS_CLASS0/1``).

    Returns
    -------
    X : ndarray of shape (2 * n_per_class, 2)
    y : ndarray of shape (2 * n_per_class,), 0 for the three-Gaussian class, 1 for the other
    """
    means = np.array([m for m, _ in CLOUDS_CLASS0])
    sds = np.array([s for _, s in CLOUDS_CLASS0])
    comp = rng.integers(0, len(means), size=n_per_class)
    X0 = means[comp] + sds[comp, None] * rng.standard_normal((n_per_class, 2))
    (m1, s1) = CLOUDS_CLASS1
    X1 = np.asarray(m1) + s1 * rng.standard_normal((n_per_class, 2))
    X = np.vstack([X0, X1])
    y = np.repeat([0, 1], n_per_class)
    order = rng.permutation(len(y))
    return X[order], y[order]


@DATASETS.register("clouds")
class Clouds(DatasetLoader):
    """ELENA-style "clouds": 2 x 2500 points in 2-D; class 0 a mixture of three Gaussians, class 1
    one broad Gaussian; heavily overlapping (Bayes error about 9.6 %).

    The ELENA file (``databases/ARTIFICIAL/clouds``) is not available; the parameters are a
    reconstruction (module constants ``CLOUDS_CLASS0`` / ``CLOUDS_CLASS1``; how they were chosen:
    docs/history/notes.md, 'Data sets without their original file').

    Parameters
    ----------
    n_samples : int, default=5000
        Total, split equally between the classes (ELENA: 2500 each).
    """

    description = "ELENA-style clouds, generated (default 5000 x 2, 2 classes)"
    expected = (5000, 2, 2)  # with the default parameters
    papers = "003 T1"
    paper_note = ("generated, ELENA parameters reconstructed; 003 T1 prints class shares 52.2/50.0 "
                  "(typo for 50/50)")
    citation = ("ELENA project, Aviles-Cruz, Guerin-Dugue, Voz & Van Cappel (1995), "
                "artificial 'clouds'")

    def __init__(self, n_samples: int = 5000) -> None:
        self.n_samples = n_samples

    def load(self, seed=None) -> Dataset:
        n = _positive_int(self.n_samples, "n_samples", "clouds")
        X, y = clouds(n // 2, _rng(seed))
        return make_dataset("clouds", X, y)


def _uniform_annulus(n: int, r_in: float, r_out: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform on the annulus ``r_in <= r <= r_out`` around the origin."""
    r = np.sqrt(rng.uniform(r_in**2, r_out**2, size=n))
    t = rng.uniform(0.0, 2 * np.pi, size=n)
    return np.column_stack([r * np.cos(t), r * np.sin(t)])


@DATASETS.register("concentric")
class Concentric(DatasetLoader):
    """ELENA "concentric": class 0 uniform in the disk of radius 0.3, class 1 uniform in the ring
    0.3 < r <= 0.5 around it, both centred on (0.5, 0.5); no overlap (Bayes error 0).

    The ELENA file has 2500 points with 921 in the disk and 1579 in the ring (36.8 % / 63.2 %,
    Reitmaier et al. 2016, Table 1); the class sizes are fixed to those proportions (drawing the
    class by area would give 36 % / 64 %).

    Parameters
    ----------
    n_samples : int, default=2500
    inner_fraction : float, default=921/2500
        Share of class 0 (the disk).
    """

    description = "ELENA concentric, generated (default 2500 x 2, 2 classes, 36.8/63.2 %)"
    expected = (2500, 2, 2)  # with the default parameters
    papers = "003 T1"
    paper_note = "generated"
    citation = ("ELENA project, Aviles-Cruz, Guerin-Dugue, Voz & Van Cappel (1995), "
                "artificial 'concentric'")

    def __init__(self, n_samples: int = 2500, inner_fraction: float = 921 / 2500) -> None:
        self.n_samples = n_samples
        self.inner_fraction = inner_fraction

    def load(self, seed=None) -> Dataset:
        n = _positive_int(self.n_samples, "n_samples", "concentric")
        if not 0.0 < self.inner_fraction < 1.0:
            raise UserError("dataset 'concentric': inner_fraction must be in (0, 1), got "
                            f"{self.inner_fraction!r}")
        rng = _rng(seed)
        n0 = int(round(self.inner_fraction * n))
        X = np.vstack([_uniform_annulus(n0, 0.0, 0.3, rng),
                       _uniform_annulus(n - n0, 0.3, 0.5, rng)]) + 0.5
        y = np.repeat([0, 1], [n0, n - n0])
        order = rng.permutation(n)
        return make_dataset("concentric", X[order], y[order])


# Ripley (1994; PRNN 1996, §1.3): each class an equal mixture of two bivariate normals with
# covariance 0.03 I; class 0 means (-0.7, 0.3) and (0.3, 0.3), class 1 (-0.3, 0.7) and (0.4, 0.7)
# (labels as in synth.tr / synth.te, checked by fitting a 2-component mixture per class).
RIPLEY_MEANS = (((-0.7, 0.3), (0.3, 0.3)), ((-0.3, 0.7), (0.4, 0.7)))
RIPLEY_VAR = 0.03


@DATASETS.register("ripley_synthetic")
class RipleySynthetic(DatasetLoader):
    """Ripley's synthetic two-class problem, generated (fallback for the ``ripley`` files).

    Each class is an equal mixture of two Gaussians with covariance ``0.03 I`` (means in
    ``RIPLEY_MEANS``); classes are balanced.

    Parameters
    ----------
    n_samples : int, default=1250
        Total (the published files hold 250 + 1000 points).
    """

    description = "Ripley's synthetic problem, generated (default 1250 x 2, 2 classes)"
    expected = (1250, 2, 2)  # with the default parameters
    papers = "003 T1"
    paper_note = "generated fallback for ripley"
    citation = "Ripley (1994), Neural networks and related methods for classification, JRSS B 56"

    def __init__(self, n_samples: int = 1250) -> None:
        self.n_samples = n_samples

    def load(self, seed=None) -> Dataset:
        n = _positive_int(self.n_samples, "n_samples", "ripley_synthetic")
        rng = _rng(seed)
        y = np.repeat([0, 1], [n - n // 2, n // 2])
        comp = rng.integers(0, 2, size=n)
        means = np.asarray(RIPLEY_MEANS)[y, comp]
        X = means + np.sqrt(RIPLEY_VAR) * rng.standard_normal((n, 2))
        order = rng.permutation(n)
        return make_dataset("ripley_synthetic", X[order], y[order])
