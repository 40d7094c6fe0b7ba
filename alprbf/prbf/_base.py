"""The one estimator base of the PRBF family: label handling, fitting contract, prediction.

Every PRBF estimator (:class:`~alprbf.prbf.PRBF`, the split, semi-supervised, incremental,
selected and constrained networks) derives from :class:`PRBFClassifierBase` and implements two
hooks: :meth:`PRBFClassifierBase._validate` (parameter checks, ``ValueError``) and
:meth:`PRBFClassifierBase._fit_codes` (fit on integer class codes, set ``params_``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..labels import check_fit_input
from ._estep import safe_log
from ._predict import predict_log_joint, predict_log_proba


class PRBFClassifierBase(ClassifierMixin, BaseEstimator):
    """Fitting and prediction contract shared by every PRBF estimator.

    ``fit(X, y)`` takes ``y`` with ``nan`` for unlabeled rows (scikit-activeml's convention).
    Supervised estimators (``semi_supervised = False``) ignore those rows; semi-supervised ones
    use them.  The ``classes`` parameter of every subclass names all classes of the task, so
    that a class without any labeled row is still modelled (with prior 0); without it the
    classes are the distinct labels of ``y``.

    Subclasses implement:

    * ``_validate()``: raise ``ValueError`` for an invalid parameter (called by
      :meth:`validate_params` and at the start of :meth:`fit`);
    * ``_fit_codes(X, codes, n_classes)``: fit on integer codes ``0..n_classes-1`` (``-1`` =
      unlabeled, only for semi-supervised estimators) and set ``params_`` (the network used
      for prediction);
    * optionally ``_params_for(n_components)`` for estimators that keep several networks.
    """

    semi_supervised: bool = False

    def validate_params(self) -> None:
        """Raise ``ValueError`` naming the first invalid parameter (without fitting)."""
        self._validate()

    def _validate(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_codes(self, X, codes, n_classes):  # pragma: no cover - abstract
        raise NotImplementedError

    def _params_for(self, n_components):
        return self.params_

    def fit(self, X, y):
        """Fit on labeled (and, for semi-supervised estimators, unlabeled) rows.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Class labels; ``nan`` (or ``None``) marks an unlabeled row.  At least one row must
            be labeled.

        Returns
        -------
        self
        """
        X, classes, codes = check_fit_input(self, X, y)
        if not self.semi_supervised:
            keep = codes >= 0
            X, codes = X[keep], codes[keep]
        self._fit_codes(X, codes, len(classes))
        self.classes_ = classes
        return self

    def fit_diagnostics(self) -> dict:
        """What the last fit chose, for the health checks (observes only): the number of
        nodes of the predicting network (``nodes``; per class for a split network, whose nodes
        each describe one class, and for the constrained network by the class each kernel
        serves most, largest ``r_jk``), the EM iterations run and whether EM converged, the
        restarts (``n_init``, the kept one ``restart``, every one's final log-likelihood) and
        the final log-likelihood (``loglik``; eq 6 of Titsias & Likas 2001 for the constrained
        network); the incremental and selected networks add their path length and selection.  Only
        the attributes the estimator has are reported; ``{}`` before a fit."""
        if getattr(self, "params_", None) is None:
            return {}
        out: dict = {"nodes": int(self.params_.n_components)}
        em = getattr(self, "em_params_", None)
        if em is not None and em.n_components != self.params_.n_components:
            out["nodes_presplit"] = int(em.n_components)
        n_classes = len(self.classes_)
        owner = getattr(self, "component_class_", None)
        if owner is None and getattr(self, "sharing_", None) is not None:
            owner = np.argmax(self.sharing_, axis=1)
        if owner is not None:
            out["nodes_per_class"] = np.bincount(owner, minlength=n_classes)
        for attr, key in (("n_iter_", "em_iterations"), ("converged_", "em_converged"),
                          ("restart_", "restart"), ("restart_logliks_", "restart_logliks"),
                          ("n_models_", "path_models"), ("selected_m_", "selected_m"),
                          ("covariance_type_", "selected_covariance_type"),
                          ("cv_error_", "selected_cv_error")):
            value = getattr(self, attr, None)
            if value is not None:
                out[key] = None if isinstance(value, float) and np.isnan(value) else value
        if "n_init" in self.get_params():
            out["n_init"] = self.n_init
        loglik = getattr(self, "loglik_", getattr(self, "objective_", None))
        if loglik is not None:
            out["loglik"] = float(loglik)
        return out

    def class_log_density(self, X, y, n_components=None):
        """``log p(x_i|y_i)`` of every row under the class densities the network predicts
        with (001 eq 2; for the constrained network 002 eq 1), shape (n,).  ``y`` holds class
        labels of ``classes_``; the mean over the training rows is the training likelihood
        that the health checks compare with the network's special cases (e.g. QDA)."""
        check_is_fitted(self, "params_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        params = self._params_for(n_components)
        codes = np.searchsorted(self.classes_, np.asarray(y))
        joint = predict_log_joint(X, params)[np.arange(len(codes)), codes]
        return joint - safe_log(params.class_priors)[codes]

    def predict_log_proba(self, X, n_components=None):
        """Log class posteriors ``log p(k|x)`` (001 eq 1), shape (n, n_classes).

        Parameters
        ----------
        X : array-like of shape (n, d)
        n_components : int or None
            Only for estimators that keep several networks (see their docstring).
        """
        check_is_fitted(self, "params_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return predict_log_proba(X, self._params_for(n_components))

    def predict_proba(self, X, n_components=None):
        """Class posteriors ``p(k|x)``, shape (n, n_classes); rows sum to 1."""
        p = np.exp(self.predict_log_proba(X, n_components))
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X, n_components=None):
        """Most probable class (Bayes rule), shape (n,)."""
        lp = self.predict_log_proba(X, n_components)
        return self.classes_[np.argmax(lp, axis=1)]
