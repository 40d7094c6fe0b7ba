"""Registered learners for seeds 001/002: incremental PRBF-split, selected PRBF-split, constrained.

* ``incremental_prbf_split`` -- one incremental run (001 §III) up to ``max_components``;
  predicts with the last PRBFsplit(m) (or ``select: m``).
* ``incremental_prbf_split_selected`` -- 001's protocol: ``m`` and the covariance type chosen
  on inner folds of the training part, then retrained (Table II, "Incremental PRBFsplit").
* ``prbf_split_selected`` -- the PRBFsplit baseline with the same selection (Table II,
  "PRBFsplit": fixed-M EM, best of 5 restarts, then split).
* ``constrained_prbf`` -- 002's constrained kernel sharing (compare with ``prbf`` at equal M).

All train on the labeled rows only and model all ``K`` classes of the task (a class without
labeled rows gets prior 0).  ``model_size()`` is the number of Gaussian components of the
network used for prediction (after the split for the PRBF-split models; 001 Table III
"components" -- the paper does not say whether it counts before or after the split, so the
selected pre-split ``m`` is also kept as ``selected_components()``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone

from ..prbf._em import label_codes
from ..prbf.constrained import ConstrainedPRBF
from ..prbf.incremental import (
    IncrementalPRBFSplit,
    SelectedIncrementalPRBFSplit,
    SelectedPRBFSplit,
)
from .base import MODELS, publish_class
from .prbf_models import PRBFLearner


class EstimatorLearner(PRBFLearner):
    """:class:`~alprbf.models.prbf_models.PRBFLearner` for estimators without ``n_components``.

    The estimator must expose ``_check_params()``, ``_fit_codes(X, codes, n_classes)`` and
    ``params_``; prediction and ``model_size`` are the PRBF learner's.
    """

    estimator_class: type = IncrementalPRBFSplit

    def fit(self, X, y):
        codes = label_codes(y)
        keep = codes >= 0
        self.estimator_ = None
        if not keep.any():
            return self
        est = clone(self.estimator)
        if "random_state" in est.get_params():
            est.set_params(random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est._fit_codes(np.asarray(X, dtype=np.float64)[keep], codes[keep], self.n_classes)
        self.estimator_ = est
        return self

    def selected_components(self) -> int | None:
        """Components before the split (the ``m`` chosen by the model selection)."""
        if self.estimator_ is None:
            return None
        return int(getattr(self.estimator_, "n_components_", self.model_size()))


def _register(name: str, estimator_class: type, doc: str) -> None:
    cls = type(f"{estimator_class.__name__}Learner", (EstimatorLearner,),
               {"estimator_class": estimator_class, "__doc__": doc,
                "params_from": estimator_class})
    MODELS.add(name, publish_class(cls, cls.__name__, __name__))


_register("incremental_prbf_split", IncrementalPRBFSplit,
          "Incremental PRBF-split (001 §III): components added one at a time at kd-tree "
          "candidates that raise the likelihood of >= 2 classes, then split.")
_register("incremental_prbf_split_selected", SelectedIncrementalPRBFSplit,
          "Incremental PRBF-split with m and covariance type chosen on inner CV folds "
          "(001 §IV protocol).")
_register("prbf_split_selected", SelectedPRBFSplit,
          "PRBF-split (fixed-M EM, best of n_init, then split) with M and covariance type "
          "chosen on inner CV folds (001 §IV baseline).")
_register("constrained_prbf", ConstrainedPRBF,
          "PRBF with constrained kernel sharing r_jk (002 eqs 3-14); predicts with eq 1.")
