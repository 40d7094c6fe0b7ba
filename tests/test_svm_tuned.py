"""SVM baseline of Constantinopoulos & Likas 2006: gamma-then-C line search on inner folds."""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from alprbf.models import MODELS
from alprbf.models.svm_tuned import TunedSVC, line_search
from alprbf.prbf._selection import inner_cv_splits


def _iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_line_search_first_minimum():
    errs = {-1: 0.3, 0: 0.1, 1: 0.1, 2: 0.5}
    best, all_errs = line_search(lambda v: errs[int(np.log2(v))], np.arange(-1, 3))
    assert best == 0
    assert np.allclose(all_errs, [0.3, 0.1, 0.1, 0.5])


def test_selection_matches_brute_force_line_search():
    X, y = _iris()
    est = TunedSVC(gamma_range=(-4, 2), C_range=(-2, 4), inner_folds=5, cv_seed=3).fit(X, y)
    splits = inner_cv_splits(y, 5, 3)

    def err(C, g):
        return np.mean([np.mean(SVC(C=C, gamma=g).fit(X[tr], y[tr]).predict(X[va]) != y[va])
                        for tr, va in splits])

    g_errs = np.array([err(1.0, 2.0 ** s) for s in range(-4, 3)])
    assert np.allclose(est.gamma_errors_, g_errs)
    g = 2.0 ** (-4 + int(np.argmin(g_errs)))
    assert est.gamma_ == g
    c_errs = np.array([err(2.0 ** s, g) for s in range(-2, 5)])
    assert np.allclose(est.C_errors_, c_errs)
    assert est.C_ == 2.0 ** (-2 + int(np.argmin(c_errs)))
    # final model is an ordinary SVC with those hyperparameters
    ref = SVC(C=est.C_, gamma=est.gamma_).fit(X, y)
    assert np.array_equal(est.predict(X), ref.predict(X))
    assert est.n_support_vectors_ == ref.n_support_.sum()
    assert est.tuning_time_ > 0 and est.fit_time_ >= est.tuning_time_
    assert est.score(X, y) > 0.9


def test_inner_splits_are_stratified_and_shared():
    y = np.repeat([0, 1, 2], [30, 20, 10])
    a, b = inner_cv_splits(y, 9, 0), inner_cv_splits(y, 9, 0)
    assert len(a) == 9
    for (tr1, va1), (tr2, va2) in zip(a, b, strict=True):
        assert np.array_equal(va1, va2) and np.array_equal(tr1, tr2)
    val = np.concatenate([va for _, va in a])
    assert np.array_equal(np.sort(val), np.arange(60))
    assert inner_cv_splits(np.array([0]), 9, 0) == []


def test_learner_reports_support_vectors_and_tuning_time():
    X, y = _iris()
    yn = y.astype(float)
    yn[::2] = np.nan
    lrn = MODELS["tuned_svc"](n_classes=3, random_state=0, gamma_range=(-3, 0),
                              C_range=(0, 2), inner_folds=3)
    lrn.fit(X, yn)
    assert lrn.model_size() == lrn.estimator_.svc_.n_support_.sum() > 0
    assert lrn.tuning_time() > 0


def test_probability_option_gives_calibrated_probabilities():
    X, y = _iris()
    est = TunedSVC(gamma_range=(-2, 0), C_range=(0, 1), inner_folds=3, probability=True,
                   random_state=0).fit(X, y)
    P = est.predict_proba(X)
    assert P.shape == (150, 3) and np.allclose(P.sum(1), 1)
    assert len(np.unique(P.round(6))) > 3  # not one-hot
    assert np.mean(P.argmax(1) == y) > 0.9


def test_diagnostics_report_the_line_searches():
    """tuned_svc's diagnostics: the chosen gamma and C are the first minima of the stored
    validation errors, the tie count is the number of minima, edges are flagged."""
    from sklearn.datasets import load_iris

    from alprbf.models import MODELS

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    m = MODELS["tuned_svc"](n_classes=3, random_state=0).fit(X, y.astype(float))
    d = m.diagnostics()
    assert d["searched"]
    for name in ("gamma", "C"):
        s = d[f"{name}_search"]
        errs = np.asarray(s["scores"])
        assert d[name] == s["grid"][int(np.argmin(errs))]
        assert s["tied_optima"] == np.count_nonzero(errs == errs.min())
        assert s["at_edge"] == (d[name] in (s["grid"][0], s["grid"][-1]))
    assert d["at_grid_edge"] == [n for n in ("gamma", "C") if d[f"{n}_search"]["at_edge"]]
    few = np.full(len(y), np.nan)
    few[[0, 50]] = y[[0, 50]]                      # too few labels for the inner folds
    assert MODELS["tuned_svc"](n_classes=3).fit(X, few).diagnostics()["searched"] is False
