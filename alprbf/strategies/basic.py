"""Model-agnostic strategies: random sampling, uncertainty sampling, posterior ratio."""

from __future__ import annotations

import numpy as np

from ..validation import check_choice
from . import scores
from .base import QueryStrategy


class RandomSampling(QueryStrategy):
    """Uniformly random pool rows (passive learning baseline)."""

    def score(self, X, pool, model):
        return np.zeros(len(pool))  # all tied: select_top draws uniformly


UNCERTAINTY_MEASURES = {
    "least_confident": scores.least_confident,
    "margin": scores.margin,
    "entropy": scores.entropy,
}


class UncertaintySampling(QueryStrategy):
    """Uncertainty sampling (US).

    Parameters
    ----------
    measure : {"least_confident", "margin", "entropy"}, default="margin"
    """

    def __init__(self, measure: str = "margin") -> None:
        check_choice("uncertainty", "measure", measure, UNCERTAINTY_MEASURES)
        self.measure = measure

    def score(self, X, pool, model):
        return UNCERTAINTY_MEASURES[self.measure](model.predict_proba_rows(X, pool))


class PosteriorRatio(QueryStrategy):
    """Smallest ratio of the two largest class posteriors (Constantinopoulos & Likas 2008).

    Eqs 38-39, computed in log space."""

    def score(self, X, pool, model):
        return -scores.log_posterior_ratio(model.predict_log_proba_rows(X, pool))
