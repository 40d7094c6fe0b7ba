"""Nguyen & Smeulders 2004's learners: the pre-clustering model and the linear SVM of its baselines.

* ``preclustering``: loop adapter of :class:`alprbf.preclustering.PreclusteringClassifier`.
  Every fit hands the previous fit to the estimator, so the database is clustered once per task
  and again only when the coarse-to-fine rule shrinks the scale.  It offers
  ``selection_scores(X, rows)`` (eq 30's criterion) for the ``preclustering`` strategy;
  ``model_size()`` is the number of clusters.
* ``linear_svm``: sklearn's ``SVC(kernel="linear")`` (libsvm, the standard soft-margin SVM with
  an unpenalised bias) on the labeled rows.  It offers ``decision_function`` and ``margin``
  for the ``closest_boundary`` and ``representative`` strategies.  The paper does not give
  ``C``; the default is libsvm's 1.  Posteriors are ``sigmoid(f)`` with two labeled classes and
  a softmax of sklearn's one-vs-rest decision values with more (not calibrated; they exist so
  that every strategy and the evaluation can use the SVM); the prediction is ``sign(f)``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax
from sklearn.svm import SVC

from ..preclustering import PreclusteringClassifier
from ..validation import check_positive
from .base import EstimatorLearner, Learner, labeled_mask


class PreclusteringLearner(EstimatorLearner):
    """Active learning with pre-clustering (Nguyen & Smeulders 2004): mixture of logistic
    regressions on K-medoid representatives, with the coarse-to-fine scale."""

    estimator_class = PreclusteringClassifier
    semi_supervised = True
    warm_start_from_previous = True

    def predict_log_proba_rows(self, X, rows):
        est = self.estimator_
        if est is not None and est.fitted_rows(X):
            return est.log_proba_rows(rows)
        return self.predict_log_proba(X[rows])

    def predict_rows(self, X, rows=None):
        """The class of largest posterior by :meth:`predict_log_proba_rows`, which answers the
        fit's rows from the posteriors cached at the fit.  Those come from the fit's
        memberships rather than from recomputed distances (they can differ by 1e-16 in log
        space), so only an exact tie could change a prediction."""
        return np.argmax(self.predict_log_proba_rows(X, slice(None) if rows is None else rows),
                         axis=1)

    def selection_scores(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(1 - |f(x)|) p(x)`` of the rows ``X[rows]`` (eq 30), shape (len(rows),); zeros
        before the first label."""
        est = self.estimator_
        if est is None:
            return np.zeros(len(rows))
        if est.fitted_rows(X):
            return est.selection_scores_rows(rows)
        return est.selection_scores(X[rows])

    def model_size(self):
        return None if self.estimator_ is None else int(self.estimator_.partition_.n_clusters)

    def diagnostics(self):
        """The estimator's :meth:`~alprbf.preclustering.PreclusteringClassifier.diagnostics`
        (scale, shrinks, K, largest prior, membership sharpness); {} before the first label.
        The membership maxima are computed once per clustering (the mixture object changes
        only when the data are re-clustered)."""
        est = self.estimator_
        if est is None:
            return {}
        cached = getattr(self, "maxima_", None)
        if cached is None or cached[0] is not est.mixture_:
            cached = (est.mixture_, est.membership_maxima())
            self.maxima_ = cached
        return est.diagnostics(cached[1])


class LinearSVMLearner(Learner):
    """Linear SVM on the labeled rows (Nguyen & Smeulders 2004's baselines; module docstring).

    Parameters
    ----------
    n_classes : int
    random_state : int or None
        Unused (libsvm is deterministic here).
    C : float, default=1.0
    tol : float, default=1e-3
    """

    def __init__(self, n_classes: int, random_state: int | None = None, C: float = 1.0,
                 tol: float = 1e-3) -> None:
        super().__init__(n_classes, random_state)
        for name, value in (("C", C), ("tol", tol)):
            check_positive("LinearSVMLearner", name, value)
        self.C = C
        self.tol = tol
        self.svc_ = None
        self.present_ = np.zeros(0, dtype=np.int64)

    def fit(self, X, y):
        mask = labeled_mask(y)
        yl = np.asarray(y)[mask].astype(np.int64)
        self.present_ = np.unique(yl)
        self.svc_ = None
        if len(self.present_) > 1:
            self.svc_ = SVC(kernel="linear", C=self.C, tol=self.tol,
                            decision_function_shape="ovr").fit(X[mask], yl)
        return self

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Decision values of the labeled classes, shape (n, n_present): ``(-f/2, f/2)`` with
        two classes, sklearn's one-vs-rest values with more, zeros with one class."""
        if self.svc_ is None:
            return np.zeros((len(X), len(self.present_)))
        f = self.svc_.decision_function(X)
        return np.column_stack([-f / 2, f / 2]) if f.ndim == 1 else f

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """``f(x)``, shape (n,), positive favours the larger labeled class code (two labeled
        classes; with more, the gap of :meth:`margin`; 0 with fewer)."""
        s = self.scores(X)
        return s[:, 1] - s[:, 0] if s.shape[1] == 2 else self.margin(X)

    def margin(self, X: np.ndarray) -> np.ndarray:
        """``|f(x)|`` (two labeled classes), else the gap between the two largest decision
        values; 0 with fewer than two labeled classes.  Shape (n,)."""
        s = self.scores(X)
        if s.shape[1] < 2:
            return np.zeros(len(X))
        top = np.sort(s, axis=1)[:, -2:]
        return top[:, 1] - top[:, 0]

    def predict_log_proba(self, X):
        if len(self.present_) == 0:
            return np.full((len(X), self.n_classes), -np.log(self.n_classes))
        out = np.full((len(X), self.n_classes), -np.inf)
        out[:, self.present_] = log_softmax(self.scores(X), axis=1)
        return out

    def predict_proba(self, X):
        return np.exp(self.predict_log_proba(X))

    def model_size(self):
        return None if self.svc_ is None else int(self.svc_.n_support_.sum())
