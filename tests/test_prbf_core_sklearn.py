"""sklearn's estimator checks for the PRBF estimators.

No check is skipped by us.  sklearn itself skips ``check_array_api_input`` unless the
environment sets ``SCIPY_ARRAY_API=1`` (the estimators are numpy-only, like GaussianMixture).
Numerical warnings are turned into errors: the estimators must not emit any.
"""

from __future__ import annotations

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from alprbf.prbf import PRBF, PRBFSplit, SemiSupervisedPRBF


@parametrize_with_checks([PRBF(), PRBFSplit(), SemiSupervisedPRBF(split=True)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        check(estimator)
