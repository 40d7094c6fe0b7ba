"""Small data sets shared by the PRBF tests."""

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler


def overlap_blobs() -> tuple[np.ndarray, np.ndarray]:
    """Three classes over five overlapping 2-D blobs (class = blob % 3), standardized.

    Two classes mix in several regions, so the node addition (001 eq 26, at least two classes
    must gain) has genuine candidates for a few steps.
    """
    X, y = make_blobs(n_samples=300, centers=[[0, 0], [1.5, 0], [0.75, 1.2], [3, 3], [4, 3]],
                      cluster_std=0.6, random_state=0)
    return StandardScaler().fit_transform(X), y % 3
