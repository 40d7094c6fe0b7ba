"""Probabilistic RBF networks: numerical core (pure functions) and sklearn estimators.

Core API (see each function's docstring for shapes):

* :mod:`._gaussian`: ``GaussianFeatures`` (cached design matrix of X),
  ``compute_precision_cholesky``, ``estimate_log_gaussian_prob``,
  ``estimate_gaussian_parameters``, ``gaussian_parameters_and_precisions`` (moments +
  precisions with the accuracy fallback for nearly collapsed components);
* :mod:`._em`: ``prepare_data`` -> ``PRBFData``; ``e_step`` -> ``EStep``; ``m_step``;
  ``run_em`` -> ``EMResult``; ``initialize_params``; ``fit_em`` (restarts);
  ``log_class_conditional``, ``predict_log_joint``, ``predict_log_proba``;
* :mod:`._split`: ``split_params`` -> ``SplitResult`` (001 eqs 11-15, 000 eqs 30-33);
* :mod:`.estimators`: ``PRBF``, ``PRBFSplit``, ``SemiSupervisedPRBF``.
"""

from ._em import (
    EMResult,
    EStep,
    PRBFData,
    e_step,
    fit_em,
    initialize_params,
    joint_log_resp,
    label_codes,
    log_class_conditional,
    m_step,
    mixture_weights,
    predict_log_joint,
    predict_log_proba,
    prepare_data,
    run_em,
    safe_log,
)
from ._gaussian import (
    GaussianFeatures,
    compute_precision_cholesky,
    estimate_gaussian_parameters,
    estimate_log_gaussian_prob,
    gaussian_parameters_and_precisions,
)
from ._params import COVARIANCE_TYPES, PRBFParams
from ._split import SplitResult, split_params
from .estimators import PRBF, PRBFSplit, SemiSupervisedPRBF

__all__ = [
    "COVARIANCE_TYPES", "EMResult", "EStep", "GaussianFeatures", "PRBF", "PRBFData",
    "PRBFParams", "PRBFSplit", "SemiSupervisedPRBF", "SplitResult", "compute_precision_cholesky",
    "e_step", "estimate_gaussian_parameters", "estimate_log_gaussian_prob", "fit_em",
    "gaussian_parameters_and_precisions",
    "initialize_params", "joint_log_resp", "label_codes", "log_class_conditional", "m_step",
    "mixture_weights", "predict_log_joint", "predict_log_proba", "prepare_data", "run_em",
    "safe_log", "split_params",
]
