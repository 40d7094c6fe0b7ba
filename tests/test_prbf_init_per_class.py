"""The within-class EM start (``init_params="kmeans_per_class"``)."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from alprbf.prbf import PRBF, ConstrainedPRBF
from alprbf.prbf._data import prepare_data
from alprbf.prbf._em import components_per_class, initialize_params


@pytest.mark.parametrize("counts, M, share", [
    ([5, 3, 3], 7, [3, 2, 2]),     # M // K each, the remainder to the largest class
    ([3, 5, 5], 7, [2, 3, 2]),     # ties: the lower code first
    ([1, 10], 4, [1, 3]),          # a class never gets more components than rows
    ([4, 4], 8, [4, 4]),
])
def test_components_per_class(counts, M, share):
    assert components_per_class(np.array(counts, float), M).tolist() == share


def test_more_components_than_labeled_rows_is_refused():
    with pytest.raises(ValueError, match="kmeans_per_class"):
        components_per_class(np.array([2.0, 1.0]), 4)


def test_one_component_per_class_starts_at_the_class_gaussians():
    """M = K: every class's k-means centre is its mean and its component's covariance the
    class's ML covariance plus the floor (the start is the QDA network)."""
    X, y = load_iris(return_X_y=True)
    data = prepare_data(X, y, 3, "full")
    p = initialize_params(data, 3, reg_covar=1e-6, init_params="kmeans_per_class",
                          random_state=0)
    for k in range(3):
        rows = X[y == k]
        np.testing.assert_allclose(p.means[k], rows.mean(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(p.covariances[k],
                                   np.cov(rows.T, bias=True) + 1e-6 * np.eye(4), atol=1e-10)


def test_every_component_starts_inside_one_class_and_paired_models_share_it():
    X, y = load_iris(return_X_y=True)
    starts = [est(n_components=7, init_params="kmeans_per_class", max_iter=0,
                  random_state=5).fit(X, y).params_
              for est in (PRBF, ConstrainedPRBF)]
    np.testing.assert_array_equal(starts[0].means, starts[1].means)
    near = np.argmin(((starts[0].means[:, None] - X[None]) ** 2).sum(-1), axis=1)
    # class 0 (50 rows) gets 3 centres, classes 1 and 2 two each, in class order
    assert [int(y[i]) for i in near] == [0, 0, 0, 1, 1, 2, 2]
