"""Loop adapters for the PRBF estimators of :mod:`alprbf.prbf` (the papers of
Constantinopoulos & Likas 2008 and 2006 and of Titsias & Likas 2001).

Each learner wraps one estimator class (``estimator_class``); its config parameters are the
estimator's (``random_state`` comes from the task seed, ``classes`` from the task).  The learner
refits a clone of the estimator from scratch at every ``fit`` through the estimator's public
``fit(X, y)``, with ``y = nan`` on unlabeled rows and ``classes = 0..K-1``, so every class of
the task is modelled:

* a class with no labeled row has prior ``p(k) = 0`` (hence posterior 0);
* with no labeled row at all the learner predicts the uniform distribution;
* supervised estimators use the labeled rows only, semi-supervised ones every row, and both cap
  the number of components at the number of rows they use.

``model_size()`` is the number of Gaussian components of the network used for prediction
(after the split for the PRBF-split models).  001 Table III does not say whether its component
counts are taken before or after the split; counting after it is our choice (the network that
predicts), and :meth:`PRBFLearner.presplit_size` gives the count before the split (the result
column ``n_components_presplit``).
Warm-started learners are in :mod:`alprbf.models.active_prbf`.
"""

from __future__ import annotations

import numpy as np

from ..prbf import (
    PRBF,
    ConstrainedPRBF,
    IncrementalPRBFSplit,
    PRBFClassifierBase,
    PRBFSplit,
    SelectedIncrementalPRBFSplit,
    SelectedPRBFSplit,
    SemiSupervisedPRBF,
)
from .base import EstimatorLearner


class PRBFLearner(EstimatorLearner):
    """Adapter of a :class:`~alprbf.prbf.PRBFClassifierBase` estimator (module docstring).

    Subclasses set ``estimator_class``.
    """

    estimator_class: type[PRBFClassifierBase]
    train_loglik_: float | None = None

    def fit(self, X, y):
        """Fit as :class:`~alprbf.models.base.EstimatorLearner`, then note the mean
        ``log p(x|y)`` of the labeled rows under the fitted class densities (for
        :meth:`diagnostics`; it does not change the fit)."""
        super().fit(X, y)
        self.train_loglik_ = None
        if self.estimator_ is not None:
            y = np.asarray(y, dtype=np.float64)
            rows = ~np.isnan(y)
            self.train_loglik_ = float(np.mean(
                self.estimator_.class_log_density(np.asarray(X)[rows], y[rows].astype(int))))
        return self

    def model_size(self):
        if getattr(self, "estimator_", None) is None:
            return None
        return int(self.estimator_.params_.n_components)

    def diagnostics(self):
        """The estimator's :meth:`~alprbf.prbf.PRBFClassifierBase.fit_diagnostics` (nodes,
        EM iterations and convergence, restarts, final log-likelihood) and ``train_loglik``,
        the mean ``log p(x|y)`` of the labeled rows under the class densities that predict
        (:meth:`~alprbf.prbf.PRBFClassifierBase.class_log_density`); ``{}`` before the first
        labeled fit."""
        est = getattr(self, "estimator_", None)
        if est is None:
            return {}
        ll = self.train_loglik_
        return {**est.fit_diagnostics(),
                "train_loglik": ll if ll is not None and np.isfinite(ll) else None}

    def presplit_size(self) -> int | None:
        """Components of the network before the final split (equal to ``model_size()`` for
        the networks that are not split), or None before the first labeled fit."""
        est = getattr(self, "estimator_", None)
        if est is None:
            return None
        em = getattr(est, "em_params_", None)   # fixed-M EM networks keep the unsplit one
        return int(em.n_components if em is not None else est.n_components_)


class SupervisedPRBFLearner(PRBFLearner):
    """PRBF network trained by EM on the labeled rows (001 eqs 2-10)."""

    estimator_class = PRBF


class PRBFSplitLearner(PRBFLearner):
    """PRBF-split: EM with fixed M (best of n_init) on the labeled rows, then the
    class-specific split (001 eqs 11-15)."""

    estimator_class = PRBFSplit


class SemiSupervisedPRBFLearner(PRBFLearner):
    """Semi-supervised PRBF: EM on labeled and unlabeled rows (000 eqs 17-29), optional
    semi-supervised split (split: true, eqs 30-33)."""

    estimator_class = SemiSupervisedPRBF
    semi_supervised = True


class IncrementalPRBFSplitLearner(PRBFLearner):
    """Incremental PRBF-split (001 §III): components added one at a time at kd-tree
    candidates that raise the likelihood of >= 2 classes, then split."""

    estimator_class = IncrementalPRBFSplit


class SelectedIncrementalPRBFSplitLearner(PRBFLearner):
    """Incremental PRBF-split with m and covariance type chosen on inner CV folds
    (001 §IV protocol)."""

    estimator_class = SelectedIncrementalPRBFSplit


class SelectedPRBFSplitLearner(PRBFLearner):
    """PRBF-split (fixed-M EM, best of n_init, then split) with M and covariance type
    chosen on inner CV folds (001 §IV baseline)."""

    estimator_class = SelectedPRBFSplit


class ConstrainedPRBFLearner(PRBFLearner):
    """PRBF with constrained kernel sharing r_jk (002 eqs 3-14); predicts with eq 1."""

    estimator_class = ConstrainedPRBF
