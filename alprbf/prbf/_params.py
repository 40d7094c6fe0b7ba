"""The parameter container shared by every PRBF model (supervised, semi-supervised, active)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COVARIANCE_TYPES = ("full", "diag", "spherical")


@dataclass
class PRBFParams:
    """Parameters of a probabilistic RBF network with M shared Gaussian components, K classes.

    ``p(x|k) = sum_j weights[j, k] N(x; means[j], covariances[j])`` and ``p(k) = class_priors[k]``.

    Attributes
    ----------
    means : ndarray of shape (M, d)
    covariances : ndarray of shape (M, d, d) ("full"), (M, d) ("diag") or (M,) ("spherical")
    precisions_cholesky : ndarray, same shapes
        Cholesky factor of each precision matrix (sklearn's parametrisation): for "full",
        upper-triangular ``U`` with ``inv(Sigma) = U U^T``; for "diag"/"spherical", ``1/sqrt(var)``.
    weights : ndarray of shape (M, K)
        ``pi_jk = p(j|k)``; every column sums to 1.
    class_priors : ndarray of shape (K,)
    covariance_type : {"full", "diag", "spherical"}
    """

    means: np.ndarray
    covariances: np.ndarray
    precisions_cholesky: np.ndarray
    weights: np.ndarray
    class_priors: np.ndarray
    covariance_type: str = "full"

    @property
    def n_components(self) -> int:
        return self.means.shape[0]

    @property
    def n_classes(self) -> int:
        return self.weights.shape[1]
