"""Pure scoring functions of class posteriors.  Higher score = more informative.

All functions take posteriors of shape ``(n_samples, n_classes)`` (or their logs) and return
shape ``(n_samples,)``.
"""

from __future__ import annotations

import numpy as np


def least_confident(proba: np.ndarray) -> np.ndarray:
    """``1 - max_k p(k|x)``."""
    return 1.0 - np.max(proba, axis=1)


def margin(proba: np.ndarray) -> np.ndarray:
    """Negative gap between the two largest posteriors: ``-(p(k1|x) - p(k2|x))``."""
    top2 = np.partition(proba, -2, axis=1)[:, -2:]
    return -(top2[:, 1] - top2[:, 0])


def entropy(proba: np.ndarray) -> np.ndarray:
    """Shannon entropy ``-sum_k p log p`` with ``0 log 0 = 0``."""
    p = np.clip(proba, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1)


def log_posterior_ratio(log_proba: np.ndarray) -> np.ndarray:
    """``log p(k1|x) - log p(k2|x)`` for the two most probable classes (Constantinopoulos & Likas
    2008, eqs 38-39).

    Computed from log posteriors so that the ratio stays finite when both posteriors underflow.
    Constantinopoulos & Likas 2008 queries the *smallest* ratio; :class:`PosteriorRatio` negates
    this value.  Rows where both log posteriors are ``-inf`` give 0 (no preference between the
    classes).
    """
    top2 = np.partition(log_proba, -2, axis=1)[:, -2:]
    with np.errstate(invalid="ignore"):
        diff = top2[:, 1] - top2[:, 0]
    return np.where(np.isfinite(diff), diff, np.where(np.isneginf(top2[:, 1]), 0.0, np.inf))
