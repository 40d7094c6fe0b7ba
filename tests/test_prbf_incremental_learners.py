"""Registered learners of seeds 001/002 (the active-learning loop's contract)."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from alprbf.errors import UserError
from alprbf.models import MODELS

CASES = {
    "incremental_prbf_split": dict(max_components=4, covariance_type="diag"),
    "incremental_prbf_split_selected": dict(max_components=3, covariance_types=["diag"],
                                            inner_folds=3),
    "prbf_split_selected": dict(max_components=2, covariance_types=["spherical"],
                                inner_folds=3, n_init=1),
    "constrained_prbf": dict(n_components=3, covariance_type="diag"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_learner_contract(name):
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    yn = y.astype(float)
    yn[1::2] = np.nan
    yn[yn == 1] = np.nan  # class 1 has no label
    lrn = MODELS[name](n_classes=3, random_state=0, **CASES[name])
    lrn.fit(X, yn)
    P = lrn.predict_proba(X)
    assert P.shape == (150, 3) and np.allclose(P.sum(1), 1) and np.all(P[:, 1] == 0)
    assert np.all(np.isfinite(lrn.predict_log_proba(X)[:, [0, 2]]))
    acc = np.mean(lrn.predict(X)[y != 1] == y[y != 1])
    assert acc > 0.9
    assert lrn.model_size() >= 1
    # no label at all: uniform
    lrn.fit(X, np.full(150, np.nan))
    assert np.allclose(lrn.predict_proba(X), 1 / 3)


def test_bad_parameter_is_a_user_error():
    with pytest.raises(UserError, match="covariance_type"):
        MODELS["incremental_prbf_split"](n_classes=3, covariance_type="fll")
    with pytest.raises(UserError, match="r_init"):
        MODELS["constrained_prbf"](n_classes=3, r_init="x")
