"""Label encoding shared by every estimator family (alprbf/labels.py)."""

from __future__ import annotations

import numpy as np
import pytest

from alprbf.labels import encode_labels


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
