"""PRBF learners' ``diagnostics()``: what they report is what the fit did, and reading it
changes nothing."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_iris

from alprbf.models import MODELS
from alprbf.store.results import model_state_json


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y.astype(float)


@pytest.mark.parametrize("name", ["prbf", "prbf_split", "constrained_prbf"])
def test_restarts_and_loglik_are_the_kept_run(iris, name):
    X, y = iris
    m = MODELS[name](n_classes=3, random_state=3, n_components=5, n_init=4)
    assert m.diagnostics() == {}
    m.fit(X, y)
    d = m.diagnostics()
    json.loads(model_state_json(d))
    assert d["n_init"] == 4 and len(d["restart_logliks"]) == 4
    assert d["restart"] == int(np.argmax(d["restart_logliks"]))
    assert d["loglik"] == pytest.approx(max(d["restart_logliks"]), abs=0)
    assert d["nodes"] == m.model_size()
    assert d["em_iterations"] >= 1 and d["em_converged"] in (True, False)
    if "nodes_per_class" in d:
        assert sum(d["nodes_per_class"]) == d["nodes"]


def test_unconverged_em_is_reported(iris):
    X, y = iris
    m = MODELS["prbf"](n_classes=3, random_state=0, n_components=5, max_iter=1, tol=1e-12)
    m.fit(X, y)
    d = m.diagnostics()
    assert d["em_iterations"] == 1 and d["em_converged"] is False


def test_reading_diagnostics_changes_no_prediction(iris):
    X, y = iris
    a = MODELS["constrained_prbf"](n_classes=3, random_state=1, n_components=4, n_init=2)
    b = MODELS["constrained_prbf"](n_classes=3, random_state=1, n_components=4, n_init=2)
    a.fit(X, y)
    b.fit(X, y)
    a.diagnostics()
    np.testing.assert_array_equal(a.predict_log_proba(X), b.predict_log_proba(X))


def test_class_log_density_adds_up_to_the_em_likelihood(iris):
    """Supervised EM maximises sum_i log p(y_i) + log p(x_i|y_i) (001 eq 6): the class
    densities' log-likelihood plus the log priors is the fit's own loglik_."""
    from alprbf.prbf import PRBF
    X, y = iris
    est = PRBF(n_components=5, random_state=0).fit(X, y)
    ll = est.class_log_density(X, y)
    total = ll.sum() + np.log(est.params_.class_priors)[y.astype(int)].sum()
    assert total == pytest.approx(est.loglik_, rel=1e-12)


def test_one_kernel_density_is_the_gaussian(iris):
    from scipy.stats import multivariate_normal

    X, y = iris
    m = MODELS["prbf"](n_classes=3, random_state=0, n_components=1, reg_covar=1e-3)
    m.fit(X, y)
    cov = np.cov(X.T, bias=True) + 1e-3 * np.eye(X.shape[1])
    ref = multivariate_normal(X.mean(0), cov).logpdf(X).mean()
    assert m.diagnostics()["train_loglik"] == pytest.approx(ref, rel=1e-10)
