"""Models: the learner contract and the registry (the one place a model name is bound).

Adding a model is one module with its learner class plus one line in :data:`MODELS`.
"""

from ..registry import Registry
from .active_prbf import ActivePRBFLearner, IncrementalSSLPRBFLearner
from .base import EstimatorLearner, Learner, SklearnLearner, labeled_mask
from .cmm_learners import CMMSeparateLearner, CMMSharedLearner
from .kernel_svm import KernelSVMLearner
from .prbf_learners import (
    ConstrainedPRBFLearner,
    IncrementalPRBFSplitLearner,
    PRBFSplitLearner,
    SelectedIncrementalPRBFSplitLearner,
    SelectedPRBFSplitLearner,
    SemiSupervisedPRBFLearner,
    SupervisedPRBFLearner,
)
from .preclustering import LinearSVMLearner, PreclusteringLearner
from .sklearn_models import (
    GaussianNBLearner,
    LogisticRegressionLearner,
    RandomForestLearner,
    SVCLearner,
)
from .svm_tuned import TunedSVCLearner

MODELS: Registry[type[Learner]] = Registry("model", {
    # Constantinopoulos & Likas 2006, Titsias & Likas 2001: PRBF networks trained on the labeled
    # rows
    "prbf": SupervisedPRBFLearner,
    "prbf_split": PRBFSplitLearner,
    "incremental_prbf_split": IncrementalPRBFSplitLearner,
    "incremental_prbf_split_selected": SelectedIncrementalPRBFSplitLearner,
    "prbf_split_selected": SelectedPRBFSplitLearner,
    "constrained_prbf": ConstrainedPRBFLearner,
    "tuned_svc": TunedSVCLearner,
    # Constantinopoulos & Likas 2008: semi-supervised and warm-started active PRBF
    "ssl_prbf": SemiSupervisedPRBFLearner,
    "active_prbf": ActivePRBFLearner,
    "incremental_ssl_prbf": IncrementalSSLPRBFLearner,
    # Reitmaier et al. 2016: generative classifiers on variational mixture models of the pool
    "cmm_sha": CMMSharedLearner,
    "cmm_sep": CMMSeparateLearner,
    "kernel_svm": KernelSVMLearner,
    # Nguyen & Smeulders 2004: pre-clustering and the linear SVM of its baselines
    "preclustering": PreclusteringLearner,
    "linear_svm": LinearSVMLearner,
    # sklearn baselines
    "svc": SVCLearner,
    "logistic_regression": LogisticRegressionLearner,
    "gaussian_nb": GaussianNBLearner,
    "random_forest": RandomForestLearner,
})

__all__ = ["MODELS", "EstimatorLearner", "Learner", "SklearnLearner", "labeled_mask"]
