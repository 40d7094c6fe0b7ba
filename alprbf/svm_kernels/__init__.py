"""Structure-aware kernels and generative mixture classifiers (Reitmaier et al. 2016, §4.1-4.3.1).

* :mod:`.density`: the variational mixture density of the pool (eqs 1-7), its
  responsibilities and Mahalanobis distances, representativity (§5.1.1);
* :mod:`.cmm`: the CMM_sha and CMM_sep classifiers (eqs 8-11);
* :mod:`.refinement`: the transductive refinement (§4.2, a documented reconstruction);
* :mod:`.gram`: Gram matrices of the RBF, RWM (eqs 12-16), project-defined GMM and LAP kernels;
* :mod:`.svm`: ``KernelSVC``, an SVM on any of them, tuned by inner CV.
"""

from .cmm import CMMSeparate, CMMShared
from .density import (
    DensityOptions,
    MixtureDensity,
    fit_density,
    log_density,
    responsibilities,
    squared_mahalanobis,
)
from .gram import KERNELS, LaplacianDeformation, gmm_gram, gram, lap_gram, rbf_gram, rwm_gram
from .refinement import refine_density
from .svm import KernelSVC

__all__ = [
    "KERNELS", "CMMSeparate", "CMMShared", "DensityOptions", "KernelSVC", "LaplacianDeformation",
    "MixtureDensity", "fit_density", "gmm_gram", "gram", "lap_gram", "log_density",
    "rbf_gram", "refine_density", "responsibilities", "rwm_gram", "squared_mahalanobis",
]
