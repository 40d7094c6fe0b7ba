"""Query strategies and their registry (the one place a strategy name is bound to a class)."""

from ..registry import Registry
from .base import QueryStrategy, select_top
from .basic import PosteriorRatio, RandomSampling, UncertaintySampling
from .preclustering import ClosestToBoundary, PreclusteringSelection, RepresentativeSampling
from .qbc import QBCPRBF
from .svm import FourDS, SVMUncertaintySampling

STRATEGIES: Registry[type[QueryStrategy]] = Registry("strategy", {
    "random": RandomSampling,
    "uncertainty": UncertaintySampling,
    "posterior_ratio": PosteriorRatio,
    "qbc_prbf": QBCPRBF,
    "preclustering": PreclusteringSelection,
    "closest_boundary": ClosestToBoundary,
    "representative": RepresentativeSampling,
    "uncertainty_svm": SVMUncertaintySampling,
    "four_ds": FourDS,
})

__all__ = ["STRATEGIES", "QueryStrategy", "select_top"]
