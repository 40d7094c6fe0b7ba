"""Inner cross-validation folds shared by the model-selection meta-estimators of Constantinopoulos &
Likas 2006.

Constantinopoulos & Likas 2006, §IV selects hyperparameters inside each outer training part by nine
runs, each holding one of the nine outer training folds out for validation and training on the other
eight.  Our estimators receive only the outer training part, so they re-split it into ``n_folds``
stratified folds with a fixed seed: every method given the same training part gets exactly the same
inner folds (the paper uses the same folds for all methods).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold


def inner_cv_splits(y: np.ndarray, n_folds: int = 9, seed: int = 0
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified (train_idx, val_idx) pairs over ``y``, deterministic given ``seed``.

    The number of folds is reduced to the size of the largest class when that is smaller
    (StratifiedKFold needs ``n_folds <= n`` per split); classes smaller than the number of folds
    simply miss from some validation folds.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Class codes.
    n_folds : int
    seed : int
        Seed of the shuffling (a fixed integer, so methods share folds).

    Returns
    -------
    list of (ndarray, ndarray)
        Empty when fewer than 2 folds are possible.
    """
    y = np.asarray(y)
    counts = np.unique(y, return_counts=True)[1]
    k = int(min(n_folds, counts.max() if counts.size else 0))
    if k < 2:
        return []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*least populated class.*")
        skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        return list(skf.split(np.zeros((y.size, 1)), y))
