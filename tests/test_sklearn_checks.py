"""sklearn's estimator checks, in one place, for every estimator class alprbf defines.

The classes are collected from the registered learners (their ``estimator_class``), so an
estimator registered later is checked with no new test code.  ``SMALL`` only shrinks search
grids so that the checks run quickly; no check is skipped by us (sklearn itself skips
``check_array_api_input`` unless ``SCIPY_ARRAY_API=1``).  Numerical warnings are errors: the
estimators must not emit any.
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from alprbf.models import MODELS
from alprbf.prbf import SemiSupervisedPRBF

#: about a third of the suite's CPU: left out of `make test-quick`
pytestmark = pytest.mark.slow

SMALL = {
    "IncrementalPRBFSplit": {"max_components": 3, "covariance_type": "diag"},
    "SelectedIncrementalPRBFSplit": {"max_components": 2, "covariance_types": ("diag",),
                                     "inner_folds": 2},
    "SelectedPRBFSplit": {"max_components": 2, "covariance_types": ("diag",),
                          "inner_folds": 2, "n_init": 1},
    "ConstrainedPRBF": {"covariance_type": "diag"},
    "TunedSVC": {"gamma_range": (-1, 0), "C_range": (0, 1), "inner_folds": 3},
    "KernelSVC": {"C_grid": (1.0,), "gamma_grid": (0.1, 1.0), "n_components": 3},
    "CMMShared": {"n_components": 4, "weight_concentration_priors": (0.1,),
                  "covariance_prior_scales": (0.5, 1.0), "n_mc": 200},
    "CMMSeparate": {"n_components": 4, "weight_concentration_priors": (0.1,),
                    "covariance_prior_scales": (0.5, 1.0), "n_mc": 200},
}


def _estimator_classes() -> list[type]:
    found = {}
    for name in MODELS:
        cls = getattr(MODELS[name], "estimator_class", None)
        if cls is not None and cls.__module__.startswith("alprbf."):
            found[cls.__name__] = cls
    return [found[k] for k in sorted(found)]


ESTIMATORS = [cls(**SMALL.get(cls.__name__, {})) for cls in _estimator_classes()]
ESTIMATORS.append(SemiSupervisedPRBF(split=True))   # the semi-supervised split path too


def test_every_estimator_class_is_collected():
    names = {type(e).__name__ for e in ESTIMATORS}
    assert {"PRBF", "PRBFSplit", "SemiSupervisedPRBF", "IncrementalPRBFSplit",
            "SelectedIncrementalPRBFSplit", "SelectedPRBFSplit", "ConstrainedPRBF",
            "TunedSVC", "CMMShared", "CMMSeparate", "KernelSVC"} <= names


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        check(estimator)
