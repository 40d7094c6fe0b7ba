"""The SVM baseline of Constantinopoulos & Likas 2006, §IV: RBF SVC (one-vs-one) with a (gamma, C)
line search.

The search: with ``C = 1``, choose ``gamma = 2^s`` minimising the mean validation error; with that
gamma fixed, choose ``C = 2^s`` the same way.  The validation error is the mean over the inner
cross-validation folds of the training data (:func:`alprbf.prbf._selection.inner_cv_splits`,
nine folds as in 001's protocol), so the SVM is tuned on exactly the folds the PRBF models use.

Exponent ranges (the paper scans s = -50..50, but on z-scored data almost all of that range is
degenerate: for gamma < 2^-15 the kernel matrix is constant to machine precision, for
gamma > 2^3 it is the identity on distinct points -- pure memorisation -- and C beyond 2^15 only
slows the solver).  The defaults are the ranges recommended by LIBSVM's authors (the library
the paper's toolbox wraps): gamma in 2^-15..2^3, C in 2^-5..2^15, step 1.  Ties are broken
towards the smaller exponent (the smoother / more regularised model).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..prbf import inner_cv_splits
from .base import Learner, grid_choice, labeled_mask


def line_search(errors_of, exponents: np.ndarray) -> tuple[int, np.ndarray]:
    """Evaluate ``errors_of(2.0**s)`` for every exponent; return (best exponent, all errors).

    The first minimum wins (smallest exponent among ties).
    """
    errs = np.array([errors_of(2.0 ** float(s)) for s in exponents])
    return int(exponents[int(np.argmin(errs))]), errs


def _exponents(bounds) -> np.ndarray:
    lo, hi = int(bounds[0]), int(bounds[1])
    if hi < lo:
        raise ValueError(f"exponent range must be (low, high) with low <= high, got {bounds}")
    return np.arange(lo, hi + 1)


class TunedSVC(ClassifierMixin, BaseEstimator):
    """RBF-kernel SVC whose gamma then C are chosen by line search on inner CV folds.

    Parameters
    ----------
    gamma_range : (int, int), default=(-15, 3)
        Inclusive exponent range ``s`` of ``gamma = 2^s``.
    C_range : (int, int), default=(-5, 15)
        Inclusive exponent range of ``C = 2^s``.
    inner_folds : int, default=9
        Stratified folds of the training data used for validation (Constantinopoulos & Likas 2006:
        nine).
    cv_seed : int, default=0
        Seed of the inner fold shuffling (fixed so every method sees the same folds).
    probability : bool, default=False
        Also fit Platt scaling (sigmoid calibration of the final SVC on internal folds).
        When False, ``predict_proba`` returns the one-hot encoding of the SVM decision (the
        error then equals the SVM's own error).
    tol : float, default=1e-3
        libsvm stopping tolerance.
    max_iter : int, default=1_000_000
        libsvm iteration cap per fit (guards against very slow fits at large C).
    random_state : int or None
        Seeds the calibration folds (``probability=True``) only.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    gamma_, C_ : float
        The selected hyperparameters.
    gamma_errors_, C_errors_ : ndarray
        Mean validation error along each line search (empty when no search was possible).
    tuning_time_ : float
        Wall-clock seconds of the search (excluding the final fit).
    fit_time_ : float
        Wall-clock seconds of the whole ``fit``.
    svc_ : SVC or None
        The final model trained on all data (None with a single class).
    calibrated_ : CalibratedClassifierCV or None
    n_support_vectors_ : int
    n_iter_ : ndarray
        libsvm iterations of the final fit (one per class pair).
    """

    def __init__(self, gamma_range=(-15, 3), C_range=(-5, 15), inner_folds=9, cv_seed=0,
                 probability=False, tol=1e-3, max_iter=1_000_000, random_state=None):
        self.gamma_range = gamma_range
        self.C_range = C_range
        self.inner_folds = inner_folds
        self.cv_seed = cv_seed
        self.probability = probability
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def _svc(self, C: float, gamma: float) -> SVC:
        return SVC(C=C, gamma=gamma, kernel="rbf", tol=self.tol, max_iter=self.max_iter,
                   decision_function_shape="ovo")

    def _cv_error(self, X, y, splits, C: float, gamma: float) -> float:
        errs = []
        for tr, va in splits:
            if np.unique(y[tr]).size < 2:  # one class only: predicts it everywhere
                errs.append(np.mean(y[va] != y[tr][0]))
                continue
            m = self._svc(C, gamma).fit(X[tr], y[tr])
            errs.append(np.mean(m.predict(X[va]) != y[va]))
        return float(np.mean(errs))

    def fit(self, X, y):
        """Tune (gamma, C) on inner folds of ``(X, y)`` and refit on all of it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        self.classes_, yc = np.unique(y, return_inverse=True)
        splits = inner_cv_splits(yc, self.inner_folds, self.cv_seed) if self.classes_.size > 1 \
            else []
        gammas, Cs = _exponents(self.gamma_range), _exponents(self.C_range)
        if splits:
            sg, self.gamma_errors_ = line_search(
                lambda g: self._cv_error(X, yc, splits, 1.0, g), gammas)
            self.gamma_ = 2.0 ** sg
            sc, self.C_errors_ = line_search(
                lambda c: self._cv_error(X, yc, splits, c, self.gamma_), Cs)
            self.C_ = 2.0 ** sc
        else:  # too little data to validate: libsvm defaults on z-scored data
            self.gamma_, self.C_ = 1.0 / X.shape[1], 1.0
            self.gamma_errors_ = self.C_errors_ = np.empty(0)
        self.tuning_time_ = time.perf_counter() - t0
        self.calibrated_ = None
        if self.classes_.size > 1:
            self.svc_ = self._svc(self.C_, self.gamma_).fit(X, yc)
            self.n_support_vectors_ = int(self.svc_.n_support_.sum())
            self.n_iter_ = np.asarray(self.svc_.n_iter_)
            if self.probability:
                n_cal = max(2, min(5, int(np.bincount(yc).min())))
                cv = StratifiedKFold(n_cal, shuffle=True, random_state=self.random_state)
                self.calibrated_ = CalibratedClassifierCV(
                    self._svc(self.C_, self.gamma_), method="sigmoid", ensemble=False,
                    cv=cv).fit(X, yc)
        else:
            self.svc_ = None
            self.n_support_vectors_ = 0
            self.n_iter_ = np.ones(1, dtype=np.int64)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _codes(self, X) -> np.ndarray:
        if self.svc_ is None:
            return np.zeros(X.shape[0], dtype=np.int64)
        return self.svc_.predict(X)

    def predict(self, X):
        """Predicted labels, shape (n_samples,)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.classes_[self._codes(X)]

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes) (one-hot unless ``probability``)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        if self.calibrated_ is not None:
            return self.calibrated_.predict_proba(X)
        out = np.zeros((X.shape[0], self.classes_.size))
        out[np.arange(X.shape[0]), self._codes(X)] = 1.0
        return out


class TunedSVCLearner(Learner):
    """RBF SVM with Constantinopoulos & Likas 2006's gamma-then-C line search on inner CV folds.

    See :class:`TunedSVC`.

    Its config parameters are :class:`TunedSVC`'s.  Trained on the labeled rows only;
    ``model_size()`` is the number of support vectors.
    """

    estimator_class = TunedSVC

    def __init__(self, n_classes: int, random_state: int | None = None, **params: Any) -> None:
        super().__init__(n_classes, random_state)
        self.params = params
        self.estimator = TunedSVC(**params)

    def fit(self, X, y):
        mask = labeled_mask(y)
        yl = np.asarray(y)[mask].astype(np.int64)
        self.present_ = np.unique(yl)
        self.estimator_ = None
        if self.present_.size >= 1:
            est = clone(self.estimator).set_params(random_state=self.random_state)
            self.estimator_ = est.fit(X[mask], yl)
        return self

    def predict_proba(self, X):
        out = np.zeros((X.shape[0], self.n_classes))
        if self.estimator_ is None:
            out[:] = 1.0 / self.n_classes
            return out
        out[:, self.estimator_.classes_] = self.estimator_.predict_proba(X)
        return out

    def model_size(self):
        return None if self.estimator_ is None else self.estimator_.n_support_vectors_

    def diagnostics(self) -> dict[str, Any]:
        """The chosen gamma and C with each line search's validation errors (no search, with
        fewer labels than the inner folds need: the libsvm defaults, ``searched`` False)."""
        est = self.estimator_
        if est is None:
            return {}
        out: dict[str, Any] = {"gamma": est.gamma_, "C": est.C_,
                               "searched": bool(len(est.gamma_errors_))}
        if out["searched"]:
            for name, bounds, errors, value in (
                    ("gamma", est.gamma_range, est.gamma_errors_, est.gamma_),
                    ("C", est.C_range, est.C_errors_, est.C_)):
                out[f"{name}_search"] = grid_choice(2.0 ** _exponents(bounds), errors, value)
            out["at_grid_edge"] = [n for n in ("gamma", "C") if out[f"{n}_search"]["at_edge"]]
        return out

    def tuning_time(self) -> float | None:
        """Seconds spent in the (gamma, C) search of the last fit."""
        return None if self.estimator_ is None else self.estimator_.tuning_time_
