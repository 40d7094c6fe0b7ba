"""Loop adapter of :class:`alprbf.svm_kernels.svm.KernelSVC` (Reitmaier et al. 2016's SVM
paradigms).

Its config parameters are the estimator's (``kernel``: rbf, rwm, gmm (project-defined) or
lap; the grids; ``inner_folds``...).  Every ``fit`` hands the previous fit to the estimator, so
the density model (or the LAP graph) of the training part is built once per task and the SVM's
parameters are tuned on the first labeled set, as Reitmaier et al. 2016, §5.1.2 does.
``model_size()`` is the number of support vectors.
"""

from __future__ import annotations

import numpy as np

from ..svm_kernels.svm import KernelSVC
from .base import EstimatorLearner


class KernelSVMLearner(EstimatorLearner):
    """SVM on a structure-aware kernel (RWM, project-defined GMM, LAP) or the RBF kernel,
    tuned by inner CV once per task (Reitmaier et al. 2016, §4.3.1, §5.1.2)."""

    estimator_class = KernelSVC
    uses_categorical = True
    semi_supervised = True
    warm_start_from_previous = True

    def model_size(self):
        return None if self.estimator_ is None else int(self.estimator_.n_support_vectors_)

    def svm_decision_values(self, X):
        """One-vs-rest-style and one-vs-one decision values of the rows ``X``: shapes (n, K)
        and (n, K, K) (:meth:`KernelSVC.decision_values`; zeros before the first label)."""
        return self.svm_decision_values_rows(X, None)

    def svm_decision_values_rows(self, X, rows):
        """:meth:`svm_decision_values` of ``X[rows]`` (all of ``X`` when None): on the
        training part of the last fit the LAP column cache answers from what it keeps."""
        if self.estimator_ is None:
            n, K = len(X) if rows is None else len(rows), self.n_classes
            return np.zeros((n, K)), np.zeros((n, K, K))
        return self.estimator_.decision_values(X, rows)

    def predict_log_proba_rows(self, X, rows):
        if self.estimator_ is None:
            return super().predict_log_proba_rows(X, rows)
        return self.estimator_.predict_log_proba_rows(X, rows)

    def predict_proba_rows(self, X, rows):
        p = np.exp(self.predict_log_proba_rows(X, rows))
        return p / p.sum(axis=1, keepdims=True)

    def predict_rows(self, X, rows=None):
        if self.estimator_ is None:
            return super().predict_rows(X, rows)
        return np.argmax(self.estimator_.predict_log_proba_rows(X, rows), axis=1)

    def diagnostics(self):
        """:meth:`KernelSVC.diagnostics` of the last fit ({} before the first label)."""
        return {} if self.estimator_ is None else self.estimator_.diagnostics()

    def density_model(self):
        """The density model of the rows of the last fit (:meth:`KernelSVC.density_model`)."""
        if self.estimator_ is None:
            raise RuntimeError("kernel_svm: the density model exists after a fit with a label")
        return self.estimator_.density_model()
