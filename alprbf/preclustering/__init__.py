"""Active learning using pre-clustering (Nguyen & Smeulders 2004): the numerics.

* :mod:`.kmedoids`: distances by one GEMM and exact PAM K-medoids;
* :mod:`.clustering`: K-medoids per subset, fission, cluster priors and mixture terms (eqs 9-12);
* :mod:`.label_model`: the mixture of logistic regressions and its structured Newton solve
  (eqs 3-6, 13-25, with the erratum of eqs 21-24);
* :mod:`.selection`: the selection score and the coarse-to-fine rule (eqs 26-33);
* :mod:`.estimator`: :class:`PreclusteringClassifier`, the estimator tying them together.

This package knows nothing of the active-learning loop (models, strategies, protocol); the
learner adapter is :mod:`alprbf.models.preclustering`.
"""

from .estimator import PreclusteringClassifier

__all__ = ["PreclusteringClassifier"]
