"""Models: the learner contract, the registry and the registered models."""

from . import sklearn_models  # noqa: F401  (registers the sklearn baselines)
from . import prbf_family  # noqa: F401
from . import svm_tuned  # noqa: F401
from . import prbf_models  # noqa: F401
from . import active_prbf  # noqa: F401  (active_prbf, incremental_ssl_prbf)
from .base import MODELS, Learner, SklearnLearner, labeled_mask

__all__ = ["MODELS", "Learner", "SklearnLearner", "labeled_mask"]
