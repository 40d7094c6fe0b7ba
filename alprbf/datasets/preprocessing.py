"""Preprocessing as the papers do it, configured by the ``dataset.preprocessing`` block.

Two stages:

* :meth:`Preprocessing.apply_global` runs once on the whole data set: missing-value policy,
  dropping constant features, one-hot encoding, and - when ``standardize`` is ``global`` or
  ``none`` - imputation, z-scoring and PCA fitted on all rows (Constantinopoulos & Likas 2008
  and Reitmaier et al. 2016 z-score each whole data set).
* :meth:`Preprocessing.fit_fold` is fitted on a fold's training part only (labeled and pool
  rows; never the test fold) and returns a transform for both parts.  When ``standardize`` is
  ``per_fold``, imputation, z-scoring and PCA are all fitted there instead.

So one rule decides where every fitted statistic comes from: the whole data set, unless
``standardize: per_fold``, in which case only the training part of the fold.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ..errors import DataWarning, UserError
from ._base import Dataset

STANDARDIZE = ("global", "per_fold", "none")
MISSING = ("impute", "draw", "drop", "error")


def _zscore_params(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std[std == 0] = 1.0  # constant columns stay constant (0) instead of NaN
    return mean, std


def _mode(col: np.ndarray) -> float:
    vals, counts = np.unique(col[~np.isnan(col)], return_counts=True)
    return float(vals[np.argmax(counts)]) if len(vals) else 0.0  # ties -> smallest value


def impute_values(X: np.ndarray, categorical: np.ndarray) -> np.ndarray:
    """Fill values for each column: median of numeric columns, most frequent categorical code."""
    fill = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        col = X[:, j]
        if categorical[j]:
            fill[j] = _mode(col)
        else:
            fill[j] = float(np.nanmedian(col)) if np.any(~np.isnan(col)) else 0.0
    return fill


def draw_missing(X: np.ndarray, categorical: np.ndarray,
                 seed: np.random.SeedSequence) -> np.ndarray:
    """``X`` with each missing numeric value drawn from its conditional distribution given the
    row's other columns, and each missing categorical code filled with the column's most
    frequent code.

    sklearn's ``IterativeImputer`` with ``sample_posterior=True`` (a Bayesian ridge regression
    per column on the others, rounds of chained equations, each value a draw from its
    posterior predictive), clipped to the column's observed range.  Unlike a single fill
    value it puts no point mass on the imputed rows: a density model fitted to the result
    sees their spread (decision 0314), where a median would give a full-covariance component
    a near-singular covariance on them.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        NaN marks a missing value.
    categorical : ndarray of bool, shape (d,)
    seed : numpy.random.SeedSequence
        The draws' only source of randomness.

    Returns
    -------
    ndarray of shape (n, d)
    """
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer

    X = _fill(X, np.where(categorical, impute_values(X, categorical), np.nan))
    num = ~np.asarray(categorical, bool)
    if not np.isnan(X[:, num]).any():
        return X
    Xn = X[:, num]
    # the observed range per column (fmin / fmax skip NaN; an all-missing column: 0)
    low = np.nan_to_num(np.fmin.reduce(Xn, axis=0), nan=0.0)
    high = np.nan_to_num(np.fmax.reduce(Xn, axis=0), nan=0.0)
    imputer = IterativeImputer(sample_posterior=True, min_value=low, max_value=high,
                               keep_empty_features=True,
                               random_state=int(seed.generate_state(1)[0]))
    X = X.copy()
    X[:, num] = imputer.fit_transform(Xn)
    return X


def _fill(X: np.ndarray, fill: np.ndarray) -> np.ndarray:
    nan = np.isnan(X)
    if not nan.any():
        return X
    X = X.copy()
    X[nan] = np.broadcast_to(fill, X.shape)[nan]
    return X


def one_hot(X: np.ndarray, names, categorical: np.ndarray):
    """Replace each categorical column by 0/1 indicator columns, one per observed code.

    A missing value (NaN) gives all-zero indicators.  Returns the new ``X``, feature names,
    categorical mask (True for indicator columns) and the source column of every new column.
    """
    cols, new_names, new_cat, groups = [], [], [], []
    for j in range(X.shape[1]):
        if not categorical[j]:
            cols.append(X[:, j:j + 1])
            new_names.append(names[j])
            new_cat.append(False)
            groups.append(j)
            continue
        codes = np.unique(X[~np.isnan(X[:, j]), j])
        cols.append((X[:, j:j + 1] == codes[None, :]).astype(np.float64))
        new_names += [f"{names[j]}={c:g}" for c in codes]
        new_cat += [True] * len(codes)
        groups += [j] * len(codes)
    return (np.hstack(cols) if cols else X, new_names, np.array(new_cat, bool),
            np.array(groups, np.int64))


class FoldTransform:
    """Statistics fitted on a fold's training part; ``transform(X)`` applies them.

    Attributes
    ----------
    categorical : ndarray of bool
        The categorical mask of the transformed columns (PCA replaces the numeric columns by
        ``pca`` components placed first, categorical columns follow unchanged).
    """

    def __init__(self, categorical, fill=None, zscore=None, pca=None) -> None:
        self.categorical_in = np.asarray(categorical, bool)
        self.fill, self.zscore, self.pca = fill, zscore, pca
        if pca is None:
            self.categorical = self.categorical_in.copy()
        else:
            self.categorical = np.r_[np.zeros(pca.n_components_, bool),
                                     np.ones(int(self.categorical_in.sum()), bool)]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if self.fill is not None:
            X = _fill(X, self.fill)
        num = ~self.categorical_in
        if self.zscore is not None:
            X = X.copy()
            mean, std = self.zscore
            X[:, num] = (X[:, num] - mean) / std
        if self.pca is not None:
            X = np.hstack([self.pca.transform(X[:, num]), X[:, ~num]])
        return X


def _fit_pca(X: np.ndarray, k: int, whiten: bool = False):
    from sklearn.decomposition import PCA

    n, d = X.shape
    if k > min(n, d):
        raise UserError(f"preprocessing pca={k} needs at most min(rows, numeric features) = "
                        f"{min(n, d)} components")
    solver = "covariance_eigh" if n >= d else "full"
    return PCA(n_components=k, svd_solver=solver, whiten=whiten).fit(X)


@dataclass(frozen=True)
class Preprocessing:
    """Preprocessing options.

    Parameters
    ----------
    standardize : {"global", "per_fold", "none"}, default="global"
        z-score each numeric feature using the whole data set (as Constantinopoulos & Likas
        2008 and Reitmaier et al. 2016 do), the training part of each fold, or not at all.
        Categorical columns are never z-scored. Also decides where imputation and PCA are fitted
        (see the module docstring).
    drop_constant : bool, default=False
        Remove features constant over the whole data set (optical digits: 64 -> 62,
        Constantinopoulos & Likas 2008; segmentation's REGION-PIXEL-COUNT).
    missing : {"impute", "draw", "drop", "error"}, default="impute"
        Missing values (NaN; only credit-a among the paper data sets, 67 cells in 37 rows):
        ``impute`` fills numeric columns with the median and categorical ones with the most
        frequent code (keeping all rows, as Reitmaier et al. 2016's 690 credit-a rows imply);
        ``draw`` draws each missing numeric value from its conditional distribution given the
        row's other columns (:func:`draw_missing`; seeded; not with ``per_fold``);
        ``drop`` removes incomplete rows once, before the folds; ``error`` refuses the data set.
    one_hot : bool, default=False
        Replace each categorical column by 0/1 indicator columns (1-of-K coding, as Reitmaier et al.
        2016's mixture models treat categorical attributes); indicators stay flagged categorical and
        ``Dataset.groups`` names their source attribute.
    pca : int or None, default=None
        Project the numeric columns on their first ``pca`` principal components (Reitmaier et al.
        2016: MNIST 784 -> 34), after z-scoring; categorical columns are kept after the components.
    pca_whiten : bool, default=False
        Scale the components to unit variance (sklearn ``PCA(whiten=True)``), so that kernel
        widths mean what they mean on z-scored data.
    """

    standardize: Literal["global", "per_fold", "none"] = "global"
    drop_constant: bool = False
    missing: Literal["impute", "draw", "drop", "error"] = "impute"
    one_hot: bool = False
    pca: int | None = None
    pca_whiten: bool = False

    def __post_init__(self) -> None:
        if self.standardize not in STANDARDIZE:
            raise ValueError(f"standardize must be one of {', '.join(STANDARDIZE)}")
        if self.missing not in MISSING:
            raise ValueError(f"missing must be one of {', '.join(MISSING)}, got {self.missing!r}")
        if self.missing == "draw" and self.per_fold:
            raise ValueError("missing: draw is fitted on the whole data set; valid with "
                             "standardize global or none, not per_fold")
        for name in ("drop_constant", "one_hot", "pca_whiten"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.pca is not None and (isinstance(self.pca, bool) or not isinstance(self.pca, int)
                                     or self.pca < 1):
            raise ValueError(f"pca must be a positive integer or null, got {self.pca!r}")

    @property
    def per_fold(self) -> bool:
        return self.standardize == "per_fold"

    def apply_global(self, ds: Dataset, seed: np.random.SeedSequence | None = None) -> Dataset:
        """Steps fitted on (or applied to) the whole data set; returns a new :class:`Dataset`.

        ``seed`` feeds ``missing: draw`` (required then; unused otherwise)."""
        X, names, cat = ds.X, list(ds.feature_names), ds.categorical
        groups = ds.groups if ds.groups is not None else np.arange(ds.n_features)
        y, split = ds.y, ds.split
        nan_rows = np.isnan(X).any(axis=1)
        if nan_rows.any():
            if self.missing == "error":
                raise UserError(f"dataset '{ds.name}' has {int(np.isnan(X).sum())} missing values "
                                f"in {int(nan_rows.sum())} rows; set preprocessing missing: "
                                "impute or drop")
            if self.missing == "drop":
                keep = ~nan_rows
                warnings.warn(f"dataset '{ds.name}': {int(nan_rows.sum())} of {len(y)} rows "
                              "with missing values dropped", DataWarning, stacklevel=2)
                X, y = X[keep], y[keep]
                split = None if split is None else split[keep]
            elif self.missing == "draw":
                if seed is None:
                    raise ValueError("missing: draw needs a seed")
                X = draw_missing(X, cat, seed)
            elif not self.per_fold:
                X = _fill(X, impute_values(X, cat))
        if self.drop_constant:
            with np.errstate(all="ignore"):
                span = np.nanmax(X, axis=0) - np.nanmin(X, axis=0)
            keep = span > 0  # an all-missing column (NaN span) is dropped too
            X, cat, groups = X[:, keep], cat[keep], groups[keep]
            names = [n for n, k in zip(names, keep, strict=True) if k]
        if self.one_hot and cat.any():
            X, names, cat, sub = one_hot(X, names, cat)
            groups = groups[sub]
        if not self.per_fold:
            t = self._fit(X, cat, zscore=self.standardize == "global")
            X = t(X)
            if t.pca is not None:
                names = [f"pc{i + 1}" for i in range(t.pca.n_components_)] + \
                        [n for n, c in zip(names, cat, strict=True) if c]
                groups = np.r_[np.full(t.pca.n_components_, -1), groups[cat]]
                cat = t.categorical
        return replace(ds, X=X, y=y, split=split, feature_names=tuple(names), categorical=cat,
                       groups=groups)

    def _fit(self, X: np.ndarray, categorical: np.ndarray, zscore: bool) -> FoldTransform:
        cat = np.asarray(categorical, bool)
        # always fitted: test rows may have missing values where the training rows have none
        fill = impute_values(X, cat)
        Xf = _fill(X, fill)
        zs = _zscore_params(Xf[:, ~cat]) if zscore else None
        pca = None
        if self.pca is not None:
            Xn = Xf[:, ~cat]
            if zs is not None:
                Xn = (Xn - zs[0]) / zs[1]
            pca = _fit_pca(Xn, self.pca, self.pca_whiten)
        return FoldTransform(cat, fill, zs, pca)

    def fit_fold(self, X_train: np.ndarray, categorical: np.ndarray):
        """Return ``transform(X) -> X`` fitted on ``X_train`` only.

        With ``standardize`` other than ``per_fold`` everything was fitted globally and the
        transform is the identity (its ``categorical`` attribute is the input mask).
        """
        if not self.per_fold:
            return FoldTransform(categorical)
        return self._fit(np.asarray(X_train, np.float64), categorical, zscore=True)
