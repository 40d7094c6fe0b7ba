"""Registered sklearn baselines: SVC, logistic regression, Gaussian naive Bayes, random forest."""

from __future__ import annotations

import warnings

from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import SVC

from .base import SklearnLearner


class _PlattSVC(SVC):
    """SVC with Platt-scaled probabilities.

    scikit-learn 1.9 deprecates ``probability=True`` in favour of ``CalibratedClassifierCV``, whose
    internal cross-validation cannot run on the handful of labels an active learner starts with;
    we keep libsvm's built-in Platt scaling and silence the deprecation notice.
    """

    def fit(self, X, y, sample_weight=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return super().fit(X, y, sample_weight)


def _svc(C: float = 1.0, gamma: float | str = "scale", kernel: str = "rbf", tol: float = 1e-3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return _PlattSVC(C=C, gamma=gamma, kernel=kernel, tol=tol, probability=True)


def _logreg(C: float = 1.0, max_iter: int = 1000):
    return LogisticRegression(C=C, max_iter=max_iter)


def _gnb(var_smoothing: float = 1e-9):
    return GaussianNB(var_smoothing=var_smoothing)


def _rf(n_estimators: int = 200, max_depth: int | None = None, min_samples_leaf: int = 1):
    return RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth,
                                  min_samples_leaf=min_samples_leaf, n_jobs=1)


class SVCLearner(SklearnLearner):
    """RBF-kernel SVM with Platt-scaled probabilities (sklearn SVC, one-vs-one)."""

    params_from = staticmethod(_svc)


class LogisticRegressionLearner(SklearnLearner):
    """Multinomial logistic regression."""

    params_from = staticmethod(_logreg)


class GaussianNBLearner(SklearnLearner):
    """Gaussian naive Bayes."""

    params_from = staticmethod(_gnb)


class RandomForestLearner(SklearnLearner):
    """Random forest (a strong modern baseline)."""

    params_from = staticmethod(_rf)
