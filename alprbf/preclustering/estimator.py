"""The pre-clustering classifier (Nguyen & Smeulders 2004) as an sklearn-style estimator.

``fit(X, y)`` takes every row of the database (``y = nan`` on unlabeled rows): the clustering
and the priors come from all rows (eqs 9-12), the label model from the labeled rows (eq 14),
and the coarse-to-fine check (eqs 32-33) looks at the unlabeled rows.  Handing the previous fit
of the same task (``previous``) keeps its clustering and current ``sigma``, so clustering runs
once per task and again only when the scale shrinks.

Choices where the paper is silent (parameters where they matter):

* Units: the paper's ``sigma0 = 2.2 d`` and ``lambda = 80`` are given for grey levels 0..255.
  With ``paper_range=255`` (default) the scale parameters (``sigma0``, ``sigma_per_dim``,
  ``min_sigma``) and ``lam`` are read in those units and converted to the data's by
  ``s = max|X| / paper_range``: ``sigma * s`` and ``lam * s^2``, which is the same model as on
  the data rescaled to 0..255.  On raw MNIST pixels ``s = 1`` (the literal values, ``sigma0 =
  1 724.8``; see ``../shared/notes/seed-003-004-reading.md``).  ``paper_range=None``: the values
  are used as given.
* ``sigma0``: None gives ``2.2 d`` (``sigma_per_dim * n_features``), the paper's value read
  literally.  On raw pixels that reading degenerates: ``kappa sigma0`` (13 798 on MNIST) exceeds
  any distance between two images (at most ``255 sqrt(784)``, about 7 140), so no cluster can
  split at ``sigma0`` (eq 10) and the memberships of eq 11 are nearly uniform.
  ``sigma0="max_radius"`` reads the paper's intent (large initial clusters that can still
  split, its coarse-to-fine paragraph) from the data: ``kappa sigma0`` equals the largest
  radius (eq 9) of the initial K-medoid clusters, the largest scale at which eq 10 still
  splits a cluster at the start.  It is in the data's units (``paper_range`` does not apply).
* Coarse-to-fine: checked at the end of every fit with at least two labeled classes and a
  non-empty pool; on a shrink the data are re-clustered (fission continued at the smaller
  ``kappa * sigma``, priors re-estimated) and the label model refitted, once per fit.  Fission
  never merges clusters, and ``sigma`` has no lower bound (``min_sigma`` sets one).  Eq 31's
  ``p(x)`` falls as ``sigma`` falls, so once the check fires it tends to fire at every later
  fit, down to one cluster per row (the label model is then logistic regression).
* Start of Newton: ``a = 0, b = 0`` at every fit (``warm_start=True``: the previous solution).
* More than two classes (the paper has two): one label model per labeled class against the
  others on the same clustering, posteriors normalised over the labeled classes.  With two
  labeled classes a single model, positive = the larger class code.  Classes without a label
  get posterior 0; a single labeled class gets 1.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..labels import check_fit_input
from ..validation import check_params, check_positive
from .clustering import (
    Mixture,
    Partition,
    centre_distances,
    cluster_sizes,
    fission,
    fit_mixture,
    initial_partition,
    mixture_terms,
)
from .label_model import LabelFit, fit_label_model, log_label_posteriors
from .selection import next_sigma, selection_score

SIGMA0_FROM_DATA = "max_radius"
"""``sigma0`` value for the data-derived initial scale (``kappa sigma0`` = largest initial
cluster radius)."""

MEMBERSHIP_CUT = 800.0
"""Log-membership gap below which a cluster is left out of the label model's fit
(``exp(-800)`` is below the smallest double: exact to rounding)."""


class PreclusteringClassifier(ClassifierMixin, BaseEstimator):
    """Mixture of logistic regressions on K-medoid representatives (see the module docstring).

    Parameters
    ----------
    sigma0 : float, None or "max_radius", default=None
        Initial scale; None: ``sigma_per_dim * n_features`` (in the units of ``paper_range``);
        ``"max_radius"``: the largest initial cluster radius over ``kappa`` (module docstring).
    sigma_per_dim : float, default=2.2
    kappa : float, default=8.0
        Fission until every radius < ``kappa * sigma`` (eq 10).
    n_medoids : int, default=20
        ``K0`` per subset.
    subset_size : int, default=1250
    lam : float, default=80.0
        Regularisation of eq 14 (in the units of ``paper_range``).
    paper_range : float or None, default=255.0
        Range of the data the scale parameters and ``lam`` are given for (module docstring).
    threshold : float, default=0.2
        ``t_e`` of eq 32.
    eta : float, default=0.9
        Shrink factor of eq 33.
    coarse_to_fine : bool, default=True
    min_sigma : float, default=0.0
        No shrink below this scale (0: none, as in the paper).
    warm_start : bool, default=False
    max_iter : int, default=100
        Newton steps per label model.
    tol : float, default=1e-12
        Newton stopping tolerance (:func:`.label_model.fit_label_model`).
    prior_tol : float, default=1e-7
    prior_max_iter : int, default=10000
        Iterations of eqs 11-12.
    classes : array-like or None, default=None
        Every class of the task.
    random_state : int or None, default=None
        Draws the clustering subsets.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    present_ : ndarray of int
        Codes of the labeled classes.
    scale_ : float
        ``max|X| / paper_range`` (1 when ``paper_range`` is None or ``X`` is all zeros).
    sigma_ : float
        Current scale, in the data's units.
    lam_ : float
        ``lam * scale_ ** 2``.
    partition_ : Partition
    centres_ : ndarray of shape (K, d)
    log_alpha_ : ndarray of shape (K,)
    mixture_ : Mixture
        Distances, memberships and densities of the rows of the fit.
    gram_ : ndarray of shape (K, K) or None
        ``centres_ @ centres_.T`` while ``K <= d`` (for the Newton solve), else None.
    coef_ : ndarray of shape (n_models, d)
    intercept_ : ndarray of shape (n_models,)
    fits_ : list of LabelFit
    max_score_ : float
        Largest selection score over the pool after this fit (nan without a pool).
    n_iter_ : int
        Newton steps of the last fit's label model (the largest over one-vs-rest models).
    n_shrinks_ : int
        Shrinks of ``sigma`` so far in the task (this fit and the previous ones).
    prior_iter_ : int
        Iterations of eqs 11-12 at the last clustering.
    log_proba_fit_ : ndarray of shape (n, n_classes)
        Log posteriors of the rows of the fit.
    scores_fit_ : ndarray of shape (n,)
        Selection scores (eq 30) of the rows of the fit.
    timings_ : dict
        Seconds spent in this fit on ``clustering``, ``newton`` and ``selection``.
    labeled_ : ndarray of int
        Rows of the fit that hold a label.
    n_fit_clusters_ : int
        Clusters that enter the label model (some labeled row has a membership in double
        precision; :data:`MEMBERSHIP_CUT`).
    """

    def __init__(self, sigma0=None, sigma_per_dim=2.2, kappa=8.0, n_medoids=20,
                 subset_size=1250, lam=80.0, paper_range=255.0, threshold=0.2, eta=0.9,
                 coarse_to_fine=True, min_sigma=0.0, warm_start=False, max_iter=100,
                 tol=1e-12, prior_tol=1e-7, prior_max_iter=10000, classes=None,
                 random_state=None):
        self.sigma0 = sigma0
        self.sigma_per_dim = sigma_per_dim
        self.kappa = kappa
        self.n_medoids = n_medoids
        self.subset_size = subset_size
        self.lam = lam
        self.paper_range = paper_range
        self.threshold = threshold
        self.eta = eta
        self.coarse_to_fine = coarse_to_fine
        self.min_sigma = min_sigma
        self.warm_start = warm_start
        self.max_iter = max_iter
        self.tol = tol
        self.prior_tol = prior_tol
        self.prior_max_iter = prior_max_iter
        self.classes = classes
        self.random_state = random_state

    def validate_params(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter."""
        owner = type(self).__name__
        check_params(owner, vars(self),
                     ints={"n_medoids": 1, "subset_size": 1, "max_iter": 0, "prior_max_iter": 1},
                     reals={"sigma_per_dim": 0.0, "kappa": 0.0, "lam": 0.0, "threshold": None,
                            "eta": 0.0, "min_sigma": 0.0, "tol": 0.0, "prior_tol": 0.0},
                     choices={"coarse_to_fine": (True, False), "warm_start": (True, False)})
        for name in ("sigma_per_dim", "kappa", "lam"):
            check_positive(owner, name, getattr(self, name))
        if not 0 < self.eta < 1:
            raise ValueError(f"{owner}: invalid eta={self.eta!r}; valid: 0 < eta < 1")
        if self.paper_range is not None:
            check_params(owner, {"paper_range": self.paper_range}, reals={"paper_range": 0.0})
            if self.paper_range <= 0:
                raise ValueError(f"{owner}: invalid paper_range={self.paper_range!r}; "
                                 "valid: None or a real number > 0")
        if self.sigma0 is not None and not (isinstance(self.sigma0, str)
                                            and self.sigma0 == SIGMA0_FROM_DATA):
            bad = ValueError(f"{owner}: invalid sigma0={self.sigma0!r}; valid: None, "
                             f"'{SIGMA0_FROM_DATA}' or a real number > 0")
            if isinstance(self.sigma0, str):
                raise bad
            try:
                check_params(owner, {"sigma0": self.sigma0}, reals={"sigma0": 0.0})
            except ValueError:
                raise bad from None
            if self.sigma0 <= 0:
                raise bad

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y, previous: PreclusteringClassifier | None = None):
        """Cluster all rows (or reuse ``previous``'s clustering), fit the label model on the
        labeled rows, then apply the coarse-to-fine check.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Labels, ``nan`` on unlabeled rows; at least one row labeled.
        previous : PreclusteringClassifier, optional
            An earlier fit of the same task (same ``X``): its clustering and scale are kept.

        Returns
        -------
        self
        """
        X, self.classes_, codes = check_fit_input(self, X, y)
        self.X_fit_ = X
        self.timings_ = {"clustering": 0.0, "newton": 0.0, "selection": 0.0}
        tic = time.perf_counter()
        same = previous is not None and previous.fitted_rows(X)
        if same:
            self.scale_ = previous.scale_
        else:
            top = float(max(X.max(initial=0.0), -X.min(initial=0.0)))
            self.scale_ = (top / self.paper_range if self.paper_range is not None and top > 0
                           else 1.0)
        self.lam_ = self.lam * self.scale_ ** 2
        if same:
            self.sigma_, self.n_shrinks_ = previous.sigma_, previous.n_shrinks_
            self._set_clusters(X, previous.partition_, previous.mixture_, previous.gram_)
        else:
            self.n_shrinks_ = 0
            rng = np.random.default_rng(self.random_state)
            partition = initial_partition(X, self.n_medoids, self.subset_size, rng)
            self.sigma_ = self._initial_sigma(X, partition)
            self._cluster(X, partition)
        self.timings_["clustering"] += time.perf_counter() - tic
        self._fit_labels(codes, previous if self.warm_start else None)
        self.max_score_ = self._check_scale(X, codes)
        return self

    def _initial_sigma(self, X: np.ndarray, partition: Partition) -> float:
        """``sigma0`` in the data's units (module docstring); with ``"max_radius"`` and every
        radius 0 (one row per cluster) the literal value."""
        if isinstance(self.sigma0, str):
            top = float(partition.radii.max())
            if top > 0:
                return top / self.kappa
        literal = self.sigma_per_dim * X.shape[1]
        return self.scale_ * float(literal if self.sigma0 is None or isinstance(self.sigma0, str)
                                   else self.sigma0)

    def _cluster(self, X: np.ndarray, partition: Partition, reuse: bool = False) -> None:
        """Fission at the current scale, then priors, memberships and densities of every row.
        With ``reuse``, ``partition`` is this fit's and the distances of its unchanged medoids
        are kept."""
        old = partition if reuse else None
        partition = fission(X, partition, self.kappa * self.sigma_)
        sq = centre_distances(X, partition, old, self.mixture_.sqdist if reuse else None)
        mixture = fit_mixture(sq, self.sigma_, cluster_sizes(partition), tol=self.prior_tol,
                              max_iter=self.prior_max_iter)
        gram = self.gram_ if old is not None and partition is old else None
        self._set_clusters(X, partition, mixture, gram)

    def _set_clusters(self, X, partition: Partition, mixture: Mixture, gram=None) -> None:
        self.partition_ = partition
        self.mixture_ = mixture
        self.centres_ = X[partition.medoids]
        self.log_alpha_ = mixture.log_alpha
        self.prior_iter_ = mixture.n_iter
        # C C^T for the Woodbury solve (used while K <= d; computed once per clustering)
        small = partition.n_clusters <= X.shape[1]
        self.gram_ = gram if gram is not None or not small else self.centres_ @ self.centres_.T

    def _fit_labels(self, codes: np.ndarray, previous) -> None:
        tic = time.perf_counter()
        lab = np.flatnonzero(codes >= 0)
        self.labeled_ = lab
        self.present_ = np.unique(codes[lab])
        positives = self.present_[1:] if len(self.present_) == 2 else \
            (self.present_ if len(self.present_) > 2 else self.present_[:0])
        start_ok = (previous is not None and hasattr(previous, "coef_")
                    and np.array_equal(previous.positives_, positives))
        fits: list[LabelFit] = []
        log_resp_lab = self.mixture_.log_resp(lab)
        # clusters whose membership is below exp(-MEMBERSHIP_CUT) of the largest for every
        # labeled row add nothing in double precision to eq 14, its gradient or eq 19
        keep = np.flatnonzero(np.any(
            log_resp_lab >= log_resp_lab.max(axis=1, keepdims=True) - MEMBERSHIP_CUT, axis=0))
        self.n_fit_clusters_ = len(keep)
        gram = None if self.gram_ is None else self.gram_[np.ix_(keep, keep)]
        for j, c in enumerate(positives):
            start = (previous.coef_[j], previous.intercept_[j]) if start_ok else None
            fits.append(fit_label_model(self.centres_[keep], log_resp_lab[:, keep],
                                        np.where(codes[lab] == c, 1.0, -1.0), self.lam_,
                                        start=start, max_iter=self.max_iter, tol=self.tol,
                                        gram=gram))
        self.positives_ = positives
        self.fits_ = fits
        self.n_iter_ = max((f.n_iter for f in fits), default=0)
        d = self.centres_.shape[1]
        self.coef_ = np.array([f.coef for f in fits]).reshape(len(fits), d)
        self.intercept_ = np.array([f.intercept for f in fits])
        self.timings_["newton"] += time.perf_counter() - tic

    def _score_rows(self) -> None:
        """Posteriors and selection scores of every row of the fit (cached for the query)."""
        tic = time.perf_counter()
        mix = self.mixture_
        self.log_proba_fit_ = self._log_proba_from(mix.resp, mix.log_resp)
        self.scores_fit_ = selection_score(np.exp(self.log_proba_fit_), mix.log_px)
        self.timings_["selection"] += time.perf_counter() - tic

    def _check_scale(self, X: np.ndarray, codes: np.ndarray) -> float:
        """Eqs 32-33: shrink ``sigma``, re-cluster and refit when the best score is low."""
        pool = np.flatnonzero(codes < 0)
        self._score_rows()
        if len(pool) == 0:
            return float("nan")
        best = float(np.max(self.scores_fit_[pool]))
        if not self.coarse_to_fine or len(self.present_) < 2:
            return best
        sigma = max(next_sigma(best, self.sigma_, self.threshold, self.eta),
                    self.min_sigma * self.scale_)
        if sigma >= self.sigma_:
            return best
        tic = time.perf_counter()
        self.sigma_ = sigma
        self.n_shrinks_ += 1
        self._cluster(X, self.partition_, reuse=True)
        self.timings_["clustering"] += time.perf_counter() - tic
        self._fit_labels(codes, None)
        self._score_rows()
        return float(np.max(self.scores_fit_[pool]))

    def membership_maxima(self) -> tuple[np.ndarray, np.ndarray]:
        """``max_k p(k|x)`` of every row of the fit, and the same with every ``alpha_k``
        equal (whether the Gaussian factors themselves single out a cluster: a prior
        collapsed on one cluster makes ``p(k|x)`` hard on every row however flat they are).
        Both depend on the clustering only (:meth:`diagnostics` takes them cached)."""
        check_is_fitted(self, "mixture_")
        mix = self.mixture_
        log_k = mix.sqdist * (-0.5 / mix.sigma ** 2)
        return mix.resp.max(axis=1), np.exp(log_k.max(axis=1) - logsumexp(log_k, axis=1))

    def diagnostics(self, maxima: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
        """The scale and clustering this fit ended with, for the health checks (observes
        only): ``sigma`` (data units), ``n_shrinks``, ``K``, ``max_prior`` (largest
        ``alpha_k``), ``median_max_membership`` (median over the pool of ``max_k p(k|x)``:
        about ``1/K`` when memberships are uniform, 1 when they are hard; None without a
        pool) and ``median_max_membership_equal_priors`` (the same with equal priors, see
        :meth:`membership_maxima`, which ``maxima`` may hand in), ``n_labeled_clusters``
        (clusters holding a labeled row), ``n_fit_clusters`` (clusters in the label model's
        fit), ``newton_iter`` and ``newton_converged`` (every one-vs-rest model)."""
        check_is_fitted(self, "mixture_")
        top, flat = self.membership_maxima() if maxima is None else maxima
        pool = np.ones(len(top), dtype=bool)
        pool[self.labeled_] = False
        has_pool = bool(pool.any())
        return {
            "sigma": float(self.sigma_),
            "n_shrinks": int(self.n_shrinks_),
            "K": int(self.partition_.n_clusters),
            "max_prior": float(np.exp(np.max(self.log_alpha_))),
            "median_max_membership": float(np.median(top[pool])) if has_pool else None,
            "median_max_membership_equal_priors": (float(np.median(flat[pool])) if has_pool
                                                   else None),
            "n_labeled_clusters": int(len(np.unique(self.partition_.labels[self.labeled_]))),
            "n_fit_clusters": int(self.n_fit_clusters_),
            "newton_iter": int(self.n_iter_),
            "newton_converged": bool(all(f.converged for f in self.fits_)),
        }

    # ------------------------------------------------------------------ prediction

    def _log_proba_from(self, resp: np.ndarray, log_resp_rows) -> np.ndarray:
        """Class log posteriors from memberships ``resp`` (n, K) and ``log_resp_rows(rows)``,
        their logs for given rows."""
        out = np.full((resp.shape[0], len(self.classes_)), -np.inf)
        present = self.present_
        if len(present) == 1:
            out[:, present[0]] = 0.0
            return out
        cols = [log_label_posteriors(a, b, self.centres_, resp=resp,
                                     log_resp_rows=log_resp_rows)
                for a, b in zip(self.coef_, self.intercept_, strict=True)]
        if len(present) == 2:
            log_pos, log_neg = cols[0]
            out[:, present[1]], out[:, present[0]] = log_pos, log_neg
        else:
            out[:, present] = np.column_stack([pos for pos, _ in cols])
        return out - logsumexp(out[:, present], axis=1, keepdims=True)

    def _terms(self, X):
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return mixture_terms(X, self.centres_, self.log_alpha_, self.sigma_)

    def predict_log_proba(self, X) -> np.ndarray:
        """Log class posteriors by eq 5, shape (n, n_classes)."""
        log_resp = self._terms(X)[0]
        return self._log_proba_from(np.exp(log_resp), lambda rows: log_resp[rows])

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """Eq 6: the class of largest posterior."""
        log_proba = self.predict_log_proba(X)   # checks the fitted state first
        return self.classes_[np.argmax(log_proba, axis=1)]

    def selection_scores(self, X) -> np.ndarray:
        """``(1 - |f(x)|) p(x)`` (eq 30) of the rows of ``X``, shape (n,)."""
        log_resp, log_px = self._terms(X)
        log_proba = self._log_proba_from(np.exp(log_resp), lambda rows: log_resp[rows])
        return selection_score(np.exp(log_proba), log_px)

    def fitted_rows(self, X) -> bool:
        """True when ``X`` is the matrix of the last fit (its cached terms apply)."""
        X_fit = getattr(self, "X_fit_", None)
        return X_fit is not None and (X is X_fit or (np.shape(X) == X_fit.shape
                                                     and np.array_equal(X, X_fit)))

    def log_proba_rows(self, rows: np.ndarray) -> np.ndarray:
        """``predict_log_proba(X_fit_[rows])``, cached at the fit."""
        return self.log_proba_fit_[rows]

    def selection_scores_rows(self, rows: np.ndarray) -> np.ndarray:
        """``selection_scores(X_fit_[rows])``, cached at the fit."""
        return self.scores_fit_[rows]
