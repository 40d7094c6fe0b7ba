"""KernelSVC's tuning when the first labeled set cannot hold an inner CV (one row of a class)."""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from alprbf.kernels.svm import KernelSVC


def _iris_labels(per_class):
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    lab = np.concatenate([rng.choice(np.flatnonzero(y == k), n, replace=False)
                          for k, n in enumerate(per_class)])
    y_obs = np.full(len(y), np.nan)
    y_obs[lab] = y[lab]
    return X, y, y_obs


def test_skipped_search_uses_the_documented_defaults_and_is_tried_again():
    X, y, y_obs = _iris_labels([1, 7, 4])            # one row of class 0: no inner CV
    first = KernelSVC(kernel="rbf", random_state=0).fit(X, y_obs)
    assert first.C_ == 1.0 and first.gamma_ == 1.0 / X.shape[1]
    assert np.isnan(first.cv_error_)
    _, _, more = _iris_labels([4, 7, 4])             # later: two or more rows of each class
    second = KernelSVC(kernel="rbf", random_state=0).fit(X, more, previous=first)
    assert np.isfinite(second.cv_error_)              # the search ran this time
    third = KernelSVC(kernel="rbf", random_state=0).fit(X, more, previous=second)
    assert (third.C_, third.gamma_) == (second.C_, second.gamma_)   # and is kept afterwards
    assert np.mean(third.predict(X) == y) > 0.8
