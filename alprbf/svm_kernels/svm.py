"""An SVM on any kernel of :mod:`.gram`, with the density model of the pool behind it.

:class:`KernelSVC` is the classifier of Reitmaier et al. 2016's paradigms (RWM, GMM, LAP and RBF
kernels, §4.3.1 and §5.1.2): ``fit(X, y)`` takes the whole training part (pool rows with ``y =
nan``); the structure the kernel needs comes from all rows (the variational density model for RWM
and GMM, the kNN graph of the pool for LAP), the SVM from the labeled rows.

Choices where the paper is silent (parameters where they matter):

* Tuning: ``C`` and ``gamma`` (and ``gamma_I``, ``gamma_A`` for LAP) by stratified inner
  ``inner_folds``-fold CV (Reitmaier et al. 2016: 4) on the labeled rows, over ``10^{-3..2}`` by
  default, once per task on the first labeled set (the paper's initial set) and kept by later fits
  of the same task (``retune=True`` tunes at every fit).  Ties in the mean validation error go to
  the first grid point in the order gamma, then C (both ascending: the smoother, more
  regularised model); ``tie_rule`` and ``tie_tolerance`` declare other rules.  With fewer
  than two rows in the smallest class the search is skipped: ``C = 1`` and ``gamma = 1 /
  n_features`` (libsvm's default on z-scored data; LAP: also ``gamma_I = gamma_A``, the grid's
  largest, whose ratio 1 is all the kernel uses), and the next fit of the task tries again,
  so the values are tuned on the first labeled set that holds two rows of every labeled class
  (a density-based initial set may not).
* Categorical weights (eqs 14-16): ``alpha`` / ``beta`` given as None are searched with the
  other values over ``weight_grid`` (Reitmaier et al. 2016, §5.1.2: ``{0, 0.1, ..., 1}`` each, the
  pair ``alpha = beta = 0`` left out), only when the rows have categorical columns; without any
  (or with the search skipped) a None weight is 1.  The weights are the outermost loop of the
  search, in descending order, so ties go to the largest ``alpha``, then the largest ``beta``
  (the unweighted kernel ``alpha = beta = 1`` first), then to gamma and C as above.  The
  default (``alpha = beta = 1``) is the kernel without the search.
* LAP: ``C = 1 / (2 gamma_A l)`` (LapSVM's relation, :func:`.gram.lapsvm_C`), so ``C`` is not
  searched; the base kernel is the RBF with the searched ``gamma``; ``gamma_I`` and
  ``gamma_A`` over the paper's ``10^{-6..2}`` (:data:`LAP_GRID`).  Both weight a regulariser,
  so by the tie rule above ties go to the largest ``gamma_I``, then the largest ``gamma_A``
  (the smallest ``C``), after ``gamma`` ascending.
* Decision values: sklearn's ``SVC`` one-vs-rest decision values (``decision_function_shape=
  "ovr"``).  The prediction is the class with the largest value, so it agrees with the
  posteriors below (sklearn's own ``predict`` votes one-vs-one and can disagree).
  :meth:`KernelSVC.decision_values` adds the one-vs-one values of every pair, from which
  :func:`alprbf.strategies.svm.svm_margin` takes the multi-class ``|f(x)|`` that uncertainty
  sampling and 4DS need (the pairwise SVM of the two leading classes; the gap between the two
  largest values as an option; binary: ``|f(x)|``).
* Posteriors: a softmax of the decision values (binary: ``sigmoid(f)``), classes without a label
  get 0.  Not calibrated; it exists so that every strategy can use the SVM.
* The density model is fitted once per ``X`` (it depends on the rows, not on the labels) and
  reused by later fits of the same rows (``previous``).  With ``refine=True`` every fit
  revises it with the labels known then (Reitmaier et al. 2016, Alg. 1 line 14, the transductive
  refinement of :mod:`.refinement`, always from the pool's model and the whole labeled set);
  RWM and GMM kernels follow the revised model (line 15), and the strategies select with it
  (:meth:`KernelSVC.density_model`, line 8 with ``M_i``) whatever the kernel; the values
  tuned on the first labeled set are kept.  Off by default, as in CMM_sha and in the paper's
  MNIST experiment.
* With a single labeled class the classifier predicts that class.
* An indefinite training Gram matrix (RWM and GMM kernels: the weights depend on both rows) is
  used as is (libsvm's solver copes; the paper says nothing); its smallest eigenvalue is kept
  as ``gram_min_eigenvalue_`` and logged (logger ``alprbf.svm_kernels.svm``, DEBUG) at every fit.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import logging

import numpy as np
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted, validate_data

from ..labels import check_fit_input
from ..validation import check_choice, check_int, check_positive, check_real
from .density import (
    RESPONSIBILITY_RULES,
    DensityOptions,
    MixtureDensity,
    covariance_of,
    density_summary,
    fit_density,
    responsibilities,
)
from .gram import (
    LaplacianDeformation,
    gmm_gram,
    lapsvm_C,
    rbf_gram,
    rwm_gram,
    smallest_eigenvalue,
)
from .refinement import DISPUTE_RULES, refine_density

try:     # sklearn's low-level libsvm binding (private): see precomputed_svc_predict
    from sklearn.svm import _libsvm
except ImportError:     # pragma: no cover
    _libsvm = None

_LOG = logging.getLogger(__name__)

SVM_KERNELS = ("rbf", "rwm", "gmm", "lap")
TIE_RULES = ("first", "default_closest", "grid_centre", "largest")
UNDETERMINED_RULES = ("as_is", "error")
LAP_VALIDATION = ("in_graph", "out_of_graph")
TIE_TOLERANCES = ("exact", "one_se", "one_se_binomial")
SOLVER_TOL = 1e-3
"""libsvm's stopping tolerance as :class:`sklearn.svm.SVC` sets it: the solver stops when the
largest KKT violation is below it, so a bias is known to about this much."""
DEFAULT_GRID = (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2)
LAP_GRID = tuple(10.0 ** j for j in range(-6, 3))
"""``gamma_I`` and ``gamma_A`` searched for LAP: Reitmaier et al. 2016, §5.1.2 prints ``10^j`` for
``j in {-5, -6, ..., 2}``; read as ``j = -6 .. 2``, the smallest range that holds both the
printed -6 and ``-5 .. 2``."""
WEIGHT_GRID = tuple(round(0.1 * i, 1) for i in range(11))
"""Values of ``alpha`` and ``beta`` searched when they are None (Reitmaier et al. 2016, §5.1.2)."""


class KernelSVC(ClassifierMixin, BaseEstimator):
    """SVM on a structure-aware kernel, tuned by inner CV (see the module docstring).

    Parameters
    ----------
    kernel : {"rbf", "rwm", "gmm", "lap"}, default="rwm"
        ``"gmm"`` is project-defined (:func:`.gram.gmm_gram`), not the paper's.
    C, gamma : float or None, default=None
        Fixed values; None: searched over ``C_grid`` / ``gamma_grid``.
    C_grid, gamma_grid : sequence of float, default=10^{-3..2}
    gamma_I_grid, gamma_A_grid : sequence of float, default=10^{-6..2} (:data:`LAP_GRID`)
        LAP only: the intrinsic and ambient regularisation searched.
    inner_folds : int, default=4
    retune : bool, default=False
        Tune at every fit instead of once per task.
    alpha, beta : float or None, default=1.0
        Weights of the continuous and categorical parts (eqs 14-16), ``>= 0`` with
        ``alpha + beta > 0``; None: searched over ``weight_grid`` when the rows have
        categorical columns, else 1.
    weight_grid : sequence of float, default=(0, 0.1, ..., 1)
        The values searched for a None ``alpha`` / ``beta``.
    categorical : array-like of bool or None, default=None
        Categorical (integer-coded) columns.
    n_components : int, default=20
        Components the density model starts from (RWM, GMM).
    n_neighbors : int, default=7
        kNN graph of the LAP kernel.
    refine : bool, default=False
        The density model is revised with the labels of every fit by the transductive
        refinement (:func:`.refinement.refine_density`; Reitmaier et al. 2016, Alg. 1 lines 14-15):
        RWM and GMM kernels use the revision instead of the pool's model ``density_`` itself, and
        :meth:`density_model` (what 4DS selects with) returns it for every kernel.
    refine_neighbors : int, default=5
        Labeled neighbours of the refinement's transductive labels.
    refine_dispute : {"two_classes", "no_majority"}, default="two_classes"
        Which components the refinement revises (the reading of "disputed",
        :mod:`.refinement` step 2; docs/decisions/0311).
    responsibility_rule : {"plug_in", "variational"}, default="plug_in"
        How the density model's eq 2 weighs the components
        (:class:`~alprbf.svm_kernels.density.DensityOptions`).
    density : dict or None, default=None
        Further :class:`~alprbf.svm_kernels.density.DensityOptions` of the pool's density model
        and of the refinement's VI (e.g. ``max_iter``, ``tol``, the grids,
        ``initial_components``, ``representativity``); None: the defaults.
    tuning_score : {"validation", "validation_expected"}, default="validation"
        What a grid point is rated by: the mean inner-CV error on ``L_val`` alone, or (the
        reading of Reitmaier et al. 2016, §5.1.1, docs/decisions/0303) that plus the expected error
        on the unlabeled pool ``U_1``: the total-variation distance between the class shares of
        ``L_1`` and those the inner folds' SVMs predict on ``U_1`` (:func:`_expected_errors`).
    tie_rule : {"first", "default_closest", "grid_centre", "largest"}, default="first"
        Among tied grid points (``tie_tolerance``): the first in search order (module
        docstring: the smallest gamma, then C), the one closest in log space to ``C = 1``,
        ``gamma = 1 / n_features`` (LAP: also ``gamma_I = gamma_A``; weights: ``alpha = beta =
        1``), the one closest in log space to the centre of every searched axis (``10^-0.5``
        for the default grid; weights: the middle of ``weight_grid``), or the last in search
        order (the largest gamma, then the largest C; LAP: the smallest ``gamma_I`` and
        ``gamma_A``, i.e. the largest C; weights: the smallest).  Equal distances go to the
        first in search order.
    tie_tolerance : {"exact", "one_se", "one_se_binomial"}, default="exact"
        Which grid points tie with the best: those within 1e-12 of its score, or (the one-
        standard-error rule, docs/decisions/0305) those within one standard error of the best
        point's score over the inner folds (sample standard deviation of its per-fold scores
        / sqrt(folds)), or (docs/decisions/0309) within the larger of that and the binomial
        standard error of the best point's validation error on the ``l`` rows tuned on
        (:func:`binomial_se`): with 2 validation rows per fold a point without an error has
        per-fold scores that differ only by the expected error, whose spread says nothing of
        how well ``l`` rows measure an error rate.
    undetermined : {"as_is", "error"}, default="as_is"
        How the tuning rates an inner-CV prediction that the SVM does not determine
        (docs/decisions/0307): ``"as_is"`` takes libsvm's class whatever it rests on;
        ``"error"`` counts it as an error.  A prediction is undetermined when no support vector
        is free (every dual coefficient at 0 or C), so that the KKT conditions leave the bias
        anywhere in an interval (libsvm then takes its midpoint, exactly 0 in a class-balanced
        fold), and the decision value changes sign within it, or when the decision value is
        within the solver's tolerance of 0 (:func:`determined_svc_predict`).
        Both the validation error and the expected error use it (there an undetermined row
        counts as a class of its own that ``L_1`` does not have); the fitted model's
        predictions do not change.
    expected_rows : int, default=1000
        ``U_1`` rows (a random subset when larger) of the expected error.
    lap_validation : {"in_graph", "out_of_graph"}, default="in_graph"
        LAP only: where the tuning's validation rows stand (docs/decisions/0308).
        ``"in_graph"``: the kNN graph and the deformed kernel are built on the whole pool, so
        a validation row is a vertex of the graph, scored through its edges, as no test row
        ever is.  ``"out_of_graph"``: each inner fold builds its graph and deformed kernel on
        the pool without its own validation rows, and scores them as the test fold's rows are
        scored, through the base kernel alone (:meth:`.gram.LaplacianDeformation.rows` with
        ``X``); the expected error's ``U_1`` rows stay vertices (they are pool rows).  The
        fitted models do not change, only which grid point the tuning picks.
    lap_column_cache : bool, default=False
        LAP: keep, between the fits of a task, each labeled row's projected and
        back-projected columns and its deformed Gram column against the whole pool
        (:meth:`.gram.LaplacianDeformation.kept_rows` and ``pool_gram``),
        so a round of the loop computes them for its new rows only (``O(N^2)`` each instead
        of ``O(N^2 l)`` for all labeled rows), and the training part's predictions
        (:meth:`scores_rows`: the evaluation, the query) are rows of that matrix.  Equal to
        the plain computation up to round-off (about 1e-15, not bit for bit: the BLAS's
        order of operations depends on a product's width), so off by default: the recorded
        tables were computed without it.
    classes : array-like or None, default=None
        Every class of the task (a class without labels gets posterior 0).
    random_state : int or None, default=None
        Seeds the density model and the inner folds.

    Attributes
    ----------
    classes_ : ndarray (K,)
    C_, gamma_, gamma_I_, gamma_A_ : float
        The values used (``gamma_I_``/``gamma_A_`` nan unless LAP).
    alpha_, beta_ : float
        The categorical weights used.
    cv_error_ : float
        Mean inner-CV error of the chosen values (nan when not searched).
    density_ : MixtureDensity or None
        The pool's density model (RWM, GMM).
    kernel_density_ : MixtureDensity or None
        The model the kernel uses (RWM, GMM; None for RBF and LAP): ``density_``, or its
        revision with this fit's labels (``refine``).
    svc_ : SVC or None
        None with a single labeled class.
    n_support_vectors_ : int
    gram_min_eigenvalue_ : float
        Smallest eigenvalue of the training Gram matrix (RWM, GMM; nan for the RBF and LAP
        kernels, which are positive semi-definite, and with a single labeled class).
    """

    memoize = True
    """Keep what one fit computes more than once (:meth:`_lap_rows`, :meth:`_gram_new`):
    exact, the same arithmetic.  A class switch, not a parameter: False is the plain path
    (the code before issue 50's cost work) that tests and ``benchmarks/bench_lap_cache.py``
    compare with."""

    def __init__(self, kernel="rwm", C=None, gamma=None, C_grid=DEFAULT_GRID,
                 gamma_grid=DEFAULT_GRID, gamma_I_grid=LAP_GRID, gamma_A_grid=LAP_GRID,
                 inner_folds=4, retune=False, alpha=1.0, beta=1.0, weight_grid=WEIGHT_GRID,
                 categorical=None, n_components=20, n_neighbors=7, refine=False,
                 refine_neighbors=5, refine_dispute="two_classes",
                 responsibility_rule="plug_in", density=None,
                 tuning_score="validation", tie_rule="first", tie_tolerance="exact",
                 undetermined="as_is", expected_rows=1000, lap_validation="in_graph",
                 lap_column_cache=False, classes=None, random_state=None):
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.gamma_I_grid = gamma_I_grid
        self.gamma_A_grid = gamma_A_grid
        self.inner_folds = inner_folds
        self.retune = retune
        self.alpha = alpha
        self.beta = beta
        self.weight_grid = weight_grid
        self.categorical = categorical
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.refine = refine
        self.refine_neighbors = refine_neighbors
        self.refine_dispute = refine_dispute
        self.responsibility_rule = responsibility_rule
        self.density = density
        self.tuning_score = tuning_score
        self.tie_rule = tie_rule
        self.tie_tolerance = tie_tolerance
        self.undetermined = undetermined
        self.expected_rows = expected_rows
        self.lap_validation = lap_validation
        self.lap_column_cache = lap_column_cache
        self.classes = classes
        self.random_state = random_state

    # ------------------------------------------------------------------ parameters

    def validate_params(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        owner = type(self).__name__
        check_choice(owner, "kernel", self.kernel, SVM_KERNELS)
        check_int(owner, "inner_folds", self.inner_folds, 2)
        check_int(owner, "n_components", self.n_components, 1)
        check_int(owner, "n_neighbors", self.n_neighbors, 1)
        check_choice(owner, "refine", self.refine, (False, True))
        check_choice(owner, "tuning_score", self.tuning_score,
                     ("validation", "validation_expected"))
        check_choice(owner, "tie_rule", self.tie_rule, TIE_RULES)
        check_choice(owner, "tie_tolerance", self.tie_tolerance, TIE_TOLERANCES)
        check_choice(owner, "undetermined", self.undetermined, UNDETERMINED_RULES)
        check_int(owner, "expected_rows", self.expected_rows, 1)
        check_choice(owner, "lap_validation", self.lap_validation, LAP_VALIDATION)
        check_choice(owner, "lap_column_cache", self.lap_column_cache, (False, True))
        check_int(owner, "refine_neighbors", self.refine_neighbors, 1)
        check_choice(owner, "refine_dispute", self.refine_dispute, DISPUTE_RULES)
        check_choice(owner, "responsibility_rule", self.responsibility_rule,
                     RESPONSIBILITY_RULES)
        self._density_options(1)
        for name in ("alpha", "beta"):
            if getattr(self, name) is not None:
                check_real(owner, name, getattr(self, name), 0.0)
        if self.alpha is not None and self.beta is not None and self.alpha + self.beta <= 0:
            raise ValueError(f"{owner}: invalid alpha + beta = 0; valid: alpha + beta > 0")
        if np.ndim(self.weight_grid) != 1 or len(self.weight_grid) == 0:
            raise ValueError(f"{owner}: invalid weight_grid={self.weight_grid!r}; valid: a "
                             "non-empty list")
        for v in self.weight_grid:
            check_real(owner, "weight_grid", v, 0.0)
        if not self._weight_pairs(True):
            raise ValueError(f"{owner}: invalid weight_grid={self.weight_grid!r} with "
                             f"alpha={self.alpha!r}, beta={self.beta!r}: every pair has "
                             "alpha + beta = 0; valid: a grid with a value > 0")
        for name in ("C", "gamma"):
            value = getattr(self, name)
            if value is not None:
                check_positive(owner, name, value)
        for name in ("C_grid", "gamma_grid", "gamma_I_grid", "gamma_A_grid"):
            grid = getattr(self, name)
            if np.ndim(grid) != 1 or len(grid) == 0:
                raise ValueError(f"{owner}: invalid {name}={grid!r}; valid: a non-empty list")
            for v in grid:
                check_positive(owner, name, v)

    def check_training_size(self, n_rows: int) -> None:
        """Raise ``ValueError`` if a training part of ``n_rows`` rows is too small: the LAP
        kernel's kNN graph needs ``n_neighbors <= n_rows - 1``."""
        if self.kernel == "lap" and self.n_neighbors > n_rows - 1:
            raise ValueError(f"{type(self).__name__}: invalid n_neighbors={self.n_neighbors} "
                             f"for a training part of {n_rows} rows; valid: at most "
                             f"{n_rows - 1} (the kNN graph of the LAP kernel)")

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y, previous: KernelSVC | None = None):
        """Fit on the training part: structure from every row, the SVM from labeled rows.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Labels, ``nan`` for unlabeled rows; at least one row labeled.
        previous : KernelSVC, optional
            An earlier fit of the same task: its density model or graph is reused when ``X`` is
            the same, and its tuned values unless ``retune``.

        Returns
        -------
        self
        """
        X, self.classes_, codes = check_fit_input(self, X, y)
        lab = np.flatnonzero(codes >= 0)
        same = previous is not None and getattr(previous, "rows_key_", None) == _key(X)
        self.rows_key_ = _key(X)
        self.density_ = previous.density_ if same else self._fit_structure(X)
        self._deformations = previous._deformations if same else {}
        self._laplacian = getattr(previous, "_laplacian", None) if same else None
        if self._laplacian is None and self._deformations:   # a checkpoint of older code
            self._laplacian = next(iter(self._deformations.values())).laplacian
        self._lap_kept = previous.__dict__.get("_lap_kept", {}) if same else {}
        self._lap_cache = {}
        self._new_rows_gram = {}
        self._pool_gram_memo = None
        self.X_pool_ = X
        self.labeled_ = lab
        self._codes = codes
        self._strategy_density = None
        self.kernel_density_ = self.resp_ = None
        if self.kernel in ("rwm", "gmm"):          # only these kernels use the density model
            self.kernel_density_ = self._refined(X, codes) if self.refine else self.density_
            if same and self.kernel_density_ is previous.kernel_density_:
                self.resp_ = previous.resp_   # same rows, same model (no refinement)
            else:
                self.resp_ = responsibilities(self.kernel_density_, X)
        y_lab = codes[lab]
        self.present_ = np.unique(y_lab)
        tuned = (previous is not None and not self.retune and hasattr(previous, "C_")
                 and np.isfinite(previous.cv_error_))   # a skipped search is tried again
        if tuned:
            self.C_, self.gamma_ = previous.C_, previous.gamma_
            # (a checkpoint of older code has no alpha_ / beta_: it used the parameters)
            self.alpha_ = getattr(previous, "alpha_", previous.alpha)
            self.beta_ = getattr(previous, "beta_", previous.beta)
            self.gamma_I_, self.gamma_A_ = previous.gamma_I_, previous.gamma_A_
            self.cv_error_ = previous.cv_error_
            self.tuning_points_ = getattr(previous, "tuning_points_", [])
            self.tuning_errors_ = getattr(previous, "tuning_errors_", np.empty(0))
            self.tuned_at_ = getattr(previous, "tuned_at_", None)
            self.tie_band_ = getattr(previous, "tie_band_", 1e-12)
            self._grid_summary_memo = previous.__dict__.get("_grid_summary_memo")
        else:
            self._tune(lab, y_lab)
            self.tuned_at_ = len(lab)
        self.svc_ = None
        self.n_support_vectors_ = 0
        self.gram_min_eigenvalue_ = np.nan
        if len(self.present_) > 1:
            pool = self._pool_gram()
            K = self._gram(lab, lab) if pool is None else pool[lab]
            if self.kernel in ("rwm", "gmm"):
                self.gram_min_eigenvalue_ = smallest_eigenvalue(K)
                _LOG.debug("KernelSVC(%s): smallest eigenvalue of the %d x %d training Gram "
                           "matrix %.3g", self.kernel, len(lab), len(lab),
                           self.gram_min_eigenvalue_)
            self.svc_ = SVC(kernel="precomputed", C=self.C_, decision_function_shape="ovr")
            self.svc_.fit(K, y_lab)
            self.n_support_vectors_ = int(self.svc_.n_support_.sum())
        return self

    def diagnostics(self) -> dict:
        """The values this fit uses and how they were chosen (observes only): ``C``,
        ``gamma`` (and ``alpha``, ``beta``, ``gamma_I``, ``gamma_A`` where they apply), the
        number of labels the tuning saw, its best mean inner-CV error, the number of grid
        points tied with it (within ``tie_band`` of the best score with ``tie_tolerance``
        ``one_se``), the grid's errors (rounded to 4 decimals, in search order, with
        the axes), and the density models' size, convergence and VI iterations."""
        check_is_fitted(self, "classes_")
        out = {"C": self.C_, "gamma": self.gamma_, "cv_error": self.cv_error_,
               "tuned_at": getattr(self, "tuned_at_", None)}
        cat = self.categorical is not None and bool(np.any(self.categorical))
        if cat:
            out.update(alpha=self.alpha_, beta=self.beta_)
        if self.kernel == "lap":
            out.update(gamma_I=self.gamma_I_, gamma_A=self.gamma_A_)
        for name, model in (("density", self.density_), ("kernel_density", self.kernel_density_)):
            if model is not None:
                out[name] = density_summary(model)
        return {**_nan_to_none(out), **self._grid_summary()}

    def _grid_summary(self) -> dict:
        """The tuning's part of :meth:`diagnostics` (``n_tied``, ``tie_band``, ``grid``,
        ``at_grid_edge``; empty when the search was skipped), JSON-ready.

        It depends on the tuning alone, which later fits of a task keep (``previous``), so it
        is computed once per tuning and kept with the same ``tuning_errors_`` array: the loop
        asks for the diagnostics at every evaluation, and a categorical LAP grid has 58 320
        points (about 4 s each time in Python, hidden outside the timed steps)."""
        errors = np.asarray(getattr(self, "tuning_errors_", np.empty(0)))
        memo = self.__dict__.get("_grid_summary_memo")
        if memo is not None and memo[0] is getattr(self, "tuning_errors_", None):
            return memo[1]
        out = {}
        if errors.size:
            points = np.asarray(self.tuning_points_, dtype=np.float64)
            names = ("alpha", "beta", "gamma", "gamma_I", "gamma_A", "C")
            axes = {n: [float(v) for v in np.unique(points[:, i][np.isfinite(points[:, i])])]
                    for i, n in enumerate(names)}
            band = getattr(self, "tie_band_", 1e-12)
            out["n_tied"] = int(np.sum(errors <= errors.min() + band))
            if self.tie_tolerance != "exact":
                out["tie_band"] = band
            out["grid"] = {"axes": {n: v for n, v in axes.items() if len(v) > 1},
                           "errors": np.round(errors, 4).tolist()}
            chosen = {"alpha": self.alpha_, "beta": self.beta_, "gamma": self.gamma_,
                      "gamma_I": self.gamma_I_, "gamma_A": self.gamma_A_, "C": self.C_}
            out["at_grid_edge"] = [n for n, v in out["grid"]["axes"].items()
                                   if chosen[n] in (v[0], v[-1])]
        out = _nan_to_none(out)
        if errors.size:
            self._grid_summary_memo = (self.tuning_errors_, out)
        return out

    def _fit_structure(self, X):
        return self._pool_density(X) if self.kernel in ("rwm", "gmm") else None

    def _refined(self, X, codes):
        """The pool's model revised with the labels ``codes`` (Reitmaier et al. 2016, §4.2)."""
        mask = None if self.categorical is None else np.asarray(self.categorical, bool)
        cont = X if mask is None else X[:, ~mask]
        options = self._density_options(X.shape[0])
        return refine_density(self.density_, X, codes, len(self.classes_),
                              n_neighbors=self.refine_neighbors, options=options,
                              covariance_prior=covariance_of(cont),
                              dispute=self.refine_dispute,
                              random_state=self.random_state).density

    def _density_options(self, n_rows: int) -> DensityOptions:
        """The density model's options for ``n_rows`` rows (``ValueError`` naming a bad
        ``density`` entry)."""
        extra = dict(self.density or {})
        bad = sorted(set(extra) - set(DensityOptions.__dataclass_fields__)
                     - {"n_components", "responsibility_rule"}) or \
            sorted({"n_components", "responsibility_rule"} & set(extra))
        if bad:
            valid = sorted(set(DensityOptions.__dataclass_fields__)
                           - {"n_components", "responsibility_rule"})
            raise ValueError(f"{type(self).__name__}: invalid density option {bad[0]!r}; "
                             f"valid: {', '.join(valid)}")
        for key in ("weight_concentration_priors", "covariance_prior_scales",
                    "initial_components"):
            if key in extra:
                extra[key] = tuple(extra[key])
        return DensityOptions(n_components=min(self.n_components, n_rows),
                              responsibility_rule=self.responsibility_rule, **extra)

    def _pool_density(self, X):
        cont = np.ones(X.shape[1], bool) if self.categorical is None else \
            ~np.asarray(self.categorical, bool)
        options = self._density_options(X.shape[0])
        return fit_density(X, None if cont.all() else ~cont, options,
                           random_state=self.random_state)

    def _weight_pairs(self, categorical: bool) -> list[tuple[float, float]]:
        """The (alpha, beta) pairs to search, in tie-breaking order (descending)."""
        def values(v):
            if v is not None:
                return [float(v)]
            return sorted({float(w) for w in self.weight_grid}, reverse=True) \
                if categorical else [1.0]
        return [(a, b) for a in values(self.alpha) for b in values(self.beta) if a + b > 0]

    def _points(self):
        """The grid of (alpha, beta, gamma, gamma_I, gamma_A, C) to search, in tie-breaking
        order."""
        cat = self.categorical is not None and bool(np.any(self.categorical))
        weights = self._weight_pairs(cat)
        gammas = [self.gamma] if self.gamma is not None else sorted(self.gamma_grid)
        if self.kernel == "lap":
            return [(a, b, g, gi, ga, None) for a, b in weights for g in gammas
                    for gi in sorted(self.gamma_I_grid, reverse=True)
                    for ga in sorted(self.gamma_A_grid, reverse=True)]
        Cs = [self.C] if self.C is not None else sorted(self.C_grid)
        return [(a, b, g, np.nan, np.nan, c) for a, b in weights for g in gammas for c in Cs]

    def _tune(self, lab: np.ndarray, y_lab: np.ndarray) -> None:
        points = self._points()
        counts = np.bincount(y_lab)
        n_splits = min(self.inner_folds, int(counts[counts > 0].min()))
        searched = len(points) > 1 and len(self.present_) > 1 and n_splits >= 2
        if not searched:
            a, b, g, gi, ga, c = points[0]
            if self.gamma is None and len(points) > 1:
                g = 1.0 / self.n_features_in_
            if self.C is None:   # not the grid's first (smallest) C: the documented C = 1
                c = 1.0
            a = 1.0 if self.alpha is None else a     # unsearched weights: the unweighted kernel
            b = 1.0 if self.beta is None else b
            self._set(a, b, g, gi, ga, c, len(lab), np.nan)
            self.tuning_points_, self.tuning_errors_ = [], np.empty(0)
            return
        folds = list(StratifiedKFold(n_splits, shuffle=True, random_state=self.random_state)
                     .split(lab, y_lab))
        best, weights, errors, per_fold, wrong = None, None, [], [], []
        sizes = np.array([len(va) for _, va in folds])
        several = len({p[:2] for p in points}) > 1
        unlabeled = None
        if self.tuning_score == "validation_expected":
            pool = np.flatnonzero(self._codes < 0)
            if len(pool) > self.expected_rows:
                pool = np.sort(np.random.default_rng(self.random_state).choice(
                    pool, self.expected_rows, replace=False))
            unlabeled = pool if len(pool) else None
        kernel_at = None          # the kernel (all but C) of the Gram matrices K, G at hand
        out_of_graph = self.kernel == "lap" and self.lap_validation == "out_of_graph"
        fold_laps: dict = {}      # out_of_graph: one (gamma, alpha, beta)'s fold deformations
        fold_grams: dict = {}     # and their Gram matrices by ratio (memoize)
        strict = self.undetermined == "error"
        for a, b, g, gi, ga, c in points:
            if several and (a, b) != weights:      # the weights are the outer loop
                weights = (a, b)                   # one weight pair's deformations at a time
                self._keep_deformations(lambda key, w=weights: key[1:] == w)
            self.alpha_, self.beta_ = a, b
            self.gamma_, self.gamma_I_, self.gamma_A_ = g, gi, ga
            kernel = (a, b, g) if c is not None else (a, b, g, gi, ga)   # LAP: C from gamma_A
            C = c if c is not None else lapsvm_C(ga, len(lab))
            if out_of_graph:
                if kernel != kernel_at:
                    kernel_at = kernel
                    if (g, a, b) not in fold_laps:
                        fold_laps = {(g, a, b): self._fold_deformations(lab, folds, unlabeled)}
                        fold_grams = {}
                    grams = self._fold_grams_at(fold_laps[(g, a, b)], fold_grams, gi, ga)
                fold_err, expected = _split_errors(grams, y_lab, folds, C, strict)
            else:
                if kernel != kernel_at:           # C is the inner loop: K and G do not change
                    kernel_at = kernel
                    K = self._gram(lab, lab)
                    G = None if unlabeled is None else self._gram(unlabeled, lab)
                fold_err = np.array([_fold_error(K, y_lab, tr, va, C, strict)
                                     for tr, va in folds])
                expected = None if unlabeled is None else \
                    _expected_errors(K, G, y_lab, folds, C, strict)
            err = np.mean(fold_err)
            wrong.append(float(np.dot(fold_err, sizes)))    # validation errors, counted
            if expected is not None:
                err += float(np.mean(expected))
                fold_err = fold_err + expected
            errors.append(float(err))
            per_fold.append(fold_err)
            if best is None or err < best[-1] - 1e-12:
                best, at = (a, b, g, gi, ga, c, err), len(errors) - 1
        self.tie_band_ = 1e-12
        if self.tie_tolerance in ("one_se", "one_se_binomial"):
            self.tie_band_ = float(np.std(per_fold[at], ddof=1) / np.sqrt(len(folds)))
        if self.tie_tolerance == "one_se_binomial":
            self.tie_band_ = max(self.tie_band_, binomial_se(wrong[at], len(lab)))
        if self.tie_rule != "first" or self.tie_tolerance != "exact":
            tied = [(p, e) for p, e in zip(points, errors, strict=True)
                    if e <= best[-1] + self.tie_band_]
            if self.tie_rule == "first":
                pick = tied[0]
            elif self.tie_rule == "largest":
                pick = tied[-1]
            else:
                key = functools.partial(self._distance_to_default, n_labeled=len(lab)) \
                    if self.tie_rule == "default_closest" else self._grid_centre_distance(points)
                pick = min(tied, key=lambda pe: key(pe[0]))
            a, b, g, gi, ga, c = pick[0]
            score = best[-1] if self.tie_tolerance == "exact" else pick[1]
            best = (a, b, g, gi, ga, c, score)
        a, b, g, gi, ga, c, err = best
        self._keep_deformations(lambda key: key == (g, a, b))   # only the chosen one is used
        self._set(a, b, g, gi, ga, c, len(lab), err)
        self.tuning_points_, self.tuning_errors_ = points, np.asarray(errors)

    def _fold_deformations(self, lab: np.ndarray, folds, unlabeled) -> list:
        """``lap_validation="out_of_graph"``: for each inner fold, the LAP kernel of the current
        ``gamma_``, ``alpha_``, ``beta_`` on the pool without the fold's validation rows (its
        own kNN graph), with the rows the fold scores: ``(deformation, training rows, validation
        rows as new rows, U_1 rows or None)``."""
        out = []
        for tr, va in folds:
            keep = np.setdiff1d(np.arange(self.X_pool_.shape[0]), lab[va])
            base = functools.partial(rbf_gram, gamma=self.gamma_, categorical=self.categorical,
                                     alpha=self.alpha_, beta=self.beta_)
            lap = LaplacianDeformation(self.X_pool_[keep], base, n_neighbors=self.n_neighbors)
            train = lap.kept_rows(np.searchsorted(keep, lab[tr]))
            held_out = lap.rows(X=self.X_pool_[lab[va]])
            pool = None if unlabeled is None else lap.rows(
                index=np.searchsorted(keep, unlabeled))
            out.append((lap, train, held_out, pool))
        return out

    def _fold_grams_at(self, fold_laps: list, memo: dict, gamma_I: float,
                       gamma_A: float) -> list:
        """:func:`_fold_grams` at ``(gamma_I, gamma_A)``.  The LAP kernel depends on them only
        through each fold deformation's ratio (:meth:`~.gram.LaplacianDeformation.ratio`), so
        with :attr:`memoize` the grid's points of one ratio share one computation (9 x 9
        points, 17 ratios): the same arithmetic on the same numbers, so the same bits."""
        if not self.memoize:
            return _fold_grams(fold_laps, gamma_I, gamma_A)
        key = tuple(lap.ratio(gamma_I, gamma_A) for lap, *_ in fold_laps)
        if key not in memo:
            memo[key] = _fold_grams(fold_laps, gamma_I, gamma_A)
        return memo[key]

    def _distance_to_default(self, point, n_labeled: int) -> float:
        """Squared log10 distance of a grid point to ``C = 1``, ``gamma = 1 / d`` (LAP:
        ``gamma_I = gamma_A``) and ``alpha = beta = 1`` (the ``default_closest`` tie rule).

        LAP's C is not searched: it is :func:`~.gram.lapsvm_C` of ``gamma_A`` and the
        ``n_labeled`` rows tuned on, and enters the distance like a searched C.  Without it every
        ``gamma_I = gamma_A`` point would be at the same distance and the first in search order,
        the largest ``gamma_A`` (C about 6e-4 on 8 rows: a bias-only SVM), would win."""
        a, b, g, gi, ga, c = point
        if c is None:
            c = lapsvm_C(ga, n_labeled)
        d = np.log10(g * self.n_features_in_) ** 2 + (a - 1.0) ** 2 + (b - 1.0) ** 2
        d += np.log10(c) ** 2
        if self.kernel == "lap":
            d += np.log10(gi / ga) ** 2
        return float(d)

    def _grid_centre_distance(self, points):
        """Squared distance of a grid point to the centre of every searched axis: log10 for
        ``gamma``, ``gamma_I``, ``gamma_A`` and ``C``, linear for the weights (the
        ``grid_centre`` tie rule)."""
        values = np.array([[np.nan if v is None else v for v in p] for p in points], float)
        logs = (False, False, True, True, True, True)       # alpha, beta, gamma, gI, gA, C
        axes = []
        for i, log in enumerate(logs):
            col = values[:, i]
            col = col[np.isfinite(col)]
            if len(np.unique(col)) > 1:
                col = np.log10(col) if log else col
                axes.append((i, log, (col.min() + col.max()) / 2))

        def distance(point) -> float:
            return float(sum(((np.log10(point[i]) if log else point[i]) - centre) ** 2
                             for i, log, centre in axes))
        return distance

    def _keep_deformations(self, keep) -> None:
        """Drop the LAP deformations whose key ``(gamma, alpha, beta)`` fails ``keep`` (exact:
        a dropped one is rebuilt identically when needed; the kNN graph stays in
        ``_laplacian``).  Each holds a few N x N matrices of the pool (N = 4 000: ~0.4 GB)."""
        self._lap_cache = {}
        for key in [k for k in self._deformations if not keep(k)]:
            del self._deformations[key]

    def __getstate__(self) -> dict:
        """Pickled without the LAP deformations and their row cache: on a pool of N rows each
        deformation is a few N x N matrices that a checkpoint need not carry, and
        :meth:`_deformation` rebuilds them identically from the pool and the kNN graph.  With
        ``lap_column_cache`` the columns they keep go along (N x l each, see
        :meth:`.gram.LaplacianDeformation.kept_columns`): recomputed in one batch they would
        differ in the last bits, and a resumed task would not give an uninterrupted one's
        rows."""
        state = super().__getstate__()
        if state.get("_deformations"):
            kept = {key: lap.kept_columns() for key, lap in state["_deformations"].items()} \
                if self.lap_column_cache else {}
            state = {**state, "_deformations": {}, "_lap_cache": {}, "_lap_kept": kept}
        return {k: v for k, v in state.items()             # (caches too)
                if k not in ("_new_rows_gram", "_pool_gram_memo")}

    def _set(self, alpha, beta, gamma, gamma_I, gamma_A, C, n_labeled, err) -> None:
        self.alpha_, self.beta_ = float(alpha), float(beta)
        self.gamma_, self.gamma_I_, self.gamma_A_ = float(gamma), float(gamma_I), float(gamma_A)
        self.C_ = float(C) if C is not None else lapsvm_C(gamma_A, n_labeled)
        self.cv_error_ = float(err)

    # ------------------------------------------------------------------ kernels

    def _gram(self, a, b, X_new=None) -> np.ndarray:
        """Gram matrix between rows ``a`` (pool indices, or the rows ``X_new``) and the pool
        rows ``b``."""
        Xa = self.X_pool_[a] if X_new is None else X_new
        Xb = self.X_pool_[b]
        kw = dict(gamma=self.gamma_, categorical=self.categorical, alpha=self.alpha_,
                  beta=self.beta_)
        if self.kernel == "rbf":
            return rbf_gram(Xa, Xb, **kw)
        if self.kernel in ("rwm", "gmm"):
            ra = self.resp_[a] if X_new is None else \
                responsibilities(self.kernel_density_, X_new)
            f = rwm_gram if self.kernel == "rwm" else gmm_gram
            return f(Xa, Xb, resp_X=ra, resp_Z=self.resp_[b],
                     precisions_cholesky=self.kernel_density_.precisions_cholesky, **kw)
        lap = self._deformation(self.gamma_)
        rows_a = lap.rows(index=a) if X_new is None else lap.rows(X=X_new)
        return lap.gram(rows_a, self._lap_rows(lap, b), gamma_I=self.gamma_I_,
                        gamma_A=self.gamma_A_)

    def _gram_new(self, X: np.ndarray) -> np.ndarray:
        """``_gram(None, labeled_, X_new=X)``, the rows ``X`` against the labeled rows, kept
        for the next calls of this fit with the same rows (by content): a round of the loop
        asks for its tested rows twice (predictions, log-loss) and, without a test fold, a
        third time (the query).  Exact: the matrix kept is the one the call computed; the
        last three are kept."""
        if not self.memoize:
            return self._gram(None, self.labeled_, X_new=X)
        memo = self.__dict__.setdefault("_new_rows_gram", {})
        key = _key(X)
        if key not in memo:
            if len(memo) >= 3:
                del memo[next(iter(memo))]
            memo[key] = self._gram(None, self.labeled_, X_new=X)
        return memo[key]

    def _pool_gram(self) -> np.ndarray | None:
        """LAP with ``lap_column_cache``: ``k~(pool, labeled)`` (N, l), assembled from the
        deformed Gram columns the deformation keeps between fits (a round computes those of
        its new labeled rows only), once per fit; None otherwise (and while tuning)."""
        if not (self.kernel == "lap" and self.lap_column_cache and self.memoize):
            return None
        if self.__dict__.get("_pool_gram_memo") is None:
            lap = self._deformation(self.gamma_)
            self._pool_gram_memo = lap.pool_gram(self._lap_rows(lap, self.labeled_),
                                                 gamma_I=self.gamma_I_, gamma_A=self.gamma_A_)
        return self._pool_gram_memo

    def _rows_gram(self, X: np.ndarray, rows) -> np.ndarray:
        """The rows ``X[rows]`` (all of ``X`` when None) against the labeled rows: rows of
        :meth:`_pool_gram` when ``X`` is the fitted pool and that exists, else
        :meth:`_gram_new`."""
        pool = self._pool_gram()
        if pool is None or _key(X) != self.rows_key_:
            return self._gram_new(X if rows is None else X[rows])
        return pool if rows is None else pool[rows]

    def _lap_rows(self, lap: LaplacianDeformation, index: np.ndarray):
        """The pool rows ``index`` as the second argument of ``lap.gram``, kept with their
        projection for the next calls with the same deformation and rows (the grid points of
        one gamma, the fit and the scoring of one round). Exact: the projection kept is the
        one a new object would compute; only the second argument is kept, so that every call
        takes the path of ``LaplacianDeformation.gram`` it took without the cache.

        They are kept rows (:meth:`.gram.LaplacianDeformation.kept_rows`, unless
        ``memoize`` is off): their back-projection is computed once per ratio, not once per
        grid point or per prediction call (exact).  With ``lap_column_cache`` the columns of
        their projection and back-projection are also kept between the fits of a task, so a
        round computes those of its new rows only (equal to round-off, not bit for bit)."""
        key = (id(lap), np.asarray(index).tobytes())
        if key not in self._lap_cache:
            if len(self._lap_cache) >= 8:
                self._lap_cache.clear()
            rows = lap.kept_rows(index, columns=self.lap_column_cache) if self.memoize \
                else lap.rows(index=index)
            self._lap_cache[key] = (lap, rows)     # lap kept: its id stays unique
        return self._lap_cache[key][1]

    def _deformation(self, gamma: float) -> LaplacianDeformation:
        key = (gamma, self.alpha_, self.beta_)
        if key not in self._deformations:
            base = functools.partial(rbf_gram, gamma=gamma, categorical=self.categorical,
                                     alpha=self.alpha_, beta=self.beta_)
            lap = LaplacianDeformation(self.X_pool_, base, n_neighbors=self.n_neighbors,
                                       laplacian=self._laplacian)
            self._laplacian = lap.laplacian          # the graph depends on the rows only
            kept = self.__dict__.get("_lap_kept", {}).get(key)
            if kept is not None and self.lap_column_cache:   # rebuilt after a checkpoint
                lap.restore_kept_columns(kept)
            self._deformations[key] = lap
        return self._deformations[key]

    # ------------------------------------------------------------------ prediction

    def decision_function(self, X) -> np.ndarray:
        """Decision values: shape (n,) with two classes (positive favours ``classes_[1]``),
        else the one-vs-rest values of every class, shape (n, K) (see :meth:`scores`)."""
        f = self.scores(X)
        if f.shape[1] != 2:
            return f
        with np.errstate(invalid="ignore"):
            d = f[:, 1] - f[:, 0]
        return np.where(np.isnan(d), 0.0, d)

    def scores(self, X) -> np.ndarray:
        """One-vs-rest decision values over all classes, shape (n, K) (``-inf`` for classes
        without a label; a single labeled class gets 0)."""
        return self.scores_rows(X, None)

    def scores_rows(self, X, rows) -> np.ndarray:
        """:meth:`scores` of the rows ``X[rows]`` (all of ``X`` when None); when ``X`` is
        the training part of the fit, the LAP column cache answers from what it keeps."""
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        n = X.shape[0] if rows is None else len(rows)
        return self._ovr(None if self.svc_ is None else self._rows_gram(X, rows), n)

    def _ovr(self, G, n: int) -> np.ndarray:
        """:meth:`scores` from the Gram matrix ``G`` (n, n_labeled) (None without an SVM)."""
        out = np.full((n, len(self.classes_)), -np.inf)
        if G is None:
            out[:, self.present_] = 0.0
            return out
        f = self.svc_.decision_function(G)
        if f.ndim == 1:          # binary: f > 0 favours the second present class
            f = np.column_stack([-f / 2, f / 2])
        out[:, self.present_] = f
        return out

    def decision_values(self, X, rows=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores` and the one-vs-one values of every pair, from one Gram matrix, of
        the rows ``X[rows]`` (all of ``X`` when None; see :meth:`scores_rows`).

        Returns
        -------
        scores : ndarray of shape (n, K)
            As :meth:`scores`.
        pairwise : ndarray of shape (n, K, K)
            ``pairwise[i, a, b] = f_ab(x_i)``, the decision value of the binary SVM between
            classes ``a`` and ``b`` (positive favours ``a``); antisymmetric, 0 on the diagonal
            and for every pair with a class without a label.
        """
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        K = len(self.classes_)
        n = X.shape[0] if rows is None else len(rows)
        pairwise = np.zeros((n, K, K))
        if self.svc_ is None:
            return self._ovr(None, n), pairwise
        G = self._rows_gram(X, rows)
        ovo = copy.copy(self.svc_)
        ovo.decision_function_shape = "ovo"
        dec = ovo.decision_function(G)
        if dec.ndim == 1:        # binary: sklearn's f > 0 favours the second class
            dec = -dec[:, None]
        a, b = np.triu_indices(len(self.present_), k=1)   # libsvm's pair order
        pairwise[:, self.present_[a], self.present_[b]] = dec
        pairwise[:, self.present_[b], self.present_[a]] = -dec
        return self._ovr(G, n), pairwise

    def density_model(self) -> MixtureDensity:
        """The density model of the training rows (eqs 1-7) that the strategies use: ``M_i``
        of Reitmaier et al. 2016, Alg. 1, the model the next query is selected with.

        The pool's model ``density_``; with ``refine=True`` its revision with this fit's labels
        (Alg. 1 line 14), for every kernel: for RWM and GMM the kernel's own
        ``kernel_density_``, for RBF and LAP the same revision computed here on first use.
        RBF and LAP fit the pool's model here on first use, with the options and seed the RWM
        kernel would use, and keep it like the kernel's (later fits of the same rows reuse it).
        """
        check_is_fitted(self, "classes_")
        if self.density_ is None:
            self.density_ = self._pool_density(self.X_pool_)
        if not self.refine:
            return self.density_
        if self.kernel_density_ is not None:
            return self.kernel_density_
        if self._strategy_density is None:
            self._strategy_density = self._refined(self.X_pool_, self._codes)
        return self._strategy_density

    def predict_log_proba(self, X) -> np.ndarray:
        """Log of the softmax of the decision values (not calibrated), shape (n, K)."""
        return self.predict_log_proba_rows(X, None)

    def predict_log_proba_rows(self, X, rows) -> np.ndarray:
        """:meth:`predict_log_proba` of the rows ``X[rows]`` (see :meth:`scores_rows`)."""
        f = self.scores_rows(X, rows)
        with np.errstate(invalid="ignore"):
            return log_softmax(f, axis=1)

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        best = np.argmax(self.scores(X), axis=1)     # checks the fitted state first
        return self.classes_[best]


def _fold_error(K: np.ndarray, y: np.ndarray, tr: np.ndarray, va: np.ndarray, C: float,
                strict: bool = False) -> float:
    """Error rate on the rows ``va`` of an SVC with kernel ``K`` trained on the rows ``tr``
    (``strict``: an undetermined prediction, :func:`determined_svc_predict`, is an error)."""
    return _split_error(K[np.ix_(tr, tr)], y[tr], K[np.ix_(va, tr)], y[va], C, strict)


def _split_error(K_train: np.ndarray, y_train: np.ndarray, K_val: np.ndarray,
                 y_val: np.ndarray, C: float, strict: bool) -> float:
    """:func:`_fold_error` from the fold's Gram matrices: training x training ``K_train``,
    validation x training ``K_val``."""
    classes, codes = np.unique(y_train, return_inverse=True)
    if len(classes) < 2:
        return float(np.mean(y_val != classes[0]))
    predicted = _predict_codes(K_train, codes, K_val, C, strict)
    return float(np.mean((predicted < 0) | (classes[predicted] != y_val)))


def _predict_codes(K_train, codes, K_test, C, strict: bool) -> np.ndarray:
    """Class codes of :func:`determined_svc_predict` (``strict``, -1 where undetermined) or
    of :func:`precomputed_svc_predict`."""
    if strict:
        return determined_svc_predict(K_train, codes, K_test, C)
    return precomputed_svc_predict(K_train, codes, K_test, C)


def binomial_se(errors: float, n: int) -> float:
    """Standard error of an error rate measured on ``n`` rows with ``errors`` wrong:
    ``sqrt(p (1 - p) / n)`` at Laplace's rule-of-succession estimate ``p = (errors + 1) /
    (n + 2)``, which, unlike ``errors / n``, does not claim certainty after 0 (or ``n``)
    errors: 8 rows without an error give 0.106 (``tie_tolerance="one_se_binomial"``)."""
    p = (errors + 1.0) / (n + 2.0)
    return float(np.sqrt(p * (1.0 - p) / n))


def _expected_errors(K: np.ndarray, G: np.ndarray, y: np.ndarray, folds, C: float,
                     strict: bool = False) -> np.ndarray:
    """Expected error on the unlabeled rows (docs/decisions/0303): each inner fold's SVM
    (kernel ``K`` on its training rows) predicts every unlabeled row (``G``: unlabeled rows x
    labeled rows); its expected error is the total-variation distance between the class
    shares of the labeled set ``y`` and the shares it predicts, the least error on those rows
    that is consistent with the labeled set's class shares; one value per fold.  A fold with
    one class predicts it everywhere.  With ``strict`` the undetermined predictions
    (:func:`determined_svc_predict`) are an outcome of their own, with share 0 in ``y``."""
    return np.asarray([_split_expected(K[np.ix_(tr, tr)], y[tr], G[:, tr], y, C, strict)
                       for tr, _ in folds], dtype=np.float64)


def _split_expected(K_train: np.ndarray, y_train: np.ndarray, G: np.ndarray, y: np.ndarray,
                    C: float, strict: bool) -> float:
    """One fold's expected error (:func:`_expected_errors`) from its Gram matrices: training x
    training ``K_train``, unlabeled x training ``G``; ``y`` the whole labeled set."""
    classes = np.unique(y)
    prior = np.array([np.mean(y == k) for k in classes])
    seen, codes = np.unique(y_train, return_inverse=True)
    if len(seen) < 2:
        predicted = np.full(G.shape[0], seen[0])
    else:
        found = _predict_codes(K_train, codes, G, C, strict)
        predicted = np.where(found < 0, np.nan, seen[np.maximum(found, 0)])
    shares = np.array([np.mean(predicted == k) for k in classes])
    return 0.5 * (np.abs(prior - shares).sum() + (1.0 - shares.sum()))


def _fold_grams(fold_laps: list, gamma_I: float, gamma_A: float) -> list:
    """Per inner fold, from :meth:`KernelSVC._fold_deformations`: the deformed Gram matrices
    ``(training x training, validation x training, U_1 x training or None)``."""
    kw = dict(gamma_I=gamma_I, gamma_A=gamma_A)
    return [(lap.gram(train, **kw), lap.gram(held_out, train, **kw),
             None if pool is None else lap.gram(pool, train, **kw))
            for lap, train, held_out, pool in fold_laps]


def _split_errors(grams: list, y: np.ndarray, folds, C: float, strict: bool):
    """Validation errors and expected errors (None without ``U_1``) of the inner folds, each
    from its own Gram matrices (:func:`_fold_grams`), as :func:`_fold_error` and
    :func:`_expected_errors` compute them from one Gram matrix of the labeled rows."""
    errors = np.array([_split_error(K_tr, y[tr], K_va, y[va], C, strict)
                       for (K_tr, K_va, _), (tr, va) in zip(grams, folds, strict=True)])
    if grams[0][2] is None:
        return errors, None
    expected = np.asarray([_split_expected(K_tr, y[tr], G, y, C, strict)
                           for (K_tr, _, G), (tr, _) in zip(grams, folds, strict=True)],
                          dtype=np.float64)
    return errors, expected


def precomputed_svc_predict(K_train: np.ndarray, codes: np.ndarray, K_test: np.ndarray,
                            C: float) -> np.ndarray:
    """Class codes predicted by ``SVC(kernel="precomputed", C=C).fit(K_train, codes)`` for
    the rows of ``K_test``, from the same libsvm calls without the estimator's checks.

    The inner CV of :meth:`KernelSVC._tune` trains tens of thousands of SVMs on a few rows
    each; there the estimator's input validation costs about a hundred times the solver.
    This function makes the two libsvm calls that ``SVC.fit`` and ``SVC.predict`` make, with
    ``SVC``'s defaults (tol 1e-3, shrinking, cache 200 MB, no class or sample weights, no
    probability), so its predictions are the estimator's (checked in
    ``tests/test_kernel_svm.py`` against ``SVC`` itself).  Without sklearn's low-level module
    (a private one) it falls back to ``SVC``.

    Parameters
    ----------
    K_train : ndarray of shape (n, n)
        Kernel between the training rows.
    codes : ndarray of int, shape (n,)
        Class codes ``0 .. k-1`` of the training rows, every code present, ``k >= 2``.
    K_test : ndarray of shape (m, n)
        Kernel between the rows to predict and the training rows.
    C : float

    Returns
    -------
    ndarray of int, shape (m,)
    """
    if _libsvm is None:
        return SVC(kernel="precomputed", C=C).fit(K_train, codes).predict(K_test)
    K_test = np.ascontiguousarray(K_test, dtype=np.float64)
    if not np.isfinite(K_test).all():
        raise ValueError("precomputed_svc_predict: the kernel has non-finite values")
    fitted = _libsvm_fit(K_train, codes, C, full=True)
    support, support_vectors, n_support, dual_coef, intercept, prob_a, prob_b = fitted[:7]
    predicted = _libsvm.predict(K_test, support, support_vectors, n_support, dual_coef,
                                intercept, prob_a, prob_b, svm_type=0, kernel="precomputed",
                                degree=3, coef0=0.0, gamma=0.0, cache_size=200)
    return predicted.astype(np.intp)


def _libsvm_fit(K_train: np.ndarray, codes: np.ndarray, C: float, full: bool = False):
    """libsvm's fit as ``SVC(kernel="precomputed", C=C).fit`` makes it (SVC's defaults: tol
    1e-3, shrinking, cache 200 MB, no weights, no probability): ``(support, dual_coef,
    intercept)``, or with ``full`` everything ``_libsvm.fit`` returns."""
    K_train = np.ascontiguousarray(K_train, dtype=np.float64)
    if not np.isfinite(K_train).all():
        raise ValueError("precomputed_svc_predict: the kernel has non-finite values")
    y = np.ascontiguousarray(codes, dtype=np.float64)
    if _libsvm is None:
        svc = SVC(kernel="precomputed", C=C).fit(K_train, y)
        return svc.support_, svc.dual_coef_, svc.intercept_
    _libsvm.set_verbosity_wrap(0)    # as SVC(verbose=False): libsvm's default prints its steps
    n_classes = int(y.max()) + 1
    fitted = _libsvm.fit(K_train, y, svm_type=0, sample_weight=np.empty(0),
                         class_weight=np.ones(n_classes), kernel="precomputed", C=float(C),
                         nu=0.5, probability=False, degree=3, shrinking=True, tol=SOLVER_TOL,
                         cache_size=200, coef0=0.0, gamma=0.0, epsilon=0.0, max_iter=-1,
                         random_seed=0)
    return fitted if full else (fitted[0], fitted[3], fitted[4])


def determined_svc_predict(K_train: np.ndarray, codes: np.ndarray, K_test: np.ndarray,
                           C: float) -> np.ndarray:
    """Class codes an SVC with a precomputed kernel determines for the rows of ``K_test``,
    -1 where it does not (the ``undetermined="error"`` rule of :class:`KernelSVC`).

    A binary SVM's bias is pinned by the KKT conditions only through a free support vector
    (``0 < alpha_i < C``).  Without one, every bias ``-rho`` with ``rho`` in ``[lb, ub]`` is
    optimal (libsvm's ``calculate_rho`` takes the midpoint, exactly 0 in a class-balanced fold
    on an identity Gram matrix), and a row whose decision value ``w(x) - rho`` changes sign
    within that interval, widened by the solver's tolerance (:data:`SOLVER_TOL`: within it
    even a pinned bias is not known), is not determined by the SVM.  ``lb`` and ``ub`` are
    libsvm's: over the rows at a bound, the extremes of ``y_i G_i = w_i - y_i``, with ``w_i``
    the kernel part at training row ``i``.  More than two classes: one-vs-one SVMs on each
    pair's rows, votes as libsvm counts them (ties to the smaller code); a row with an
    undetermined pair is undetermined.

    Parameters
    ----------
    K_train : ndarray of shape (n, n)
    codes : ndarray of int, shape (n,)
        Class codes ``0 .. k-1`` of the training rows, every code present, ``k >= 2``.
    K_test : ndarray of shape (m, n)
    C : float

    Returns
    -------
    ndarray of int, shape (m,)
        A class code, or -1.
    """
    k = int(codes.max()) + 1
    votes = np.zeros((K_test.shape[0], k), dtype=np.intp)
    undetermined = np.zeros(K_test.shape[0], dtype=bool)
    for a in range(k):
        for b in range(a + 1, k):
            rows = np.flatnonzero((codes == a) | (codes == b))
            low, high = _decision_range(K_train[np.ix_(rows, rows)], codes[rows] == a,
                                        K_test[:, rows], C)
            undetermined |= np.sign(low) != np.sign(high)
            votes[:, a] += low > 0
            votes[:, b] += low <= 0
    return np.where(undetermined, -1, np.argmax(votes, axis=1))


def _decision_range(K_train: np.ndarray, first: np.ndarray, K_test: np.ndarray, C: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest decision value for the first class (``first``: its rows) over
    the biases the KKT conditions allow (with a free support vector, libsvm's one bias),
    widened by the solver's tolerance on either side."""
    y = np.where(first, 1.0, -1.0)
    coef = np.zeros(len(y))
    model = _libsvm_fit(K_train, first.astype(np.float64) * -1 + 1, C)   # class 0 = first
    support, dual_coef, intercept = model
    sign = 1.0 if (dual_coef[0][first[support]] > 0).all() else -1.0  # libsvm's label order
    coef[support] = sign * dual_coef[0]
    alpha = np.abs(coef)
    w_train = K_train @ coef
    w_test = K_test @ coef
    free = (alpha > 1e-12 * C) & (alpha < C * (1 - 1e-12))
    if free.any():
        value = w_test + sign * intercept[0]
        return value - SOLVER_TOL, value + SOLVER_TOL
    y_g = w_train - y
    at_upper = alpha >= C * (1 - 1e-12)
    upper = (at_upper & (y < 0)) | (~at_upper & (y > 0))     # bounds of rho from above
    ub = y_g[upper].min(initial=np.inf)
    lb = y_g[~upper].max(initial=-np.inf)
    return w_test - ub - SOLVER_TOL, w_test - lb + SOLVER_TOL


def _nan_to_none(value):
    """``value`` with every non-finite float (in dicts and lists) replaced by None (JSON)."""
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nan_to_none(v) for v in value]
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return None
    return value


def _key(X: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest() + str(X.shape)
