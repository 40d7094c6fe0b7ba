"""Small data sets shared by the PRBF tests."""

import numpy as np
from sklearn.datasets import load_iris, make_blobs
from sklearn.preprocessing import StandardScaler

from alprbf.prbf import PRBFParams, compute_precision_cholesky


def overlap_blobs() -> tuple[np.ndarray, np.ndarray]:
    """Three classes over five overlapping 2-D blobs (class = blob % 3), standardized.

    Two classes mix in several regions, so the node addition (001 eq 26, at least two classes
    must gain) has genuine candidates for a few steps.
    """
    X, y = make_blobs(n_samples=300, centers=[[0, 0], [1.5, 0], [0.75, 1.2], [3, 3], [4, 3]],
                      cluster_std=0.6, random_state=0)
    return StandardScaler().fit_transform(X), y % 3


def standardized(loader=load_iris) -> tuple[np.ndarray, np.ndarray]:
    """A scikit-learn data set (``loader(return_X_y=True)``, iris by default), standardized."""
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def random_params(rng: np.random.Generator, M: int, d: int, K: int, covariance_type: str,
                  X: np.ndarray, jitter: float | None = None) -> PRBFParams:
    """A random PRBF network on ``X``: ``M`` means drawn from its rows (plus Gaussian noise of
    scale ``jitter`` if given), random well-conditioned covariances, Dirichlet weights and
    class priors (drawn in that order from ``rng``)."""
    means = X[rng.choice(len(X), M, replace=False)]
    if jitter is not None:
        means = means + rng.normal(scale=jitter, size=(M, d))
    if covariance_type == "full":
        B = rng.normal(size=(M, d, d)) * 0.3
        covs = B @ np.swapaxes(B, 1, 2) + np.eye(d)
    elif covariance_type == "diag":
        covs = rng.uniform(0.5, 2.0, size=(M, d))
    else:
        covs = rng.uniform(0.5, 2.0, size=M)
    weights = rng.dirichlet(np.ones(M), size=K).T
    priors = rng.dirichlet(np.ones(K))
    return PRBFParams(means, covs, compute_precision_cholesky(covs, covariance_type), weights,
                      priors, covariance_type)
