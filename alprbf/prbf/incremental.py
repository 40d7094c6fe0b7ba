"""Incremental PRBF-split (Constantinopoulos & Likas 2006, §III) and the model-selection protocol
of its §IV.

* :func:`incremental_path` -- one incremental run: PRBF(1) (eqs 18-20), then repeated node
  addition (:func:`alprbf.prbf._incremental.propose_component`) + full EM, up to
  ``max_components`` or until no candidate passes the test; every intermediate PRBF(m) and its
  split PRBFsplit(m) (eqs 11-15) is kept, so model selection over ``m`` costs one run.
* :class:`IncrementalPRBFSplit` -- sklearn estimator around one run; predicts with the last
  (or any intermediate) network.
* :class:`SelectedIncrementalPRBFSplit` -- 001's protocol inside one outer training part:
  for every inner fold (:func:`alprbf.prbf._selection.inner_cv_splits`, nine by default) and
  every covariance type, one incremental run scores all ``m`` at once on the held-out fold;
  ``(m, covariance type)`` with the smallest mean validation error is retrained on the whole
  training part.
* :class:`SelectedPRBFSplit` -- the PRBFsplit baseline with the same selection: for every
  ``m`` in ``m_grid`` and covariance type, EM with fixed ``m`` (best of ``n_init`` = 5
  restarts) then the split.

Choices where the paper is silent:

* If a run stops at ``M_stop < m``, the model "with m components" is PRBFsplit(M_stop) (a run
  capped at ``m`` would return exactly that), so its validation error is used for every
  larger ``m`` when averaging over inner folds.
* Ties in the mean validation error go to the smaller ``m``, then to the covariance type
  listed first (default order spherical, diag, full: the simpler model).
* The inner folds re-split the outer training part with a fixed seed, identically for every
  method (the paper reuses the outer folds; both give nine train/validation pairs with a
  1:8 ratio).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ..validation import check_int, check_params
from ._base import PRBFClassifierBase
from ._data import prepare_data
from ._em import INIT_METHODS, fit_em, run_em
from ._estep import e_step
from ._incremental import AdditionInfo, one_component_params, propose_component
from ._kdtree import SPLIT_POINTS
from ._params import COVARIANCE_TYPES, PRBFParams
from ._predict import predict_log_proba
from ._selection import inner_cv_splits
from ._split import split_params


@dataclass
class IncrementalPath:
    """Every model of one incremental run.

    Attributes
    ----------
    networks : list of PRBFParams
        ``networks[m-1]`` = PRBF(m) after EM (unsplit).
    splits : list of PRBFParams
        ``splits[m-1]`` = PRBFsplit(m).
    logliks : list of float
        Class-conditional log-likelihood (001 eq 6) of each PRBF(m).
    additions : list of AdditionInfo
        One per attempted addition (the last one failed unless ``max_components`` was hit).
    stopped : str
        ``"max_components"`` or ``"no_candidate"``.
    """

    networks: list = field(default_factory=list)
    splits: list = field(default_factory=list)
    logliks: list = field(default_factory=list)
    additions: list = field(default_factory=list)
    stopped: str = "max_components"

    @property
    def n_models(self) -> int:
        return len(self.networks)


def incremental_path(X: np.ndarray, y: np.ndarray, n_classes: int, *, max_components: int = 30,
                     covariance_type: str = "full", add_threshold: float = 0.01,
                     kd_depth: int = 3, split_point: str = "mean", reg_covar: float = 1e-6,
                     tol: float = 1e-4, max_iter: int = 200, partial_max_iter: int = 10,
                     partial_tol: float = 1e-5, split_min_mass: float = 1e-3,
                     min_classes: int = 2, degenerate_tol: float = 1e-3) -> IncrementalPath:
    """Run the incremental algorithm of 001 §III.A (steps 1-7) on labeled data.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of int, shape (n,)
        Class codes ``0..n_classes-1`` (all rows labeled).
    n_classes : int
    max_components : int
        ``M_max`` (paper: 30).
    covariance_type : {"full", "diag", "spherical"}
    add_threshold, kd_depth, split_point, min_classes, partial_max_iter, partial_tol, degenerate_tol
        Node addition settings (see :func:`alprbf.prbf._incremental.try_add_component`).
    reg_covar, tol, max_iter
        EM settings (:func:`alprbf.prbf._em.run_em`).
    split_min_mass : float
        Responsibility mass above which a component counts as serving a class in the split
        (:func:`alprbf.prbf._split.split_params`).

    Returns
    -------
    IncrementalPath
    """
    data = prepare_data(X, y, n_classes, covariance_type)
    params = one_component_params(data.X, data.y, n_classes, covariance_type, reg_covar)
    path = IncrementalPath()

    def record(p: PRBFParams, est) -> None:
        path.networks.append(p)
        path.logliks.append(est.loglik_labeled)
        path.splits.append(split_params(data, p, est, reg_covar=reg_covar,
                                        min_mass=split_min_mass).params)

    record(params, e_step(data, params))
    while params.n_components < max_components:
        new, info = propose_component(data.X, data.y, params, add_threshold=add_threshold,
                                      min_classes=min_classes, kd_depth=kd_depth,
                                      split_point=split_point, reg_covar=reg_covar,
                                      partial_max_iter=partial_max_iter,
                                      partial_tol=partial_tol, degenerate_tol=degenerate_tol)
        path.additions.append(info)
        if new is None:
            path.stopped = "no_candidate"
            break
        res = run_em(data, new, tol=tol, max_iter=max_iter, reg_covar=reg_covar)
        info.em_info = res
        params = res.params
        record(params, res.estep)
    return path


class IncrementalPRBFSplit(PRBFClassifierBase):
    """Incremental PRBF-split (001 §III): grow the network one component at a time, then split.

    Parameters
    ----------
    max_components : int, default=30
        ``M_max``.
    covariance_type : {"full", "diag", "spherical"}, default="full"
    add_threshold : float, default=0.01
        Minimum total per-class log-likelihood increase (eq 26) to add a component.
    kd_depth : int, default=3
        kd-tree levels below the root (3 -> 14 candidates per component).
    split_point : {"mean", "median"}, default="mean"
        Where the kd-tree cut crosses the principal axis.
    reg_covar : float, default=1e-6
    tol : float, default=1e-4
        EM convergence threshold (change of the mean per-row log-likelihood).
    max_iter : int, default=200
        Maximum EM iterations after each addition.
    partial_max_iter : int, default=10
        Maximum partial-EM iterations per candidate.
    split_min_mass : float, default=1e-3
        See :func:`alprbf.prbf._split.split_params`.
    degenerate_tol : float, default=1e-3
        Discard candidates with a variance below this times the data's variance in the same
        direction (:func:`alprbf.prbf._incremental.degenerate_candidates`; 0 = paper-literal).
    select : "last" or int, default="last"
        Network used by ``predict``: the last PRBFsplit(m) of the run, or PRBFsplit(select)
        (capped at the last one).
    classes : array-like or None, default=None
        Every class of the task (see :class:`~alprbf.prbf.PRBFClassifierBase`).
    random_state : None
        Accepted for API uniformity; the algorithm is deterministic.

    Attributes
    ----------
    classes_ : ndarray (K,)
    path_ : IncrementalPath
        All PRBF(m) and PRBFsplit(m), m = 1..n_models_.
    n_models_ : int
        Number of networks built (the run's last ``m``).
    n_components_ : int
        ``m`` of the network used by ``predict`` (before the split).
    params_ : PRBFParams
        The split network used by ``predict``.
    fit_time_ : float
        Wall-clock seconds of ``fit``.
    n_iter_ : int
        Total EM iterations after the additions (at least 1).
    n_features_in_ : int
    """

    def __init__(self, max_components=30, covariance_type="full", add_threshold=0.01,
                 kd_depth=3, split_point="mean", reg_covar=1e-6, tol=1e-4,
                 max_iter=200, partial_max_iter=10, split_min_mass=1e-3,
                 degenerate_tol=1e-3, select="last", classes=None, random_state=None):
        self.max_components = max_components
        self.covariance_type = covariance_type
        self.add_threshold = add_threshold
        self.kd_depth = kd_depth
        self.split_point = split_point
        self.reg_covar = reg_covar
        self.tol = tol
        self.max_iter = max_iter
        self.partial_max_iter = partial_max_iter
        self.split_min_mass = split_min_mass
        self.degenerate_tol = degenerate_tol
        self.select = select
        self.classes = classes
        self.random_state = random_state

    def _validate(self) -> None:
        owner = type(self).__name__
        check_params(owner, self.get_params(),
                     choices={"covariance_type": COVARIANCE_TYPES, "split_point": SPLIT_POINTS},
                     ints={"max_components": 1, "kd_depth": 1, "max_iter": 0,
                           "partial_max_iter": 0},
                     reals={"add_threshold": None, "reg_covar": None, "tol": None,
                            "split_min_mass": None, "degenerate_tol": None})
        if self.select != "last":
            check_int(owner, "select", self.select, 1)

    def _fit_codes(self, X, codes, n_classes):
        t0 = time.perf_counter()
        self.path_ = incremental_path(
            X, codes, n_classes, max_components=self.max_components,
            covariance_type=self.covariance_type, add_threshold=self.add_threshold,
            kd_depth=self.kd_depth, split_point=self.split_point,
            reg_covar=self.reg_covar, tol=self.tol, max_iter=self.max_iter,
            partial_max_iter=self.partial_max_iter, split_min_mass=self.split_min_mass,
            degenerate_tol=self.degenerate_tol)
        self.n_models_ = self.path_.n_models
        m = self.n_models_ if self.select == "last" else min(int(self.select), self.n_models_)
        self.n_components_ = m
        self.params_ = self.path_.splits[m - 1]
        self.n_iter_ = max(1, sum(a.em_info.n_iter for a in self.path_.additions
                                  if a.em_info is not None))
        self.classes_ = np.arange(n_classes)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _params_for(self, n_components):
        """PRBFsplit(min(n_components, n_models_)), or the selected network for None."""
        if n_components is None:
            return self.params_
        return self.path_.splits[min(int(n_components), self.n_models_) - 1]

    def path_log_proba(self, X) -> np.ndarray:
        """Log posteriors of every PRBFsplit(m): shape (n_models_, n, K)."""
        check_is_fitted(self, "params_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.stack([predict_log_proba(X, p) for p in self.path_.splits])


def _errors_by_m(log_probas: np.ndarray, y: np.ndarray, m_max: int) -> np.ndarray:
    """Validation error of PRBFsplit(m), m = 1..m_max, extended past the run's end."""
    errs = np.mean(np.argmax(log_probas, axis=2) != y[None, :], axis=1)
    if errs.size < m_max:
        errs = np.concatenate([errs, np.full(m_max - errs.size, errs[-1])])
    return errs[:m_max]


def _select(errors: dict, covariance_types) -> tuple[str, int, float]:
    """(covariance type, m, error) with the smallest mean error; ties: smaller m, list order."""
    best = None
    for ct in covariance_types:
        e = errors[ct]
        i = int(np.argmin(e))
        if best is None or e[i] < best[2] - 1e-12 or (abs(e[i] - best[2]) <= 1e-12
                                                     and i + 1 < best[1]):
            best = (ct, i + 1, float(e[i]))
    assert best is not None
    return best


class _SelectedBase(PRBFClassifierBase):
    """Inner-CV selection of (m, covariance type) shared by the two PRBF-split protocols."""

    def _check_common(self) -> None:
        owner = type(self).__name__
        cts = tuple(self.covariance_types)
        if not cts or any(c not in COVARIANCE_TYPES for c in cts):
            raise ValueError(f"{owner}: invalid covariance_types={cts!r}; "
                             f"valid: a non-empty subset of {', '.join(COVARIANCE_TYPES)}")
        check_params(owner, self.get_params(), ints={"inner_folds": 2, "cv_seed": 0})

    def _score_fold(self, X_tr, y_tr, X_va, y_va, n_classes, ct) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _final(self, X, codes, n_classes, ct, m):
        raise NotImplementedError  # pragma: no cover

    def _fit_codes(self, X, codes, n_classes):
        t0 = time.perf_counter()
        cts = tuple(self.covariance_types)
        splits = inner_cv_splits(codes, self.inner_folds, self.cv_seed)
        self.cv_errors_ = {}
        if splits:
            for ct in cts:
                rows = [self._score_fold(X[tr], codes[tr], X[va], codes[va], n_classes, ct)
                        for tr, va in splits]
                self.cv_errors_[ct] = np.mean(rows, axis=0)
            ct, m, err = _select(self.cv_errors_, cts)
        else:  # too few rows to validate: the first covariance type, m = 1
            ct, m, err = cts[0], 1, np.nan
        self.covariance_type_, self.selected_m_, self.cv_error_ = ct, m, err
        self.selection_time_ = time.perf_counter() - t0
        self._final(X, codes, n_classes, ct, m)
        self.classes_ = np.arange(n_classes)
        self.fit_time_ = time.perf_counter() - t0
        return self


class SelectedIncrementalPRBFSplit(_SelectedBase):
    """Incremental PRBF-split with 001 §IV's selection of ``m`` and the covariance type.

    For every inner fold (``inner_folds`` stratified folds of the training data, a fixed
    ``cv_seed``; 001 uses nine) and every covariance type, one incremental run on the other
    folds scores PRBFsplit(m) for all ``m`` on the held-out fold.  The ``(m, covariance type)``
    with the smallest mean validation error is then trained on all the data (an incremental
    run capped at ``m``).

    Parameters
    ----------
    max_components : int, default=30
    covariance_types : sequence of str, default=("spherical", "diag", "full")
        Candidates, in tie-breaking order.
    inner_folds : int, default=9
    cv_seed : int, default=0
    add_threshold, kd_depth, split_point, reg_covar, tol, max_iter, partial_max_iter,
    split_min_mass, degenerate_tol
        See :class:`IncrementalPRBFSplit`.
    classes : array-like or None, default=None
        Every class of the task (see :class:`~alprbf.prbf.PRBFClassifierBase`).
    random_state : None
        Unused (deterministic).

    Attributes
    ----------
    classes_ : ndarray (K,)
    cv_errors_ : dict str -> ndarray (max_components,)
        Mean validation error of PRBFsplit(m) per covariance type.
    covariance_type_ : str
    selected_m_ : int
        Selected ``m`` (the final run may stop earlier: see ``n_components_``).
    cv_error_ : float
    final_ : IncrementalPRBFSplit
        The retrained model.
    n_components_ : int
        Components of the final network before the split.
    params_ : PRBFParams
        The final split network.
    selection_time_, fit_time_ : float
        Seconds of the inner search and of the whole fit.
    """

    def __init__(self, max_components=30, covariance_types=("spherical", "diag", "full"),
                 inner_folds=9, cv_seed=0, add_threshold=0.01, kd_depth=3,
                 split_point="mean", reg_covar=1e-6, tol=1e-4, max_iter=200,
                 partial_max_iter=10, split_min_mass=1e-3, degenerate_tol=1e-3,
                 classes=None, random_state=None):
        self.max_components = max_components
        self.covariance_types = covariance_types
        self.inner_folds = inner_folds
        self.cv_seed = cv_seed
        self.add_threshold = add_threshold
        self.kd_depth = kd_depth
        self.split_point = split_point
        self.reg_covar = reg_covar
        self.tol = tol
        self.max_iter = max_iter
        self.partial_max_iter = partial_max_iter
        self.split_min_mass = split_min_mass
        self.degenerate_tol = degenerate_tol
        self.classes = classes
        self.random_state = random_state

    def _inner(self, ct: str, max_components: int) -> IncrementalPRBFSplit:
        return IncrementalPRBFSplit(
            max_components=max_components, covariance_type=ct, add_threshold=self.add_threshold,
            kd_depth=self.kd_depth, split_point=self.split_point,
            reg_covar=self.reg_covar, tol=self.tol, max_iter=self.max_iter,
            partial_max_iter=self.partial_max_iter, split_min_mass=self.split_min_mass,
            degenerate_tol=self.degenerate_tol)

    def _validate(self) -> None:
        self._check_common()
        self._inner(COVARIANCE_TYPES[0], self.max_components)._validate()

    def _score_fold(self, X_tr, y_tr, X_va, y_va, n_classes, ct):
        est = self._inner(ct, self.max_components)._fit_codes(X_tr, y_tr, n_classes)
        lp = np.stack([predict_log_proba(X_va, p) for p in est.path_.splits])
        return _errors_by_m(lp, y_va, self.max_components)

    def _final(self, X, codes, n_classes, ct, m):
        self.final_ = self._inner(ct, m)._fit_codes(X, codes, n_classes)
        self.params_ = self.final_.params_
        self.n_components_ = self.final_.n_components_
        self.n_iter_ = self.final_.n_iter_


class SelectedPRBFSplit(_SelectedBase):
    """The PRBFsplit baseline of 001 §IV with the same inner-CV selection.

    For every ``m`` in ``m_grid`` (default 1..max_components) and covariance type, EM with
    fixed ``m`` (best likelihood of ``n_init`` = 5 restarts, as 001; k-means-initialised by
    default, which 001 does not specify) is
    followed by the split; the best ``(m, covariance type)`` by mean validation error is
    retrained on all the data.

    Parameters
    ----------
    max_components : int, default=30
    m_grid : sequence of int or None, default=None
        Values of ``m`` to try (None: 1..max_components).  Untried ``m`` are never selected.
    covariance_types : sequence of str, default=("spherical", "diag", "full")
    inner_folds : int, default=9
    cv_seed : int, default=0
    n_init : int, default=5
    init_params : {"kmeans", "random_from_data", "kmeans_per_class"}, default="kmeans"
        How each EM restart starts: k-means (sklearn's GaussianMixture default) or means at
        random rows.  001 restarts EM "with different initializations" without saying how.
    reg_covar, tol, max_iter, split_min_mass
        EM / split settings.
    classes : array-like or None, default=None
        Every class of the task (see :class:`~alprbf.prbf.PRBFClassifierBase`).
    random_state : int or None
        Seeds the EM initialisations (the same seed for every inner fold and ``m``).

    Attributes
    ----------
    classes_, cv_errors_, covariance_type_, selected_m_, cv_error_, params_, selection_time_,
    fit_time_
        As in :class:`SelectedIncrementalPRBFSplit` (``cv_errors_`` holds ``inf`` for
        untried ``m``).
    n_components_ : int
        ``m`` of the final network (before the split).
    """

    def __init__(self, max_components=30, m_grid=None,
                 covariance_types=("spherical", "diag", "full"), inner_folds=9, cv_seed=0,
                 n_init=5, reg_covar=1e-6, tol=1e-4, max_iter=200, split_min_mass=1e-3,
                 classes=None, random_state=None, init_params="kmeans"):
        self.max_components = max_components
        self.m_grid = m_grid
        self.covariance_types = covariance_types
        self.inner_folds = inner_folds
        self.cv_seed = cv_seed
        self.n_init = n_init
        self.init_params = init_params
        self.reg_covar = reg_covar
        self.tol = tol
        self.max_iter = max_iter
        self.split_min_mass = split_min_mass
        self.classes = classes
        self.random_state = random_state

    def _grid(self) -> list[int]:
        if self.m_grid is None:
            return list(range(1, self.max_components + 1))
        return sorted({int(m) for m in self.m_grid})

    def _validate(self) -> None:
        self._check_common()
        check_params(type(self).__name__, self.get_params(),
                     ints={"max_components": 1, "n_init": 1, "max_iter": 0},
                     reals={"reg_covar": None, "tol": None, "split_min_mass": None},
                     choices={"init_params": INIT_METHODS})
        grid = self._grid()
        if not grid or grid[0] < 1 or grid[-1] > self.max_components:
            raise ValueError(f"{type(self).__name__}: invalid m_grid={self.m_grid!r}; valid: "
                             f"integers in 1..max_components={self.max_components}")

    def _fit_split(self, X, codes, n_classes, ct, m) -> tuple[PRBFParams, int]:
        data = prepare_data(X, codes, n_classes, ct)
        m = min(m, X.shape[0])
        res = fit_em(data, m, tol=self.tol, max_iter=self.max_iter, reg_covar=self.reg_covar,
                     n_init=self.n_init, init_params=self.init_params,
                     random_state=self.random_state)
        return split_params(data, res.params, res.estep, reg_covar=self.reg_covar,
                            min_mass=self.split_min_mass).params, res.n_iter

    def _score_fold(self, X_tr, y_tr, X_va, y_va, n_classes, ct):
        errs = np.full(self.max_components, np.inf)
        for m in self._grid():
            p, _ = self._fit_split(X_tr, y_tr, n_classes, ct, m)
            errs[m - 1] = np.mean(np.argmax(predict_log_proba(X_va, p), axis=1) != y_va)
        return errs

    def _final(self, X, codes, n_classes, ct, m):
        if not np.isfinite(self.cv_error_):
            m = self._grid()[0]
            self.selected_m_ = m
        self.params_, n_iter = self._fit_split(X, codes, n_classes, ct, m)
        self.n_components_ = min(m, X.shape[0])
        self.n_iter_ = max(1, n_iter)


__all__ = ["IncrementalPath", "IncrementalPRBFSplit", "SelectedIncrementalPRBFSplit",
           "SelectedPRBFSplit", "incremental_path", "AdditionInfo"]
