"""Models: the learner contract, the registry and the registered models."""

from . import (
    active_prbf,  # noqa: F401  (active_prbf, incremental_ssl_prbf)
    prbf_family,  # noqa: F401
    prbf_models,  # noqa: F401
    sklearn_models,  # noqa: F401  (registers the sklearn baselines)
    svm_tuned,  # noqa: F401
)
from .base import MODELS, Learner, SklearnLearner, labeled_mask

__all__ = ["MODELS", "Learner", "SklearnLearner", "labeled_mask"]
