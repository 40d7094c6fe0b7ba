"""Registered PRBF learners for the active-learning loop: prbf, prbf_split, ssl_prbf.

Each wraps an estimator of :mod:`alprbf.prbf.estimators`; its config parameters are the
estimator's (``random_state`` comes from the task seed).  The learner always models all ``K``
classes of the task:

* a class with no labeled row has prior ``p(k) = 0`` (hence posterior 0) and uniform weights;
* with no labeled row at all the learner predicts the uniform distribution;
* the supervised learners use at most as many components as there are labeled rows, and the
  semi-supervised one at most as many as there are rows.

Each ``fit`` refits from scratch with the same seed (deterministic); warm-started incremental
learners live elsewhere.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import clone

from ..prbf._em import label_codes, predict_log_proba
from ..prbf.estimators import PRBF, PRBFSplit, SemiSupervisedPRBF
from .base import MODELS, Learner, publish_class


class PRBFLearner(Learner):
    """Base of the PRBF learners (see the module docstring)."""

    estimator_class: type = PRBF

    def __init__(self, n_classes: int, random_state: int | None = None, **params: Any) -> None:
        super().__init__(n_classes, random_state)
        self.params = params
        self.estimator = self.estimator_class(**params)
        self.estimator._check_params()

    def fit(self, X, y):
        X = np.asarray(X, dtype=np.float64)
        codes = label_codes(y)
        if not self.semi_supervised:
            keep = codes >= 0
            X, codes = X[keep], codes[keep]
        n_labeled = int(np.sum(codes >= 0))
        if n_labeled == 0:
            self.estimator_ = None
            return self
        est = clone(self.estimator).set_params(random_state=self.random_state)
        M = min(est.n_components, X.shape[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est._fit_codes(X, codes, self.n_classes, n_components=M)
        self.estimator_ = est
        return self

    def predict_log_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        if self.estimator_ is None:
            return np.full((X.shape[0], self.n_classes), -np.log(self.n_classes))
        return predict_log_proba(X, self.estimator_.params_)

    def predict_proba(self, X):
        p = np.exp(self.predict_log_proba(X))
        return p / p.sum(axis=1, keepdims=True)

    def model_size(self):
        if getattr(self, "estimator_", None) is None:
            return None
        return int(self.estimator_.params_.n_components)


def _learner(name: str, class_name: str, estimator_class: type, semi: bool, doc: str) -> None:
    cls = type(class_name, (PRBFLearner,),
               {"estimator_class": estimator_class, "semi_supervised": semi, "__doc__": doc,
                "params_from": estimator_class})
    MODELS.add(name, publish_class(cls, class_name, __name__))


_learner("prbf", "SupervisedPRBFLearner", PRBF, False,
         "PRBF network trained by EM on the labeled rows (001 eqs 2-10).")
_learner("prbf_split", "PRBFSplitLearner", PRBFSplit, False,
         "PRBF-split: EM with fixed M (best of n_init) on the labeled rows, then the "
         "class-specific split (001 eqs 11-15).")
_learner("ssl_prbf", "SemiSupervisedPRBFLearner", SemiSupervisedPRBF, True,
         "Semi-supervised PRBF: EM on labeled and unlabeled rows (000 eqs 17-29), optional "
         "semi-supervised split (split: true, eqs 30-33).")
