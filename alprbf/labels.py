"""Class labels of a pool-based task: ``y`` with ``nan`` (or ``None``) on unlabeled rows.

Shared by every estimator family (the lowest layer, like :mod:`alprbf.validation`): which rows
are labeled, the integer codes of the labels over all classes of the task, and the checks at the
start of every pool estimator's ``fit``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data


def labeled_rows(y: np.ndarray) -> np.ndarray:
    """True where ``y`` holds a label: not ``nan`` (float ``y``) and not ``None`` (object ``y``).

    Parameters
    ----------
    y : ndarray of shape (n,)

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    if y.dtype.kind == "f":
        if np.any(np.isinf(y)):
            raise ValueError("Input y contains infinity (use nan for unlabeled rows)")
        return ~np.isnan(y)
    if y.dtype.kind == "O":
        return np.array([not (v is None or (isinstance(v, float) and np.isnan(v))) for v in y],
                        dtype=bool)
    return np.ones(len(y), dtype=bool)


def encode_labels(y, n_rows: int, classes=None) -> tuple[np.ndarray, np.ndarray]:
    """Class codes of ``y`` (``-1`` for unlabeled rows) and the classes they index.

    Parameters
    ----------
    y : array-like of shape (n_rows,)
        Labels; ``nan`` (float) or ``None`` (object) marks an unlabeled row.
    n_rows : int
        Rows of ``X`` (``y`` must have as many entries).
    classes : array-like or None
        Every class of the task, sorted.  None: the distinct labels of ``y``.

    Returns
    -------
    classes : ndarray of shape (K,)
    codes : ndarray of int64, shape (n_rows,)
        ``classes[codes[i]] == y[i]`` on labeled rows, ``-1`` elsewhere.
    """
    y = column_or_1d(y, warn=True)
    if len(y) != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {len(y)} entries")
    labeled = labeled_rows(y)
    yl = y[labeled]
    if len(yl):
        check_classification_targets(yl)
    if classes is None:
        classes, codes_l = np.unique(yl, return_inverse=True)
    else:
        classes = np.asarray(classes)
        if classes.ndim != 1 or len(classes) == 0 or np.any(classes[1:] <= classes[:-1]):
            raise ValueError("classes must be a non-empty, sorted 1-d array of distinct labels")
        codes_l = np.searchsorted(classes, yl)
        unknown = (codes_l >= len(classes)) | (classes[np.minimum(codes_l, len(classes) - 1)]
                                               != yl)
        if np.any(unknown):
            raise ValueError(f"y holds labels that are not in classes: "
                             f"{sorted(set(yl[unknown].tolist()))[:5]}")
    codes = np.full(n_rows, -1, dtype=np.int64)
    codes[labeled] = codes_l
    return classes, codes


def check_fit_input(estimator, X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checks at the start of ``fit`` of an estimator that takes unlabeled rows.

    Calls ``estimator.validate_params()``, validates ``X`` as float64 (setting
    ``n_features_in_``), encodes ``y`` over ``estimator.classes`` (:func:`encode_labels`) and
    requires at least one labeled row.

    Parameters
    ----------
    estimator : scikit-learn estimator with ``validate_params()`` and a ``classes`` parameter
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Labels; ``nan`` (or ``None``) marks an unlabeled row.

    Returns
    -------
    X : ndarray of float64, shape (n, d)
    classes : ndarray of shape (K,)
    codes : ndarray of int64, shape (n,)
        ``-1`` on unlabeled rows.
    """
    estimator.validate_params()
    X = validate_data(estimator, X, dtype=np.float64)
    classes, codes = encode_labels(y, X.shape[0], estimator.classes)
    if not np.any(codes >= 0):
        raise ValueError(f"{type(estimator).__name__} needs at least one labeled row (y not nan)")
    return X, classes, codes
