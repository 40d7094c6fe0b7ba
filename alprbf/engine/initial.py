"""The initial labeled set drawn from a fold's training part: random, per class, density-based
(Reitmaier et al. 2016, Algorithm 2) or all of it.

The draws depend only on the generator handed in; :func:`alprbf.engine.protocol.run_task` derives it
from the seed, the dataset, the repetition and the fold, so every method of an experiment
starts from the same labels.  Whether the training part can hold the set is checked before
(:func:`alprbf.engine.protocol.feasible_folds`).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from ..errors import UserError
from ..prbf import estimate_log_gaussian_prob
from ..svm_kernels.density import (
    REITMAIER2016_M0,
    DensityOptions,
    fit_density,
    log_component_densities,
    responsibilities,
)
from .config import Initial


def initial_labeled(X: np.ndarray, y: np.ndarray, initial: Initial, n_classes: int,
                    rng: np.random.Generator, categorical=None) -> np.ndarray:
    """Indices (into ``X``) of the initial labeled set drawn from a fold's training part.

    Parameters
    ----------
    X : ndarray of shape (n_train, n_features)
        The training part (fold-preprocessed).
    y : ndarray of shape (n_train,)
        Its class codes.
    initial : Initial
        Method and size (:meth:`~alprbf.engine.config.Initial.n_rows`); the part must be large
        enough.
    n_classes : int
    rng : numpy.random.Generator
    categorical : array-like of bool or None
        Categorical columns (``density_m0`` only: the density model's multinomials).

    Returns
    -------
    ndarray of int
        Sorted row indices.
    """
    if initial.method == "all":
        return np.arange(len(y))
    size = initial.n_rows(len(y), n_classes)
    if initial.method == "random":
        return np.sort(rng.choice(len(y), size=size, replace=False))
    if initial.method == "per_class":
        picks = [rng.choice(np.flatnonzero(y == k), size=initial.size, replace=False)
                 for k in range(n_classes)]
        return np.sort(np.concatenate(picks))
    if initial.method == "density":
        return np.sort(density_initial(X, size, rng))
    if initial.method == "density_m0":
        mask = None if categorical is None or not np.any(categorical) else \
            np.asarray(categorical, bool)
        return np.sort(m0_initial(X, size, rng, mask, options=initial.density))
    raise UserError(f"unknown initial method '{initial.method}'")  # guarded by config parsing


def density_initial(X: np.ndarray, size: int, rng: np.random.Generator,
                    n_components: int | None = None, top_fraction: float = 0.1) -> np.ndarray:
    """Density-based initial selection (Reitmaier et al. 2016, Algorithm 2).

    A mixture model is fitted by variational inference to the unlabeled pool (sklearn's
    ``BayesianGaussianMixture``, full covariances).  Until ``size`` rows are chosen: draw a
    component not visited in the current sweep, rank the pool by ``p(x | component)`` and pick a
    random row from the top ``top_fraction`` not yet chosen; a sweep ends when every component
    was visited.  ``n_components`` defaults to ``size`` (capped at 20): the paper leaves the
    number of components J to the VI fit.  The paper draws ``r`` from ``[0, J]``; we read that as
    the J component indices ``0 .. J-1``.
    """
    from sklearn.mixture import BayesianGaussianMixture

    J = int(n_components or min(size, 20))
    J = max(1, min(J, len(X)))
    vi = BayesianGaussianMixture(n_components=J, covariance_type="full", max_iter=200,
                                 reg_covar=1e-6, random_state=seed_int_from_rng(rng))
    vi.fit(X)
    # log N(x | mu_r, Sigma_r) for every component (same precision-Cholesky convention as sklearn)
    log_dens = estimate_log_gaussian_prob(X, vi.means_, vi.precisions_cholesky_, "full")
    chosen: list[int] = []
    taken = np.zeros(len(X), bool)
    visited: set[int] = set()
    while len(chosen) < size:
        if len(visited) == J:
            visited.clear()
        r = int(rng.choice([j for j in range(J) if j not in visited]))
        visited.add(r)
        order = np.argsort(-log_dens[:, r], kind="stable")
        order = order[~taken[order]]
        top = order[: max(1, int(np.ceil(top_fraction * len(order))))]
        pick = int(rng.choice(top))
        taken[pick] = True
        chosen.append(pick)
    return np.asarray(chosen, dtype=np.int64)


def seed_int_from_rng(rng: np.random.Generator) -> int:
    """An int seed drawn from ``rng`` (for sklearn's ``random_state``)."""
    return int(rng.integers(2**31 - 1))


_M0_PICKS: dict[str, tuple[np.ndarray, dict]] = {}
"""Memo of :func:`m0_initial` within a process: every method of a fold draws the same initial
set from the same rows and seed (:func:`alprbf.engine.protocol.run_task`), and M0's grid search
costs seconds to minutes, so a worker computes it once per fold.  Keyed by the rows, the size, the
categorical mask and the generator's state before the call; a hit returns the same picks and
leaves the generator in the state the call would, so results are bit-identical."""
_M0_MEMO_SIZE = 64


def m0_initial(X: np.ndarray, size: int, rng: np.random.Generator, categorical=None,
               top_fraction: float = 0.1, options: dict | None = None) -> np.ndarray:
    """Memoised :func:`draw_m0_initial` (see :data:`_M0_PICKS`)."""
    key = hashlib.sha256(np.ascontiguousarray(X, dtype=np.float64).tobytes()).hexdigest() + \
        json.dumps([X.shape, size, top_fraction, None if categorical is None else
                    np.asarray(categorical, bool).tolist(), rng.bit_generator.state]
                   + ([options] if options else []), sort_keys=True, default=str)
    if key not in _M0_PICKS:
        picks = draw_m0_initial(X, size, rng, categorical, top_fraction, options)
        if len(_M0_PICKS) >= _M0_MEMO_SIZE:
            _M0_PICKS.pop(next(iter(_M0_PICKS)))
        _M0_PICKS[key] = (picks, rng.bit_generator.state)
    picks, state = _M0_PICKS[key]
    rng.bit_generator.state = state
    return picks.copy()


def _tuples(options: dict) -> dict:
    """Config lists as the tuples :class:`DensityOptions` keeps."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}


def draw_m0_initial(X: np.ndarray, size: int, rng: np.random.Generator, categorical=None,
                    top_fraction: float = 0.1, options: dict | None = None) -> np.ndarray:
    """Algorithm 2 on the density model M0 of Reitmaier et al. 2016 (the reading of issue
    50, part 2).

    M0 is :func:`~alprbf.svm_kernels.density.fit_density` with the options of
    :data:`~alprbf.svm_kernels.density.REITMAIER2016_M0` (the model class and search of the
    ``kernel_svm`` methods' ``density`` block of table 003; ``options`` replace some of them:
    ``protocol.initial.density``), fitted once per fold with a seed
    from ``rng``, so that every method starts from the same labels.  Components that carry no
    data are never drawn: a component is eligible while it is the most responsible component
    (eq 2) of at least one row not yet chosen (the weight threshold: at least one row of data).
    Until ``size`` rows are chosen: draw an eligible component ``r`` not visited in the current
    sweep, rank its own rows (those it is most responsible for) by ``p(x | r)`` and pick a
    random row from their top ``top_fraction`` (at least one); a sweep ends when every eligible
    component was visited.
    """
    density = fit_density(X, categorical, DensityOptions(**{**REITMAIER2016_M0,
                                                            **_tuples(options or {})}),
                          random_state=seed_int_from_rng(rng))
    members = np.argmax(responsibilities(density, X), axis=1)
    log_dens = log_component_densities(density, X)
    chosen: list[int] = []
    taken = np.zeros(len(X), bool)
    visited: set[int] = set()
    while len(chosen) < size:
        eligible = [j for j in range(density.n_components)
                    if np.any((members == j) & ~taken)]
        if not eligible:                       # every row chosen: cannot happen for size < n
            break
        if not set(eligible) - visited:
            visited.clear()
        r = int(rng.choice([j for j in eligible if j not in visited]))
        visited.add(r)
        own = np.flatnonzero((members == r) & ~taken)
        order = own[np.argsort(-log_dens[own, r], kind="stable")]
        top = order[: max(1, int(np.ceil(top_fraction * len(order))))]
        pick = int(rng.choice(top))
        taken[pick] = True
        chosen.append(pick)
    return np.asarray(chosen, dtype=np.int64)
