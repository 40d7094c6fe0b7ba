"""KernelSVC's search over the categorical weights alpha, beta (Reitmaier et al. 2016, eqs 14-16,
§5.1.2).

Oracle: the same inner CV written out by brute force over every (alpha, beta, gamma, C) with
the Gram matrix of the definition (``rbf_gram``) and sklearn's ``SVC``, ties resolved in the
documented order (alpha, then beta descending; gamma, then C ascending).
"""

import itertools

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from alprbf.svm_kernels.gram import rbf_gram
from alprbf.svm_kernels.svm import WEIGHT_GRID, KernelSVC


def _mixed(seed=0, n=60, n_lab=16):
    """Two continuous columns (weak signal) and two categorical ones (strong signal)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=n)
    cont = rng.normal(size=(n, 2)) + 0.3 * y[:, None]
    cat = np.column_stack([np.where(rng.random(n) < 0.85, y, 1 - y),
                           rng.integers(3, size=n)]).astype(float)
    X = np.column_stack([cont, cat])
    lab = np.concatenate([rng.choice(np.flatnonzero(y == k), n_lab // 2, replace=False)
                          for k in (0, 1)])
    y_obs = np.full(n, np.nan)
    y_obs[lab] = y[lab]
    return X, y, y_obs, np.array([False, False, True, True])


def _brute_force(X, y_obs, mask, weights, gammas, Cs, folds, seed):
    lab = np.flatnonzero(~np.isnan(y_obs))
    y_lab = y_obs[lab].astype(int)
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(lab, y_lab))
    best = None
    pairs = [(a, b) for a in sorted(weights, reverse=True) for b in sorted(weights, reverse=True)
             if a + b > 0]
    for (a, b), g, c in itertools.product(pairs, sorted(gammas), sorted(Cs)):
        K = rbf_gram(X[lab], gamma=g, categorical=mask, alpha=a, beta=b)
        errs = []
        for tr, va in splits:
            svc = SVC(kernel="precomputed", C=c).fit(K[np.ix_(tr, tr)], y_lab[tr])
            errs.append(np.mean(svc.predict(K[np.ix_(va, tr)]) != y_lab[va]))
        err = float(np.mean(errs))
        if best is None or err < best[-1] - 1e-12:
            best = (a, b, g, c, err)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weight_search_equals_brute_force(seed):
    X, _, y_obs, mask = _mixed(seed)
    grid = dict(weight_grid=(0.0, 0.5, 1.0), gamma_grid=(0.1, 1.0), C_grid=(1.0, 10.0))
    est = KernelSVC(kernel="rbf", alpha=None, beta=None, categorical=mask, random_state=seed,
                    **grid).fit(X, y_obs)
    a, b, g, c, err = _brute_force(X, y_obs, mask, grid["weight_grid"], grid["gamma_grid"],
                                   grid["C_grid"], 4, seed)
    assert (est.alpha_, est.beta_, est.gamma_, est.C_) == (a, b, g, c)
    assert est.cv_error_ == pytest.approx(err, abs=1e-12)
    # the fitted SVM uses the chosen weights
    lab = np.flatnonzero(~np.isnan(y_obs))
    K = rbf_gram(X, X[lab], gamma=g, categorical=mask, alpha=a, beta=b)
    ref = SVC(kernel="precomputed", C=c, decision_function_shape="ovr").fit(
        K[lab], y_obs[lab].astype(int))
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(K), atol=1e-9)


def test_one_weight_searched_the_other_fixed():
    X, _, y_obs, mask = _mixed(3)
    est = KernelSVC(kernel="rbf", alpha=1.0, beta=None, categorical=mask, random_state=0,
                    weight_grid=(0.0, 0.5, 1.0), gamma_grid=(0.1, 1.0),
                    C_grid=(1.0,)).fit(X, y_obs)
    assert est.alpha_ == 1.0 and est.beta_ in (0.0, 0.5, 1.0)
    assert [p[:2] for p in est._points()][::2] == [(1.0, 1.0), (1.0, 0.5), (1.0, 0.0)]


def test_without_categorical_columns_a_none_weight_is_one_and_nothing_changes():
    X, _, y_obs, _ = _mixed(4)
    X = X[:, :2]
    searched = KernelSVC(kernel="rbf", alpha=None, beta=None, random_state=0).fit(X, y_obs)
    default = KernelSVC(kernel="rbf", random_state=0).fit(X, y_obs)
    assert (searched.alpha_, searched.beta_) == (1.0, 1.0)
    assert (searched.gamma_, searched.C_) == (default.gamma_, default.C_)
    np.testing.assert_array_equal(searched.decision_function(X), default.decision_function(X))


def test_skipped_search_uses_the_unweighted_kernel():
    X, _, y_obs, mask = _mixed(5)
    zeros = np.flatnonzero(y_obs == 0)
    y_obs[zeros[1:]] = np.nan                     # one row of class 0 left: no inner CV
    est = KernelSVC(kernel="rbf", alpha=None, beta=None, categorical=mask).fit(X, y_obs)
    assert np.isnan(est.cv_error_) and (est.alpha_, est.beta_) == (1.0, 1.0)


def test_weights_are_kept_by_later_fits_of_the_task():
    X, _, y_obs, mask = _mixed(6)
    kw = dict(kernel="rwm", alpha=None, beta=None, categorical=mask, random_state=0,
              weight_grid=(0.0, 1.0), gamma_grid=(0.1, 1.0), C_grid=(1.0,), n_components=3)
    first = KernelSVC(**kw).fit(X, y_obs)
    more = y_obs.copy()
    more[np.flatnonzero(np.isnan(y_obs))[:5]] = 0
    second = KernelSVC(**kw).fit(X, more, previous=first)
    assert (second.alpha_, second.beta_) == (first.alpha_, first.beta_)


def test_lap_weight_search_keeps_only_the_chosen_deformations():
    X, _, y_obs, mask = _mixed(7)
    est = KernelSVC(kernel="lap", alpha=None, beta=None, categorical=mask, random_state=0,
                    weight_grid=(0.0, 0.5, 1.0), gamma_grid=(0.1, 1.0), gamma_I_grid=(1.0,),
                    gamma_A_grid=(1.0,)).fit(X, y_obs)
    assert {k[1:] for k in est._deformations} == {(est.alpha_, est.beta_)}
    assert len(est._deformations) <= 2
    assert np.isfinite(est.decision_function(X)).all()


def test_paper_grid_is_zero_to_one_in_tenths():
    assert WEIGHT_GRID == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    _, _, _, mask = _mixed()
    pairs = {p[:2] for p in KernelSVC(alpha=None, beta=None, categorical=mask)._points()}
    assert len(pairs) == 120 and (0.0, 0.0) not in pairs


@pytest.mark.parametrize("kw, message", [
    (dict(alpha=None, beta=None, weight_grid=(0.0,)), "weight_grid"),
    (dict(alpha=0.0, beta=None, weight_grid=(0.0,)), "weight_grid"),
    (dict(alpha=None, weight_grid=(-0.1, 1.0)), "weight_grid"),
    (dict(alpha=None, weight_grid=()), "weight_grid"),
    (dict(alpha=0.0, beta=0.0), "alpha \\+ beta"),
])
def test_bad_weights_are_refused(kw, message):
    X, _, y_obs, mask = _mixed()
    with pytest.raises(ValueError, match=message):
        KernelSVC(kernel="rbf", categorical=mask, **kw).fit(X, y_obs)
