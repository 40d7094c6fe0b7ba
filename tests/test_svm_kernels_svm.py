"""KernelSVC: the SVM on structure-aware kernels (alprbf/svm_kernels/svm.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.strategies.svm import svm_margin
from alprbf.svm_kernels.svm import KernelSVC

SMALL = {"C_grid": (1.0, 10.0), "gamma_grid": (0.1, 1.0), "n_components": 4}


def _data(seed=0, labeled=30):
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(seed)
    y_obs = np.full(len(y), np.nan)
    show = rng.choice(len(y), labeled, replace=False)
    y_obs[show] = y[show]
    return X, y, y_obs


@pytest.mark.parametrize("kernel", ["rbf", "rwm", "gmm", "lap"])
def test_every_kernel_gives_consistent_finite_outputs(kernel):
    X, y, y_obs = _data()
    m = KernelSVC(kernel=kernel, random_state=0, **SMALL).fit(X, y_obs)
    P = m.predict_proba(X)
    assert P.shape == (150, 3) and np.all(np.isfinite(P))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    f = m.scores(X)
    np.testing.assert_array_equal(m.decision_function(X), f)      # three classes: (n, K)
    np.testing.assert_array_equal(m.predict(X), m.classes_[np.argmax(f, axis=1)])
    np.testing.assert_array_equal(np.argmax(P, axis=1), np.argmax(f, axis=1))
    top = np.sort(f, axis=1)
    scores, pairwise = m.decision_values(X)
    np.testing.assert_allclose(svm_margin(scores, pairwise, rule="gap"), top[:, -1] - top[:, -2])
    assert np.mean(m.predict(X) == y) > 0.8


def test_fixed_rbf_equals_sklearn_svc():
    X, y, y_obs = _data(1)
    lab = ~np.isnan(y_obs)
    m = KernelSVC(kernel="rbf", C=3.0, gamma=0.5).fit(X, y_obs)
    ref = SVC(kernel="rbf", C=3.0, gamma=0.5, decision_function_shape="ovr")
    ref.fit(X[lab], y_obs[lab].astype(int))
    # same problem; the two libsvm runs differ only within the solver's tolerance (1e-3)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), atol=1e-3)
    np.testing.assert_array_equal(m.predict(X), np.argmax(ref.decision_function(X), axis=1))
    assert np.isnan(m.cv_error_) and m.C_ == 3.0 and m.gamma_ == 0.5


def test_tuning_is_the_best_grid_point_by_inner_cv():
    from sklearn.model_selection import StratifiedKFold

    X, y, y_obs = _data(2, labeled=40)
    m = KernelSVC(kernel="rbf", random_state=3, **SMALL).fit(X, y_obs)
    lab = np.flatnonzero(~np.isnan(y_obs))
    yl = y_obs[lab].astype(int)
    folds = list(StratifiedKFold(4, shuffle=True, random_state=3).split(lab, yl))
    errs = {}
    for g in SMALL["gamma_grid"]:
        for c in SMALL["C_grid"]:
            e = [np.mean(SVC(C=c, gamma=g).fit(X[lab[tr]], yl[tr]).predict(X[lab[va]])
                         != yl[va]) for tr, va in folds]
            errs[(g, c)] = np.mean(e)
    best = min(errs.values())
    first = next(k for k, v in errs.items() if v <= best + 1e-12)
    assert (m.gamma_, m.C_) == first and m.cv_error_ == pytest.approx(best)


def test_warm_fit_reuses_the_density_and_the_tuned_values():
    X, y, y_obs = _data(3)
    first = KernelSVC(kernel="rwm", random_state=0, **SMALL).fit(X, y_obs)
    y2 = y_obs.copy()
    pool = np.flatnonzero(np.isnan(y2))
    y2[pool[:5]] = y[pool[:5]]
    warm = KernelSVC(kernel="rwm", random_state=0, **SMALL).fit(X, y2, previous=first)
    assert warm.density_ is first.density_ and (warm.C_, warm.gamma_) == (first.C_, first.gamma_)
    cold = KernelSVC(kernel="rwm", random_state=0, **SMALL).fit(X, y2)
    assert cold.density_ is not first.density_


@pytest.mark.parametrize("case", ["one_per_class", "duplicates", "constant", "wide",
                                  "categorical_only"])
@pytest.mark.parametrize("kernel", ["rbf", "rwm", "gmm", "lap"])
def test_edge_cases_stay_finite(case, kernel):
    rng = np.random.default_rng(0)
    X, y, y_obs = _data(4)
    categorical = None
    if case == "one_per_class":
        y_obs = np.full(len(y), np.nan)
        for k in range(3):
            y_obs[np.flatnonzero(y == k)[0]] = k
    elif case == "duplicates":
        X = np.repeat(X[:50], 3, axis=0)
        y, y_obs = np.repeat(y[:50], 3), np.repeat(y_obs[:50], 3)
    elif case == "constant":
        X = np.column_stack([X, np.ones(len(X))])
    elif case == "wide":
        X = np.column_stack([X, rng.normal(size=(len(X), 40))])
    else:
        X = rng.integers(0, 3, size=(len(X), 3)).astype(float)
        X[:, 0] = y
        categorical = [True, True, True]
    if np.all(np.isnan(y_obs[~np.isnan(y_obs)])):
        pytest.fail("no label")
    m = KernelSVC(kernel=kernel, categorical=categorical, random_state=0, **SMALL)
    P = m.fit(X, y_obs).predict_proba(X)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1.0)


@pytest.mark.parametrize("params,word", [
    ({"gamma": -1.0}, "gamma"), ({"kernel": "rwn"}, "did you mean 'rwm'"),
    ({"alpha": 0.0, "beta": 0.0}, "alpha + beta"), ({"C_grid": []}, "C_grid")])
def test_bad_parameters_are_one_line_errors(tmp_path, params, word):
    with pytest.raises(ValueError, match=re.escape(word.split("'")[0])):
        KernelSVC(**params).validate_params()
    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "bad", "dataset": "iris", "model": {"name": "kernel_svm", "params": params},
        "protocol": {"folds": 2, "initial": {"method": "random", "size": 6}, "budget": 2}}))
    result = CliRunner().invoke(app, ["validate", str(cfg)])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert word in result.stderr


def test_a_graph_with_more_neighbours_than_rows_is_refused():
    X, y, y_obs = _data(5)
    with pytest.raises(ValueError, match="n_neighbors"):
        KernelSVC(kernel="lap", n_neighbors=200, **SMALL).fit(X, y_obs)


def test_binary_decision_function_is_sklearns_convention():
    X, y, y_obs = _data(6, labeled=40)
    keep = y < 2
    m = KernelSVC(kernel="rwm", random_state=0, **SMALL).fit(X[keep], y_obs[keep])
    d = m.decision_function(X[keep])
    assert d.shape == (keep.sum(),)
    np.testing.assert_array_equal(m.predict(X[keep]), m.classes_[(d > 0).astype(int)])


@pytest.mark.parametrize("kernel", ["rwm", "gmm", "rbf"])
def test_smallest_eigenvalue_of_the_training_gram_is_kept_and_logged(kernel, caplog):
    from alprbf.svm_kernels.gram import smallest_eigenvalue

    X, y, y_obs = _data(6)
    with caplog.at_level("DEBUG", logger="alprbf.svm_kernels.svm"):
        m = KernelSVC(kernel=kernel, C=1.0, gamma=1.0, n_components=4, random_state=0)
        m.fit(X, y_obs)
    if kernel == "rbf":                       # positive semi-definite: not measured
        assert np.isnan(m.gram_min_eigenvalue_) and not caplog.records
        return
    K = m._gram(m.labeled_, m.labeled_)
    assert m.gram_min_eigenvalue_ == smallest_eigenvalue(K)
    assert any("smallest eigenvalue" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kernel", ["rwm", "gmm"])
def test_refine_makes_the_kernel_follow_the_revised_density(kernel):
    """refine=True: the kernel uses refine_density(M0, X, labels) (Reitmaier et al. 2016, Alg. 1
    lines 14-15); the pool's model stays density_; a warm refit equals a cold one."""
    from alprbf.svm_kernels.density import DensityOptions, covariance_of, responsibilities
    from alprbf.svm_kernels.gram import gmm_gram, rwm_gram
    from alprbf.svm_kernels.refinement import refine_density

    X, y, y_obs = _data(7, labeled=40)
    params = dict(kernel=kernel, C=1.0, gamma=0.5, n_components=6, random_state=0)
    plain = KernelSVC(**params).fit(X, y_obs)
    assert plain.kernel_density_ is plain.density_
    m = KernelSVC(**params, refine=True).fit(X, y_obs)
    codes = np.where(np.isnan(y_obs), -1, y_obs).astype(int)
    expected = refine_density(m.density_, X, codes, 3, n_neighbors=5,
                              options=DensityOptions(n_components=6),
                              covariance_prior=covariance_of(X), random_state=0).density
    assert m.kernel_density_.n_components == expected.n_components
    np.testing.assert_array_equal(m.kernel_density_.precisions_cholesky,
                                  expected.precisions_cholesky)
    resp = responsibilities(expected, X)
    np.testing.assert_array_equal(m.resp_, resp)
    lab = m.labeled_
    f = rwm_gram if kernel == "rwm" else gmm_gram
    K = f(X[lab], resp_X=resp[lab], precisions_cholesky=expected.precisions_cholesky,
          gamma=0.5)
    np.testing.assert_allclose(m._gram(lab, lab), K, atol=1e-12)
    # warm (density reused, refinement redone with the new labels) == cold
    y2 = y_obs.copy()
    pool = np.flatnonzero(np.isnan(y2))
    y2[pool[:6]] = y[pool[:6]]
    warm = KernelSVC(**params, refine=True).fit(X, y2, previous=m)
    cold = KernelSVC(**params, refine=True).fit(X, y2)
    assert warm.density_ is m.density_
    np.testing.assert_array_equal(warm.scores(X), cold.scores(X))
    with pytest.raises(ValueError, match="refine"):
        KernelSVC(refine="yes").validate_params()
