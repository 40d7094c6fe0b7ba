"""Training rows and labels prepared once for the PRBF E- and M-steps.

Rows are labeled (class code ``0..K-1``) or unlabeled (code ``-1``; ``nan`` in float label
vectors, the active-learning convention).  :func:`prepare_data` bundles them with the cached
design of their covariance type (:class:`~alprbf.prbf._gaussian.GaussianFeatures`) and the
one-hot columns the E-step's single moments product needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._gaussian import GaussianFeatures, check_covariance_type


@dataclass(frozen=True, eq=False)
class PRBFData:
    """Training rows prepared once for many E/M steps (build with :func:`prepare_data`).

    Attributes
    ----------
    X : ndarray (n, d), float64
    y : ndarray (n,), int64
        Class codes ``0..K-1``; ``-1`` marks an unlabeled row.
    n_classes : int
        ``K`` (classes may have no labeled row at all).
    labeled : ndarray (n_l,), int
        Row indices of the labeled rows.
    unlabeled : ndarray (n_u,), int
    codes : ndarray (n_l,), int
        ``y[labeled]``.
    onehot : ndarray (n_l, K), float
    class_counts : ndarray (K,), float
        ``N_k``.
    features : GaussianFeatures
        Cached data quantities for the covariance type, with the ``K + 1`` columns of
        ``onehot_ext`` as its extra rows (so one product gives the M-step's moments and the
        E-step's class counts).
    codes_ext : ndarray (n,), int
        ``y`` with unlabeled rows coded ``K`` (indexes the E-step's (M, K+1) offset table).
    onehot_ext : ndarray (n, K+1), float
        One-hot of ``codes_ext``: class indicators plus an "unlabeled" column.
    """

    X: np.ndarray
    y: np.ndarray
    n_classes: int
    labeled: np.ndarray
    unlabeled: np.ndarray
    codes: np.ndarray
    onehot: np.ndarray
    class_counts: np.ndarray
    features: GaussianFeatures
    codes_ext: np.ndarray
    onehot_ext: np.ndarray

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_labeled(self) -> int:
        return len(self.labeled)

    @property
    def n_unlabeled(self) -> int:
        return len(self.unlabeled)

    @property
    def covariance_type(self) -> str:
        return self.features.covariance_type

    @cached_property
    def offset_groups(self) -> tuple[int, np.ndarray]:
        """:func:`common_code` of ``codes_ext``, for every E-step."""
        return common_code(self.codes_ext)


def label_codes(y: np.ndarray) -> np.ndarray:
    """Integer codes from an AL label vector: ``nan`` (or negative codes) -> ``-1``."""
    y = np.asarray(y)
    if y.dtype.kind == "f":
        out = np.full(y.shape, -1, dtype=np.int64)
        ok = ~np.isnan(y)
        out[ok] = y[ok].astype(np.int64)
        return out
    out = y.astype(np.int64)
    return np.where(out < 0, -1, out)


def prepare_data(X: np.ndarray, y: np.ndarray, n_classes: int,
                 covariance_type: str = "full") -> PRBFData:
    """Bundle rows, labels and cached features for the E/M steps.

    Parameters
    ----------
    X : array of shape (n, d)
    y : array of shape (n,)
        Integer codes ``0..K-1`` with ``-1`` for unlabeled rows, or floats with ``nan``.
    n_classes : int
    covariance_type : {"full", "diag", "spherical"}

    Returns
    -------
    PRBFData
    """
    X = np.asarray(X, dtype=np.float64)
    codes_all = label_codes(y)
    if codes_all.shape != (X.shape[0],):
        raise ValueError("y must have one entry per row of X")
    if np.any(codes_all >= n_classes):
        raise ValueError(f"class codes must be < n_classes={n_classes}")
    labeled = np.flatnonzero(codes_all >= 0)
    unlabeled = np.flatnonzero(codes_all < 0)
    codes = codes_all[labeled]
    onehot = np.zeros((len(labeled), n_classes))
    onehot[np.arange(len(labeled)), codes] = 1.0
    class_counts = np.bincount(codes, minlength=n_classes).astype(np.float64)
    codes_ext = np.where(codes_all < 0, n_classes, codes_all)
    onehot_ext = np.zeros((len(codes_all), n_classes + 1))
    onehot_ext[np.arange(len(codes_all)), codes_ext] = 1.0
    features = GaussianFeatures(X, check_covariance_type(covariance_type), extra=onehot_ext.T)
    return PRBFData(X, codes_all, n_classes, labeled, unlabeled, codes, onehot, class_counts,
                    features, codes_ext, onehot_ext)


def common_code(codes: np.ndarray) -> tuple[int, np.ndarray]:
    """The code of at least three rows in four and the (sorted) rows with another code, or
    ``(-1, [])`` when no code is that common (then every row's offset is gathered by the
    compiled E-step, :func:`~alprbf.prbf.fast.normalize.normalize_with_offsets`)."""
    codes = np.asarray(codes, dtype=np.int64)
    counts = np.bincount(codes)
    common = int(np.argmax(counts))
    if 4 * counts[common] < 3 * len(codes):
        return -1, codes[:0]
    return common, np.flatnonzero(codes != common)
