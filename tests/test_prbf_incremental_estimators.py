"""Incremental PRBF-split estimators and 001's model-selection protocol."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis

from alprbf.prbf._data import prepare_data
from alprbf.prbf._estep import e_step
from alprbf.prbf._predict import predict_log_proba
from alprbf.prbf._selection import inner_cv_splits
from alprbf.prbf.estimators import PRBFSplit
from alprbf.prbf.incremental import (
    IncrementalPRBFSplit,
    SelectedIncrementalPRBFSplit,
    SelectedPRBFSplit,
    incremental_path,
)
from tests.prbf_data import overlap_blobs, standardized


@pytest.mark.parametrize("loader,ct", [(overlap_blobs, "full"), (overlap_blobs, "diag"),
                                       (overlap_blobs, "spherical"), (load_iris, "full"),
                                       (load_wine, "full")])
def test_likelihood_never_drops_after_addition_and_em(loader, ct):
    X, y = overlap_blobs() if loader is overlap_blobs else standardized(loader)
    path = incremental_path(X, y, 3, max_components=8, covariance_type=ct)
    ll = np.array(path.logliks)
    assert path.n_models >= (3 if loader is overlap_blobs else 2)
    assert np.all(np.diff(ll) >= 0)
    # each PRBF(m) has m components, the split networks have at least as many
    assert [p.n_components for p in path.networks] == list(range(1, path.n_models + 1))
    assert all(s.n_components >= p.n_components
               for s, p in zip(path.splits, path.networks, strict=True))
    # split never lowers the class-conditional likelihood (001 §II.B), up to reg_covar
    data = prepare_data(X, y, 3, ct)
    for p, s in zip(path.networks, path.splits, strict=True):
        assert e_step(data, s).loglik_labeled >= e_step(data, p).loglik_labeled - 1e-6 * len(X)


def test_first_model_is_one_component_and_stop_reasons():
    X, y = standardized()
    path = incremental_path(X, y, 3, max_components=1)
    assert path.n_models == 1 and path.stopped == "max_components"
    assert np.allclose(path.networks[0].means[0], X.mean(0))
    path = incremental_path(X, y, 3, max_components=30, covariance_type="diag", add_threshold=1e9)
    assert path.n_models == 1 and path.stopped == "no_candidate"
    assert path.additions[0].n_candidates == 14 and not path.additions[0].added


def test_predict_with_any_intermediate_m():
    X, y = overlap_blobs()
    est = IncrementalPRBFSplit(max_components=5, covariance_type="full").fit(X, y)
    assert est.n_components_ == est.n_models_ == 5
    lp = est.path_log_proba(X)
    assert lp.shape == (5, 300, 3)
    for m in range(1, 6):
        assert np.allclose(est.predict_log_proba(X, n_components=m), lp[m - 1])
        assert np.allclose(lp[m - 1], predict_log_proba(X, est.path_.splits[m - 1]))
    est2 = IncrementalPRBFSplit(max_components=5, covariance_type="full", select=2).fit(X, y)
    assert est2.n_components_ == 2
    assert np.array_equal(est2.predict(X), est.predict(X, n_components=2))
    assert np.allclose(est.predict_proba(X).sum(1), 1)
    # the five-node network fits the five blobs better than one Gaussian per class (QDA)
    assert est.score(X, y) > QuadraticDiscriminantAnalysis().fit(X, y).score(X, y) + 0.03


def test_selected_incremental_matches_manual_inner_cv():
    X, y = standardized()
    sel = SelectedIncrementalPRBFSplit(max_components=4, covariance_types=("spherical", "diag"),
                                       inner_folds=3, cv_seed=1).fit(X, y)
    for ct in ("spherical", "diag"):
        rows = []
        for tr, va in inner_cv_splits(y, 3, 1):
            e = IncrementalPRBFSplit(max_components=4, covariance_type=ct).fit(X[tr], y[tr])
            errs = [np.mean(e.predict(X[va], n_components=m) != y[va]) for m in range(1, 5)]
            rows.append(errs)
        assert np.allclose(sel.cv_errors_[ct], np.mean(rows, axis=0))
    best = min(((sel.cv_errors_[ct][m - 1], m, i, ct) for i, ct in
                enumerate(("spherical", "diag")) for m in range(1, 5)))
    assert (sel.covariance_type_, sel.selected_m_) == (best[3], best[1])
    ref = IncrementalPRBFSplit(max_components=best[1], covariance_type=best[3]).fit(X, y)
    assert np.array_equal(sel.predict(X), ref.predict(X))
    assert sel.fit_time_ >= sel.selection_time_ > 0


def test_selected_prbf_split_matches_manual_inner_cv():
    X, y = standardized()
    sel = SelectedPRBFSplit(max_components=3, m_grid=[1, 3], covariance_types=("diag",),
                            inner_folds=3, n_init=2, random_state=0).fit(X, y)
    errs = np.full(3, np.inf)
    for m in (1, 3):
        e = []
        for tr, va in inner_cv_splits(y, 3, 0):
            est = PRBFSplit(n_components=m, covariance_type="diag", n_init=2,
                            random_state=0).fit(X[tr], y[tr])
            e.append(np.mean(est.predict(X[va]) != y[va]))
        errs[m - 1] = np.mean(e)
    assert np.allclose(sel.cv_errors_["diag"], errs)
    assert sel.selected_m_ == (1 if errs[0] <= errs[2] else 3)
    ref = PRBFSplit(n_components=sel.selected_m_, covariance_type="diag", n_init=2,
                    random_state=0).fit(X, y)
    assert np.array_equal(sel.predict(X), ref.predict(X))


@pytest.mark.parametrize("init", ["kmeans", "random_from_data"])
def test_selected_prbf_split_passes_its_initialisation_to_every_fit(init):
    X, y = standardized()
    sel = SelectedPRBFSplit(max_components=2, covariance_types=("diag",), inner_folds=3,
                            n_init=2, init_params=init, random_state=0).fit(X, y)
    ref = PRBFSplit(n_components=sel.selected_m_, covariance_type="diag", n_init=2,
                    init_params=init, random_state=0).fit(X, y)
    assert np.array_equal(sel.predict_proba(X), ref.predict_proba(X))


def test_bad_parameters_are_value_errors():
    X, y = standardized()
    with pytest.raises(ValueError, match="covariance_type"):
        IncrementalPRBFSplit(covariance_type="ful").fit(X, y)
    with pytest.raises(ValueError, match="covariance_types"):
        SelectedIncrementalPRBFSplit(covariance_types=("full", "bad")).fit(X, y)
    with pytest.raises(ValueError, match="m_grid"):
        SelectedPRBFSplit(max_components=3, m_grid=[5]).fit(X, y)
    with pytest.raises(ValueError, match="init_params"):
        SelectedPRBFSplit(init_params="kmean").fit(X, y)
