"""Probabilistic RBF networks: numerical core (pure functions) and sklearn estimators.

Core API (see each function's docstring for shapes):

* :mod:`._gaussian`: ``GaussianFeatures`` (cached design matrix of X),
  ``compute_precision_cholesky``, ``estimate_gaussian_parameters``,
  ``gaussian_parameters_and_precisions`` (moments + precisions with the accuracy fallback
  for nearly collapsed components);
* :mod:`._data`: ``prepare_data`` -> ``PRBFData``, ``label_codes``;
* :mod:`.reference`: the E-step and M-step in plain NumPy, to read beside the papers;
* :mod:`.fast`: the same arithmetic with the same bits, faster (compiled normalisation, blocked
  E-steps, sparse products), and the switch ``ALPRBF_FAST`` (``0`` or ``1``, the default)
  that chooses it (docs/performance.md);
* :mod:`._estep`: ``e_step`` -> ``EStep`` (reference or fast by the switch),
  ``mixture_weights``, ``joint_log_resp``, ``estimate_log_gaussian_prob``;
  :mod:`.fast.blocked`: ``blocked_e_step``, the same E-step one block of rows at a time,
  ``e_step_blocks``;
* :mod:`._em`: ``m_step``; ``run_em`` -> ``EMResult`` (its E-steps blocked where they can
  be); ``initialize_params``; ``fit_em`` (restarts);
* :mod:`._predict`: ``log_class_conditional``, ``predict_log_joint``, ``predict_log_proba``;
* :mod:`._split`: ``split_params`` -> ``SplitResult`` (001 eqs 11-15, 000 eqs 30-33);
* :mod:`._selection`: ``inner_cv_splits`` (the inner folds every selected model shares);
* estimators, all on :class:`PRBFClassifierBase` (``fit(X, y)`` with ``y = nan`` on unlabeled
  rows, a ``classes`` parameter): ``PRBF``, ``PRBFSplit``, ``SemiSupervisedPRBF``
  (:mod:`.estimators`), ``IncrementalPRBFSplit``, ``SelectedIncrementalPRBFSplit``,
  ``SelectedPRBFSplit`` (:mod:`.incremental`), ``ConstrainedPRBF`` (:mod:`.constrained`);
* :mod:`.active` (active PRBF steps, ``StepOptions``) and :mod:`.qbc` (committees).
"""

from ._base import PRBFClassifierBase
from ._data import PRBFData, label_codes, prepare_data
from ._em import EMResult, fit_em, has_converged, initialize_params, m_step, run_em
from ._estep import (
    EStep,
    e_step,
    estimate_log_gaussian_prob,
    joint_log_resp,
    mixture_weights,
    safe_log,
)
from ._gaussian import (
    GaussianFeatures,
    compute_precision_cholesky,
    estimate_gaussian_parameters,
    gaussian_parameters_and_precisions,
)
from ._kdtree import SPLIT_POINTS
from ._params import COVARIANCE_TYPES, PRBFParams
from ._predict import (
    log_class_conditional,
    log_proba_from_log_prob,
    predict_log_joint,
    predict_log_proba,
)
from ._selection import inner_cv_splits
from ._split import SplitResult, split_params
from .constrained import ConstrainedPRBF
from .estimators import PRBF, PRBFSplit, SemiSupervisedPRBF
from .fast.blocked import blocked_e_step, e_step_blocks
from .incremental import IncrementalPRBFSplit, SelectedIncrementalPRBFSplit, SelectedPRBFSplit

__all__ = [
    "COVARIANCE_TYPES", "SPLIT_POINTS", "ConstrainedPRBF", "EMResult", "EStep",
    "GaussianFeatures", "IncrementalPRBFSplit", "PRBF", "PRBFClassifierBase", "PRBFData",
    "PRBFParams", "PRBFSplit", "SelectedIncrementalPRBFSplit", "SelectedPRBFSplit",
    "SemiSupervisedPRBF", "SplitResult", "compute_precision_cholesky",
    "blocked_e_step", "e_step", "e_step_blocks", "estimate_gaussian_parameters",
    "estimate_log_gaussian_prob", "fit_em",
    "gaussian_parameters_and_precisions", "has_converged",
    "initialize_params", "inner_cv_splits", "joint_log_resp", "label_codes",
    "log_class_conditional", "log_proba_from_log_prob", "m_step",
    "mixture_weights", "predict_log_joint", "predict_log_proba", "prepare_data", "run_em",
    "safe_log", "split_params",
]
