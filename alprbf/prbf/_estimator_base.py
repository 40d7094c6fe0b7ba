"""Plumbing shared by the seed-001/002 estimators (incremental, selected, constrained PRBF).

Subclasses implement ``_check_params()`` (raise :class:`ParamError`) and
``_fit_codes(X, codes, n_classes)`` (fit on integer codes, set ``params_``); this base provides
``fit``, ``predict_log_proba``, ``predict_proba`` and ``predict`` with the sklearn contract.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..errors import UserError
from ._em import predict_log_proba


class ParamError(UserError, ValueError):
    """Invalid estimator parameter (a user error and a ValueError, as sklearn expects)."""


def check_int(est, name: str, lo: int) -> None:
    """Raise :class:`ParamError` unless ``est.<name>`` is an integer >= ``lo``."""
    v = getattr(est, name)
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
        raise ParamError(f"{type(est).__name__}: invalid {name}={v!r}; valid: an integer >= {lo}")


def check_real(est, name: str, lo: float | None = None) -> None:
    """Raise :class:`ParamError` unless ``est.<name>`` is a finite real (>= ``lo`` if given)."""
    v = getattr(est, name)
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)
    if not ok or (lo is not None and v < lo):
        valid = "a real number" + (f" >= {lo}" if lo is not None else "")
        raise ParamError(f"{type(est).__name__}: invalid {name}={v!r}; valid: {valid}")


def check_choice(est, name: str, valid) -> None:
    """Raise :class:`ParamError` unless ``est.<name>`` is one of ``valid``."""
    v = getattr(est, name)
    if v not in valid:
        raise ParamError(f"{type(est).__name__}: invalid {name}={v!r}; valid: "
                         + ", ".join(map(str, valid)))


class CodesClassifier(ClassifierMixin, BaseEstimator):
    """Shared fit/predict: subclasses implement ``_fit_codes`` and set ``params_``."""

    def fit(self, X, y):
        """Fit on labeled data.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        self._fit_codes(X, codes, len(classes))
        self.classes_ = classes
        return self

    def _check_params(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_codes(self, X, codes, n_classes):  # pragma: no cover - abstract
        raise NotImplementedError

    def _params_for(self, n_components):
        return self.params_

    def predict_log_proba(self, X, n_components=None):
        """Log class posteriors (001 eq 1), shape (n, n_classes).

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
        """Class posteriors, shape (n, n_classes); rows sum to 1."""
        p = np.exp(self.predict_log_proba(X, n_components))
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X, n_components=None):
        """Most probable class, shape (n,)."""
        lp = self.predict_log_proba(X, n_components)
        return self.classes_[np.argmax(lp, axis=1)]
