"""Label encoding shared by every estimator family (alprbf/labels.py)."""

from __future__ import annotations

import numpy as np
import pytest

from alprbf.labels import check_fit_input, encode_labels
from alprbf.prbf import PRBF
from alprbf.preclustering import PreclusteringClassifier
from alprbf.svm_kernels import CMMShared, KernelSVC


def test_labels_are_encoded_with_nan_or_none_as_unlabeled():
    classes, codes = encode_labels(np.array(["b", None, "a"], dtype=object), 3)
    np.testing.assert_array_equal(classes, ["a", "b"])
    np.testing.assert_array_equal(codes, [1, -1, 0])
    classes, codes = encode_labels([2.0, np.nan, 0.0], 3, classes=[0, 1, 2])
    np.testing.assert_array_equal(codes, [2, -1, 0])
    with pytest.raises(ValueError, match="not in classes"):
        encode_labels([5.0, 0.0], 2, classes=[0, 1])
    with pytest.raises(ValueError, match="sorted"):
        encode_labels([1.0, 0.0], 2, classes=[1, 0])
    with pytest.raises(ValueError, match="infinity"):
        encode_labels([np.inf, 0.0], 2)
    with pytest.raises(ValueError, match="rows but y has"):
        encode_labels([0.0, 1.0], 3)


@pytest.mark.parametrize("estimator", [PRBF(2), PreclusteringClassifier(), KernelSVC(),
                                       CMMShared(2)])
def test_fit_input_checks_are_those_of_every_pool_estimator(estimator):
    X, classes, codes = check_fit_input(estimator, [[0, 1], [2, 3], [4, 5]], [1.0, np.nan, 3.0])
    assert X.dtype == np.float64 and estimator.n_features_in_ == 2
    np.testing.assert_array_equal(classes, [1.0, 3.0])
    np.testing.assert_array_equal(codes, [0, -1, 1])
    name = type(estimator).__name__
    with pytest.raises(ValueError, match=f"{name} needs at least one labeled row"):
        estimator.fit([[0.0, 1.0], [2.0, 3.0]], [np.nan, np.nan])


def test_fit_input_checks_the_parameters_first():
    with pytest.raises(ValueError, match="PRBF: invalid n_components=0"):
        check_fit_input(PRBF(0), [[0.0, 1.0]], [np.nan])
