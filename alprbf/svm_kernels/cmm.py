"""CMM classifiers: generative classifiers on mixture density models (Reitmaier et al. 2016, §4.2,
eqs 8-11).

This module owns the two classifiers and their sklearn estimators:

* :class:`CMMShared` (CMM_sha, eqs 8-9): one mixture shared by every class, fitted by VI on
  *all* rows given to ``fit`` (labeled and unlabeled: semi-supervised), with class weights per
  component ``xi_jc = p(c|j)`` estimated from the labeled rows' responsibilities;
  ``p(c|x) = sum_j xi_jc rho_j(x)``.  Optionally the mixture is first revised by the
  transductive refinement of :mod:`.refinement` (``refine=True``).
* :class:`CMMSeparate` (CMM_sep, eqs 10-11): one mixture per class, fitted by VI on that
  class's labeled rows, and class priors ``xi_c = |X_c| / |X|``;
  ``p(c|x) = xi_c p(x|c) / sum_c' xi_c' p(x|c')``.

Both take ``y`` with ``nan`` (or None) on unlabeled rows and a ``classes`` parameter naming
every class of the task, so that ``predict_proba`` always has one column per class.  Mixture
fits use :func:`~.density.fit_density` (VI, pruning, representativity grid).  Posteriors are
computed in log space (log-sum-exp).

Choices where the paper is silent:

* **Eq 9 normalisation.**  ``N_j`` sums the responsibilities of the *labeled* rows, so that
  ``xi_j.`` is a distribution over classes (``X_c`` are labeled rows; summing ``N_j`` over
  unlabeled rows too would not give ``sum_c xi_jc = 1``).
* **Smoothing of eq 9.**  ``xi_jc = (S_jc + alpha s_c) / (N_j + alpha)`` with
  ``S_jc = sum_{x in X_c} rho_j(x)``, ``s_c = |X_c| / |L|`` the labeled class shares and
  ``alpha = smoothing`` (default 1: one pseudo-row spread like the labeled classes).  A
  component no labeled row reaches predicts the class shares; ``alpha = 0`` is eq 9 exactly
  (a component with ``N_j = 0`` then also gets ``s_c``).
* **Classes without labels.**  Their share ``s_c`` (CMM_sha) or prior ``xi_c`` (CMM_sep) is 0,
  so their posterior is exactly 0 (log posterior ``-inf``), and they are never predicted.
  At least one labeled row is required (``ValueError`` otherwise).
* **CMM_sep priors.**  Each class mixture has the prior covariance ``s * C`` with ``C`` the
  covariance of *all* rows given to ``fit`` (a class with few labels has a singular sample
  covariance; the pool's scale is what the paper's hyper-parameter search uses too), and
  ``K_a`` of the categorical columns from all rows.  Each class draws its own seed from
  ``random_state`` (by class index).
* **Warm start.**  ``fit(X, y, previous=...)`` reuses the mixtures of a previously fitted
  estimator of the same class whose input (rows, parameters, seed) was identical, so a warm
  refit gives exactly the cold result: CMM_sha refits only ``xi`` (and the refinement) when
  only ``y`` changed; CMM_sep refits only the classes whose labeled rows changed.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..labels import check_fit_input
from ..validation import check_choice, check_int, check_real
from .density import (
    SEARCH_OPTIONS,
    DensityOptions,
    categorical_mask,
    covariance_of,
    fingerprint,
    fit_density,
    log_density,
    log_responsibilities,
    split_columns,
)
from .refinement import DISPUTE_RULES, refine_density

DENSITY_PARAMS = tuple(f.name for f in fields(DensityOptions) if f.name not in SEARCH_OPTIONS)
"""Estimator parameters forwarded to :class:`~.density.DensityOptions`."""


def class_given_component(resp: np.ndarray, codes: np.ndarray, n_classes: int,
                          smoothing: float = 1.0, component_classes: np.ndarray | None = None
                          ) -> np.ndarray:
    """``xi_jc = p(c|j)`` of CMM_sha: eq 9 with smoothing (module docstring).

    Parameters
    ----------
    resp : ndarray of shape (n, J)
        Responsibilities ``rho_j(x)`` of the rows.
    codes : ndarray of int, shape (n,)
        Class codes; ``-1`` rows are ignored.
    n_classes : int
    smoothing : float
        ``alpha >= 0``.
    component_classes : ndarray of int, shape (J,), or None
        Components with a class (``>= 0``, local CMM_sep components of the refinement) get
        ``xi_j = onehot(class)``; ``-1`` components get eq 9.

    Returns
    -------
    ndarray of shape (J, n_classes)
        Rows sum to 1; a class with no labeled row has ``xi_jc = 0``.
    """
    lab = codes >= 0
    onehot = codes[lab][:, None] == np.arange(n_classes)
    shares = onehot.mean(axis=0) if lab.any() else np.full(n_classes, 1.0 / n_classes)
    S = resp[lab].T @ onehot
    denom = S.sum(axis=1, keepdims=True) + smoothing
    xi = np.divide(S + smoothing * shares, denom, out=np.tile(shares, (len(S), 1)),
                   where=denom > 0)
    if component_classes is not None:
        fixed = component_classes >= 0
        xi[fixed] = component_classes[fixed][:, None] == np.arange(n_classes)
    return xi


def _log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(a)


def _normalise_log(lp: np.ndarray) -> np.ndarray:
    return lp - logsumexp(lp, axis=1, keepdims=True)


class _CMMBase(ClassifierMixin, BaseEstimator):
    """Label handling, validation and prediction shared by the two CMM estimators."""

    def __init__(self, n_components=20, weight_concentration_priors=(0.01, 1.0),
                 covariance_prior_scales=(0.1, 1.0), max_iter=100, tol=1e-3, reg_covar=1e-6,
                 min_component_rows=1.0, category_pseudo_count=1.0, n_mc=1000,
                 responsibility_rule="plug_in", categorical=None, classes=None,
                 random_state=None):
        self.n_components = n_components
        self.weight_concentration_priors = weight_concentration_priors
        self.covariance_prior_scales = covariance_prior_scales
        self.max_iter = max_iter
        self.tol = tol
        self.reg_covar = reg_covar
        self.min_component_rows = min_component_rows
        self.category_pseudo_count = category_pseudo_count
        self.n_mc = n_mc
        self.responsibility_rule = responsibility_rule
        self.categorical = categorical
        self.classes = classes
        self.random_state = random_state

    def validate_params(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter (without fitting)."""
        self._density_options()

    def _density_options(self) -> DensityOptions:
        return DensityOptions(**{name: getattr(self, name) for name in DENSITY_PARAMS})

    def fit(self, X, y, previous=None):
        """Fit on the labeled rows (CMM_sha: the mixture on all rows).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
        y : array-like of shape (n,)
            Class labels; ``nan`` (or None) marks an unlabeled row.  At least one row must be
            labeled.
        previous : estimator of the same class or None
            A fitted estimator whose mixtures are reused where their input was identical
            (warm start; the result equals a cold fit).

        Returns
        -------
        self
        """
        X, classes, codes = check_fit_input(self, X, y)
        mask = categorical_mask(self.categorical, X.shape[1])
        split_columns(X, mask)   # checks the categorical codes
        self._fit_codes(X, codes, len(classes), mask, self._density_options(),
                        previous if isinstance(previous, type(self)) else None)
        self.classes_ = classes
        return self

    def predict_log_proba(self, X):
        """Log class posteriors ``log p(c|x)``, shape (n, n_classes); ``-inf`` for classes
        without a labeled row."""
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return _normalise_log(self._log_joint(X))

    def predict_proba(self, X):
        """Class posteriors ``p(c|x)``, shape (n, n_classes); rows sum to 1."""
        p = np.exp(self.predict_log_proba(X))
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable class, shape (n,)."""
        lp = self.predict_log_proba(X)
        return self.classes_[np.argmax(lp, axis=1)]


class CMMShared(_CMMBase):
    """CMM_sha: a shared-components mixture with class weights per component (eqs 8-9).

    Parameters
    ----------
    n_components : int, default=20
        VI start (pruned to J).
    weight_concentration_priors, covariance_prior_scales : tuple of float
        The representativity grid (default (0.01, 1.0) x (0.1, 1.0)).
    max_iter, tol, reg_covar, min_component_rows, category_pseudo_count, n_mc :
        VI and representativity settings (:class:`~alprbf.svm_kernels.density.DensityOptions`).
    responsibility_rule : {"plug_in", "variational"}, default="plug_in"
        How eq 2 weighs the components (:mod:`~alprbf.svm_kernels.density`).
    categorical : array-like of bool, shape (n_features,), or None
        Categorical columns (integer codes); None: all continuous.
    smoothing : float, default=1.0
        Pseudo-count ``alpha`` of eq 9 (module docstring).
    refine : bool, default=False
        Revise the mixture with the transductive refinement before eq 9
        (:func:`~alprbf.svm_kernels.refinement.refine_density`).
    n_neighbors : int, default=5
        Neighbours of the refinement's transductive labelling.
    refine_dispute : {"two_classes", "no_majority"}, default="two_classes"
        Which components the refinement revises (the reading of "disputed",
        :mod:`~alprbf.svm_kernels.refinement` step 2; docs/decisions/0311).
    classes : array-like or None
        Every class of the task, sorted (None: the labels present in ``y``).
    random_state : int, RandomState or None

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    density_ : MixtureDensity
        The unsupervised model ``M0`` of all rows given to ``fit``.
    mixture_ : MixtureDensity
        The model used for prediction (``density_``, or its refinement).
    refinement_ : RefinedDensity or None
    component_classes_ : ndarray of int64, shape (J,)
        Class of each local (refinement) component, ``-1`` for shared ones.
    class_given_component_ : ndarray of shape (J, n_classes)
        ``xi_jc = p(c|j)``.
    n_components_ : int
        J of ``mixture_``.
    n_iter_ : int
        VI iterations of ``density_``.
    fingerprint_ : str
        Digest of the input of ``density_`` (warm start).
    """

    def __init__(self, n_components=20, weight_concentration_priors=(0.01, 1.0),
                 covariance_prior_scales=(0.1, 1.0), max_iter=100, tol=1e-3, reg_covar=1e-6,
                 min_component_rows=1.0, category_pseudo_count=1.0, n_mc=1000,
                 responsibility_rule="plug_in", categorical=None, smoothing=1.0, refine=False,
                 n_neighbors=5, refine_dispute="two_classes", classes=None, random_state=None):
        super().__init__(n_components, weight_concentration_priors, covariance_prior_scales,
                         max_iter, tol, reg_covar, min_component_rows, category_pseudo_count,
                         n_mc, responsibility_rule, categorical, classes, random_state)
        self.smoothing = smoothing
        self.refine = refine
        self.n_neighbors = n_neighbors
        self.refine_dispute = refine_dispute

    def validate_params(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter (without fitting)."""
        super().validate_params()
        check_real("CMMShared", "smoothing", self.smoothing, 0.0)
        check_choice("CMMShared", "refine", self.refine, (False, True))
        check_int("CMMShared", "n_neighbors", self.n_neighbors, 1)
        check_choice("CMMShared", "refine_dispute", self.refine_dispute, DISPUTE_RULES)

    def _fit_codes(self, X, codes, n_classes, mask, options, previous):
        seed_density, seed_refine = check_random_state(self.random_state).randint(
            2**31 - 1, size=2)
        self.fingerprint_ = fingerprint(X, mask, options, seed_density)
        if previous is not None and previous.fingerprint_ == self.fingerprint_:
            self.density_ = previous.density_
        else:
            self.density_ = fit_density(X, mask, options, random_state=seed_density)
        self.refinement_ = None
        mixture, comp_classes = self.density_, np.full(self.density_.n_components, -1)
        if self.refine:
            self.refinement_ = refine_density(
                self.density_, X, codes, n_classes, n_neighbors=self.n_neighbors,
                options=options, covariance_prior=covariance_of(split_columns(X, mask)[0]),
                dispute=self.refine_dispute, random_state=seed_refine)
            mixture, comp_classes = self.refinement_.density, self.refinement_.component_classes
        lab = codes >= 0
        resp = np.exp(log_responsibilities(mixture, X[lab]))
        self.mixture_, self.component_classes_ = mixture, comp_classes
        self.class_given_component_ = class_given_component(
            resp, codes[lab], n_classes, self.smoothing, comp_classes)
        self.n_components_ = mixture.n_components
        self.n_iter_ = self.density_.n_iter

    def _log_joint(self, X):
        log_rho = log_responsibilities(self.mixture_, X)
        return logsumexp(log_rho[:, :, None] + _log(self.class_given_component_)[None], axis=1)


class CMMSeparate(_CMMBase):
    """CMM_sep: one mixture per class and class priors from the labeled shares (eqs 10-11).

    Parameters
    ----------
    n_components : int, default=20
        VI start of every class mixture (capped at the class's rows, pruned).
    weight_concentration_priors, covariance_prior_scales : tuple of float
        The representativity grid, searched per class.
    max_iter, tol, reg_covar, min_component_rows, category_pseudo_count, n_mc :
        VI and representativity settings (:class:`~alprbf.svm_kernels.density.DensityOptions`).
    responsibility_rule : {"plug_in", "variational"}, default="plug_in"
        How eq 2 weighs the components (:mod:`~alprbf.svm_kernels.density`).
    categorical : array-like of bool, shape (n_features,), or None
    classes : array-like or None
    random_state : int, RandomState or None

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    class_densities_ : list of MixtureDensity or None, length n_classes
        ``p(x|c)``; None for a class without labeled rows.
    class_priors_ : ndarray of shape (n_classes,)
        ``xi_c`` (eq 11).
    class_fingerprints_ : list of str or None
        Digests of each class mixture's input (warm start).
    n_components_ : int
        Components over all classes.
    n_iter_ : int
        Most VI iterations of a class mixture.
    """

    def _fit_codes(self, X, codes, n_classes, mask, options, previous):
        seeds = check_random_state(self.random_state).randint(2**31 - 1, size=n_classes)
        Xc, cat_codes = split_columns(X, mask)
        prior_cov = covariance_of(Xc)
        n_cat = tuple(int(k) for k in cat_codes.max(axis=0) + 1) if cat_codes.size else ()
        old = dict(zip(previous.class_fingerprints_, previous.class_densities_, strict=True)
                   ) if previous is not None else {}
        self.class_densities_, self.class_fingerprints_ = [], []
        for c in range(n_classes):
            rows = codes == c
            if not rows.any():
                self.class_densities_.append(None)
                self.class_fingerprints_.append(None)
                continue
            key = fingerprint(X[rows], mask, options, prior_cov, n_cat, seeds[c])
            dens = old.get(key)
            if dens is None:
                dens = fit_density(X[rows], mask, options, covariance_prior=prior_cov,
                                   n_categories=n_cat, random_state=seeds[c])
            self.class_densities_.append(dens)
            self.class_fingerprints_.append(key)
        self.class_priors_ = np.bincount(codes[codes >= 0], minlength=n_classes) / np.sum(
            codes >= 0)
        fitted = [d for d in self.class_densities_ if d is not None]
        self.n_components_ = sum(d.n_components for d in fitted)
        self.n_iter_ = max(d.n_iter for d in fitted)

    def _log_joint(self, X):
        out = np.full((X.shape[0], len(self.class_priors_)), -np.inf)
        for c, dens in enumerate(self.class_densities_):
            if dens is not None:
                out[:, c] = np.log(self.class_priors_[c]) + log_density(dens, X)
        return out
