"""Loop adapters for the CMM classifiers of :mod:`alprbf.svm_kernels.cmm` (Reitmaier et al. 2016,
eqs 8-11).

Each learner wraps one estimator class (``estimator_class``); its config parameters are the
estimator's (``random_state`` comes from the task seed, ``classes`` from the task, so every
class of the task has a posterior column and a class without labels has posterior 0).

* With no labeled row at all the learner predicts the uniform distribution (the estimators
  need one label).
* Warm start (``warm_start_from_previous``): every ``fit`` passes the previously fitted
  estimator as ``previous``, so the mixtures whose input did not change are reused -- the
  shared mixture of CMM_sha (fitted on all rows, which stay the same through a task) is fitted
  once per task, and CMM_sep refits only the class whose labeled rows changed.  The result is
  exactly the cold fit's.
* ``model_size()`` is the number of mixture components used for prediction.
"""

from __future__ import annotations

from ..svm_kernels.cmm import CMMSeparate, CMMShared
from ..svm_kernels.density import density_summary
from .base import EstimatorLearner


class CMMLearner(EstimatorLearner):
    """Adapter of a CMM estimator (module docstring); subclasses set ``estimator_class``."""

    estimator_class: type[CMMShared] | type[CMMSeparate]
    warm_start_from_previous = True
    uses_categorical = True

    def model_size(self):
        return None if self.estimator_ is None else int(self.estimator_.n_components_)

    def diagnostics(self):
        """The density models behind the posteriors (:func:`density_summary`): CMM_sha's
        shared mixture, CMM_sep's mixture of each labeled class ({} before the first label)."""
        est = self.estimator_
        if est is None:
            return {}
        if isinstance(est, CMMShared):
            return {"density": density_summary(est.density_)}
        return {"class_densities": [None if d is None else density_summary(d)
                                    for d in est.class_densities_]}


class CMMSharedLearner(CMMLearner):
    """CMM_sha: one VI mixture of all rows, class weights per component from the labeled
    rows (eqs 8-9); ``refine: true`` adds the transductive refinement (§4.2)."""

    estimator_class = CMMShared
    semi_supervised = True


class CMMSeparateLearner(CMMLearner):
    """CMM_sep: one VI mixture per class of the labeled rows, priors = class shares
    (eqs 10-11)."""

    estimator_class = CMMSeparate
