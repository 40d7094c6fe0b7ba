"""Preprocessing as the papers do it, configured by the ``dataset.preprocessing`` block.

Two stages:

* :meth:`Preprocessing.apply_global` runs once on the whole data set (seed 000 and 003 z-score
  each whole data set; dropping constant features is also global).
* :meth:`Preprocessing.fit_fold` is fitted on a fold's training part only (labeled and pool
  rows; never the test fold) and returns a transform for both parts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ._base import Dataset

STANDARDIZE = ("global", "per_fold", "none")


def _zscore_params(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std[std == 0] = 1.0  # constant columns stay constant (0) instead of NaN
    return mean, std


@dataclass(frozen=True)
class Preprocessing:
    """Preprocessing options.

    Parameters
    ----------
    standardize : {"global", "per_fold", "none"}, default="global"
        z-score each feature using the whole data set (as seeds 000 and 003), the training part of
        each fold, or not at all.  Categorical columns are never z-scored.
    drop_constant : bool, default=False
        Remove features constant over the whole data set (optical digits: 64 -> 62, seed 000).
    """

    standardize: Literal["global", "per_fold", "none"] = "global"
    drop_constant: bool = False

    def apply_global(self, ds: Dataset) -> Dataset:
        X, names, cat = ds.X, np.array(ds.feature_names), ds.categorical
        if self.drop_constant:
            keep = np.ptp(X, axis=0) > 0
            X, names, cat = X[:, keep], names[keep], cat[keep]
        if self.standardize == "global":
            X = X.copy()
            num = ~cat
            mean, std = _zscore_params(X[:, num])
            X[:, num] = (X[:, num] - mean) / std
        return replace(ds, X=X, feature_names=tuple(names), categorical=cat)

    def fit_fold(self, X_train: np.ndarray, categorical: np.ndarray):
        """Return ``transform(X) -> X`` fitted on ``X_train`` only."""
        if self.standardize != "per_fold":
            return lambda X: X
        num = ~np.asarray(categorical, bool)
        mean, std = _zscore_params(X_train[:, num])

        def transform(X: np.ndarray) -> np.ndarray:
            X = X.copy()
            X[:, num] = (X[:, num] - mean) / std
            return X

        return transform
