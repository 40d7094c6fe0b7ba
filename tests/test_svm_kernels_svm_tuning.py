"""KernelSVC's tuning when the first labeled set cannot hold an inner CV (one row of a class)."""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from alprbf.svm_kernels.svm import (
    KernelSVC,
    binomial_se,
    determined_svc_predict,
    precomputed_svc_predict,
)


def _iris_labels(per_class):
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    lab = np.concatenate([rng.choice(np.flatnonzero(y == k), n, replace=False)
                          for k, n in enumerate(per_class)])
    y_obs = np.full(len(y), np.nan)
    y_obs[lab] = y[lab]
    return X, y, y_obs


def test_skipped_search_uses_the_documented_defaults_and_is_tried_again():
    X, y, y_obs = _iris_labels([1, 7, 4])            # one row of class 0: no inner CV
    first = KernelSVC(kernel="rbf", random_state=0).fit(X, y_obs)
    assert first.C_ == 1.0 and first.gamma_ == 1.0 / X.shape[1]
    assert np.isnan(first.cv_error_)
    _, _, more = _iris_labels([4, 7, 4])             # later: two or more rows of each class
    second = KernelSVC(kernel="rbf", random_state=0).fit(X, more, previous=first)
    assert np.isfinite(second.cv_error_)              # the search ran this time
    third = KernelSVC(kernel="rbf", random_state=0).fit(X, more, previous=second)
    assert (third.C_, third.gamma_) == (second.C_, second.gamma_)   # and is kept afterwards
    assert np.mean(third.predict(X) == y) > 0.8


def test_lap_ties_go_to_the_most_regularised_point():
    # two far-apart blobs: every (gamma_I, gamma_A) of the grid separates the labeled rows in
    # every inner fold, so all tie at CV error 0 and the documented rule decides: the largest
    # gamma_I, then the largest gamma_A (the smallest C = 1 / (2 gamma_A l))
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(-4.0, 0.5, (60, 2)), rng.normal(4.0, 0.5, (60, 2))])
    y = np.repeat([0, 1], 60)
    y_obs = np.full(len(y), np.nan)
    lab = np.concatenate([rng.choice(60, 20, replace=False),
                          60 + rng.choice(60, 20, replace=False)])
    y_obs[lab] = y[lab]
    m = KernelSVC(kernel="lap", gamma_grid=(0.5,), gamma_I_grid=(0.1, 1.0),
                  gamma_A_grid=(1e-3, 1e-2), n_neighbors=5, random_state=0).fit(X, y_obs)
    assert m.cv_error_ == 0.0
    assert (m.gamma_I_, m.gamma_A_) == (1.0, 1e-2)
    assert m.C_ == pytest.approx(1.0 / (2 * 1e-2 * 40))
    assert np.mean(m.predict(X) == y) == 1.0


def test_lap_default_grid_is_the_papers():
    # Reitmaier et al. 2016, §5.1.2: gamma_I, gamma_A = 10^j, j printed as {-5, -6, ..., 2}:
    # read -6 .. 2
    m = KernelSVC(kernel="lap")
    for grid in (m.gamma_I_grid, m.gamma_A_grid):
        assert sorted(grid) == pytest.approx([10.0 ** j for j in range(-6, 3)], rel=1e-15)


def _kernel_case(rng, n, m, n_classes, indefinite):
    X = rng.normal(size=(n + m, 3))
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-0.5 * d2)
    if indefinite:                     # like an RWM Gram matrix with a negative eigenvalue
        K = K - 0.3 * np.exp(-0.05 * d2)
    codes = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)])
    return K[:n, :n], codes, K[n:, :n]


@pytest.mark.parametrize("seed", range(12))
def test_direct_libsvm_predicts_what_svc_predicts(seed):
    # the inner CV's shortcut makes SVC's own libsvm calls: its predictions are SVC's, for
    # two to five classes, tiny and larger training sets, C over the grid, indefinite kernels
    from sklearn.svm import SVC

    from alprbf.svm_kernels.svm import precomputed_svc_predict
    rng = np.random.default_rng(seed)
    n_classes = 2 + seed % 4
    n = [n_classes, 6, 30, 80][seed % 4] + n_classes
    K_train, codes, K_test = _kernel_case(rng, n, 50, n_classes, indefinite=seed % 3 == 0)
    for C in (1e-3, 1e-1, 1.0, 1e2, 5e5):
        ours = precomputed_svc_predict(K_train, codes, K_test, C)
        svc = SVC(kernel="precomputed", C=C).fit(K_train, codes)
        np.testing.assert_array_equal(ours, svc.predict(K_test))
        assert ours.dtype.kind == "i" and ours.shape == (50,)


def test_direct_libsvm_refuses_a_non_finite_kernel():
    from alprbf.svm_kernels.svm import precomputed_svc_predict
    K_train, codes, K_test = _kernel_case(np.random.default_rng(0), 8, 3, 2, False)
    K_train[0, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        precomputed_svc_predict(K_train, codes, K_test, 1.0)


@pytest.mark.slow
def test_direct_libsvm_is_silent():
    # libsvm prints every optimisation unless told not to (SVC tells it on every fit); its C
    # output reaches the process's stdout, so run it in a fresh process and read that
    import subprocess
    import sys
    code = ("import numpy as np; from alprbf.svm_kernels.svm import precomputed_svc_predict as p; "
            "K = np.eye(4) + 0.1; print(p(K, np.array([0, 0, 1, 1]), K, 1.0).tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out == "[0, 0, 1, 1]\n"


def test_lap_pickles_without_its_deformations_and_resumes_identically():
    # a checkpoint carries a LAP model without its N x N deformations; the restored model
    # rebuilds them and predicts, and fits on, exactly as the original
    import pickle
    X, y, y_obs = _iris_labels([4, 4, 4])
    model = KernelSVC(kernel="lap", random_state=0).fit(X, y_obs)
    before = model.decision_values(X)
    blob = pickle.dumps(model)
    assert len(blob) < 10 * X.nbytes + 100_000          # no N x N matrix in it
    assert len(pickle.dumps(model.__dict__)) > 3 * 150 * 150 * 8   # ... which the live model has
    restored = pickle.loads(blob)
    for a, b in zip(restored.decision_values(X), before, strict=True):
        np.testing.assert_array_equal(a, b)
    _, _, more = _iris_labels([6, 5, 7])
    more[np.flatnonzero(~np.isnan(y_obs))] = y_obs[~np.isnan(y_obs)]
    go_on = KernelSVC(kernel="lap", random_state=0).fit(X, more, previous=model)
    go_on_restored = KernelSVC(kernel="lap", random_state=0).fit(X, more, previous=restored)
    np.testing.assert_array_equal(go_on.scores(X), go_on_restored.scores(X))


def test_lap_keeps_only_the_chosen_deformation():
    # the search builds one deformation per base-kernel gamma (6 here); the fitted model
    # keeps the chosen one (that the drop changes no result is checked by check-record)
    X, y, y_obs = _iris_labels([4, 4, 4])
    model = KernelSVC(kernel="lap", random_state=0).fit(X, y_obs)
    assert list(model._deformations) == [(model.gamma_, model.alpha_, model.beta_)]


def test_diagnostics_report_the_chosen_values_and_the_grid_without_changing_the_fit():
    X, y, y_obs = _iris_labels([4, 4, 4])
    m = KernelSVC(kernel="rwm", random_state=0).fit(X, y_obs)
    before = m.decision_function(X)
    d = m.diagnostics()
    assert (d["C"], d["gamma"]) == (m.C_, m.gamma_)
    errors = np.asarray(d["grid"]["errors"])
    assert len(errors) == len(d["grid"]["axes"]["gamma"]) * len(d["grid"]["axes"]["C"])
    assert d["n_tied"] == int(np.sum(m.tuning_errors_ <= m.tuning_errors_.min() + 1e-12)) >= 1
    assert errors.min() == pytest.approx(m.cv_error_, abs=1e-4)
    assert d["density"]["J"] == m.density_.n_components
    assert isinstance(d["density"]["converged"], bool)
    axes = d["grid"]["axes"]
    assert d["at_grid_edge"] == [n for n in axes if d[n] in (min(axes[n]), max(axes[n]))]
    np.testing.assert_array_equal(m.decision_function(X), before)
    skipped = KernelSVC(kernel="rbf", random_state=0).fit(X, _iris_labels([1, 7, 4])[2])
    assert skipped.diagnostics()["cv_error"] is None and "grid" not in skipped.diagnostics()


def test_the_tuning_part_of_the_diagnostics_is_computed_once_and_kept_by_later_fits():
    # the loop asks for the diagnostics at every evaluation; the grid part is the tuning's
    # alone, kept with it by later fits: the same JSON as a fresh computation, and computed once
    import json
    X, _, y_obs = _iris_labels([4, 4, 4])
    kw = dict(kernel="lap", gamma_grid=(0.25, 1.0), gamma_I_grid=(0.1, 10.0),
              gamma_A_grid=(1e-3, 1e-2), tie_tolerance="one_se", random_state=0)
    first = KernelSVC(**kw).fit(X, y_obs)
    summary = first._grid_summary()              # as the loop's first evaluation asks
    more = y_obs.copy()
    more[np.flatnonzero(np.isnan(y_obs))[:5]] = _iris_labels([4, 4, 4])[1][
        np.flatnonzero(np.isnan(y_obs))[:5]]
    later = KernelSVC(**kw).fit(X, more, previous=first)
    kept = later.diagnostics()
    assert later._grid_summary() is summary      # not computed again
    del later.__dict__["_grid_summary_memo"]
    fresh = later.diagnostics()
    assert json.dumps(kept, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    assert kept["grid"]["axes"] == {"gamma": [0.25, 1.0], "gamma_I": [0.1, 10.0],
                                    "gamma_A": [0.001, 0.01]}
    assert kept["n_tied"] >= 1 and "tie_band" in kept and "at_grid_edge" in kept
    retuned = KernelSVC(retune=True, **kw).fit(X, more, previous=first)
    assert retuned._grid_summary() is not summary


def _two_blobs(per_class=6):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(-4.0, 0.5, (60, 2)), rng.normal(4.0, 0.5, (60, 2))])
    y = np.repeat([0, 1], 60)
    y_obs = np.full(len(y), np.nan)
    lab = np.concatenate([rng.choice(60, per_class, replace=False),
                          60 + rng.choice(60, per_class, replace=False)])
    y_obs[lab] = y[lab]
    return X, y, y_obs


def test_default_closest_tie_rule_picks_c_1_and_gamma_near_1_over_d():
    X, _, y_obs = _two_blobs()
    first = KernelSVC(kernel="rbf", random_state=0).fit(X, y_obs)
    closest = KernelSVC(kernel="rbf", tie_rule="default_closest", random_state=0).fit(X, y_obs)
    assert first.diagnostics()["n_tied"] > 1                  # the blobs tie many points
    assert (first.C_, first.gamma_) != (closest.C_, closest.gamma_)
    assert (closest.C_, closest.gamma_) == (1.0, 1.0)          # log10(gamma d): 1 -> 0.3
    assert closest.cv_error_ == first.cv_error_


def test_expected_error_on_the_pool_joins_the_validation_error():
    X, y, y_obs = _two_blobs()
    val = KernelSVC(kernel="rbf", random_state=0).fit(X, y_obs)
    both = KernelSVC(kernel="rbf", tuning_score="validation_expected",
                     random_state=0).fit(X, y_obs)
    assert np.all(both.tuning_errors_ >= val.tuning_errors_ - 1e-12)
    assert np.any(both.tuning_errors_ > val.tuning_errors_ + 1e-3)
    # the nearly constant kernel (gamma 1e-3) with C 1e-3 predicts one class on the pool: its
    # expected error is the share of the other class in the labeled set (0.5)
    assert both.tuning_errors_[0] - val.tuning_errors_[0] == pytest.approx(0.5)
    assert np.mean(both.predict(X) == y) == 1.0


def test_tie_rules_pick_first_largest_centre_and_default_among_the_same_tied_set():
    X, _, y_obs = _two_blobs()
    fits = {rule: KernelSVC(kernel="rbf", tie_rule=rule, random_state=0).fit(X, y_obs)
            for rule in ("first", "largest", "grid_centre", "default_closest")}
    errors = fits["first"].tuning_errors_
    tied = [p for p, e in zip(fits["first"].tuning_points_, errors, strict=True)
            if e <= errors.min() + 1e-12]
    chosen = {rule: (m.gamma_, m.C_) for rule, m in fits.items()}
    assert chosen["first"] == (tied[0][2], tied[0][5])
    assert chosen["largest"] == (tied[-1][2], tied[-1][5])
    assert chosen["default_closest"] == (1.0, 1.0)
    centre = fits["grid_centre"]._grid_centre_distance(fits["grid_centre"].tuning_points_)
    assert min(centre(p) for p in tied) == centre(next(
        p for p in tied if (p[2], p[5]) == chosen["grid_centre"]))
    # the centre of 10^{-3..2} is 10^-0.5: 0.1 and 1 are equally far, the first (0.1) wins
    assert centre((1, 1, 0.1, np.nan, np.nan, 0.1)) == centre((1, 1, 1.0, np.nan, np.nan, 1.0))
    assert len(set(chosen.values())) == 4
    assert all(m.cv_error_ == fits["first"].cv_error_ for m in fits.values())


def test_one_se_tolerance_widens_the_tied_set_by_the_best_points_standard_error():
    rng = np.random.default_rng(4)                   # overlapping blobs, 4 labels per class
    X = np.vstack([rng.normal(-0.6, 1, (60, 2)), rng.normal(0.6, 1, (60, 2))])
    y_obs = np.full(120, np.nan)
    lab = np.r_[rng.choice(60, 4, replace=False), 60 + rng.choice(60, 4, replace=False)]
    y_obs[lab] = np.repeat([0, 1], 60)[lab]
    exact = KernelSVC(kernel="rbf", tie_rule="default_closest", random_state=0).fit(X, y_obs)
    wide = KernelSVC(kernel="rbf", tie_rule="default_closest", tie_tolerance="one_se",
                     random_state=0).fit(X, y_obs)
    errors = wide.tuning_errors_
    band = wide.diagnostics()["tie_band"]
    assert band == pytest.approx(0.125)              # per-fold errors 0, 0, 0, 0.5 at the best
    assert wide.diagnostics()["n_tied"] == int(np.sum(errors <= errors.min() + band))
    assert wide.diagnostics()["n_tied"] > exact.diagnostics()["n_tied"]
    assert (exact.gamma_, exact.C_) == (0.01, 10.0) and (wide.gamma_, wide.C_) == (1.0, 1.0)
    assert wide.cv_error_ == pytest.approx(errors.min() + band)    # the chosen point's score
    assert "tie_band" not in exact.diagnostics()


def test_binomial_se_is_the_rule_of_succession_standard_error():
    # hand-worked: 0 of 8 wrong -> p = 1/10, sqrt(0.1 * 0.9 / 8); 1 of 8 -> p = 2/10
    assert binomial_se(0, 8) == pytest.approx(np.sqrt(0.09 / 8))
    assert binomial_se(1, 8) == pytest.approx(np.sqrt(0.16 / 8))
    assert binomial_se(8, 8) == pytest.approx(binomial_se(0, 8))     # all wrong: symmetric
    assert binomial_se(0, 44) < binomial_se(0, 12) < binomial_se(0, 8)


def test_one_se_binomial_band_is_never_narrower_than_the_binomial_se_of_the_best_point():
    # overlapping blobs: the best point's per-fold errors are 0, 0, 0, 0.5 (one of 8 rows
    # wrong): the one-SE band is 0.125, the binomial one sqrt(0.2 * 0.8 / 8) = 0.141
    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal(-0.6, 1, (60, 2)), rng.normal(0.6, 1, (60, 2))])
    y_obs = np.full(120, np.nan)
    lab = np.r_[rng.choice(60, 4, replace=False), 60 + rng.choice(60, 4, replace=False)]
    y_obs[lab] = np.repeat([0, 1], 60)[lab]
    fits = {tol: KernelSVC(kernel="rbf", tie_rule="default_closest", tie_tolerance=tol,
                           random_state=0).fit(X, y_obs) for tol in ("one_se", "one_se_binomial")}
    assert fits["one_se"].tie_band_ == pytest.approx(0.125)
    assert fits["one_se_binomial"].tie_band_ == pytest.approx(binomial_se(1, 8))
    errors = fits["one_se_binomial"].tuning_errors_
    tied = errors <= errors.min() + binomial_se(1, 8)
    assert fits["one_se_binomial"].diagnostics()["n_tied"] == int(tied.sum())
    # separated blobs and the expected error beside: the best point makes no validation
    # error, its per-fold scores differ by the expected error alone, and the band is 8 rows'
    X, _, y_obs = _two_blobs(per_class=4)
    narrow, wide = (KernelSVC(kernel="rbf", tuning_score="validation_expected",
                              tie_rule="default_closest", tie_tolerance=tol,
                              random_state=0).fit(X, y_obs)
                    for tol in ("one_se", "one_se_binomial"))
    assert narrow.tie_band_ < 0.05
    assert wide.tie_band_ == pytest.approx(binomial_se(0, 8))
    assert (wide.C_, wide.gamma_) == (1.0, 1.0)      # the default among the tied points


def test_unknown_tie_options_are_refused():
    X, _, y_obs = _two_blobs()
    with pytest.raises(ValueError, match="tie_rule"):
        KernelSVC(kernel="rbf", tie_rule="smallest").fit(X, y_obs)
    with pytest.raises(ValueError, match="tie_tolerance"):
        KernelSVC(kernel="rbf", tie_tolerance="two_se").fit(X, y_obs)


def test_lap_default_closest_takes_the_gamma_a_whose_c_is_nearest_1():
    # LAP's C = 1 / (2 gamma_A l) is not searched, but the default_closest rule is "closest to
    # C = 1": on blobs where every grid point ties, gamma_I = gamma_A and C nearest 1 must win
    # (without C in the distance the first tied diagonal point, the largest gamma_A, won:
    # here 0.1, C = 0.125 on 40 rows, where 0.01 gives C = 1.25)
    X, y, y_obs = _two_blobs(per_class=20)
    n_lab = int(np.sum(~np.isnan(y_obs)))
    grid = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
    m = KernelSVC(kernel="lap", gamma_grid=(0.5,), gamma_I_grid=grid, gamma_A_grid=grid,
                  n_neighbors=5, tie_rule="default_closest", random_state=0).fit(X, y_obs)
    assert m.diagnostics()["n_tied"] > len(grid)            # the blobs tie many points
    assert m.gamma_I_ == m.gamma_A_
    best = min(grid, key=lambda ga: abs(np.log10(1.0 / (2 * ga * n_lab))))
    assert m.gamma_A_ == best == 1e-2
    assert m.C_ == pytest.approx(1.0 / (2 * best * n_lab))
    assert np.mean(m.predict(X) == y) == 1.0


def _far_rows_kernel(tiny=1e-20):
    """An identity Gram matrix on 6 balanced training rows (3 + 3) and 2 validation rows
    whose only kernel evidence, ``tiny``, points to their own class."""
    codes = np.array([0, 0, 0, 1, 1, 1])
    K_test = np.array([[tiny, tiny, tiny, 0, 0, 0], [0, 0, 0, tiny, tiny, tiny]])
    return np.eye(6), codes, K_test


@pytest.mark.parametrize("C", [0.1, 1.0])
def test_identity_gram_leaves_the_prediction_undetermined(C):
    # Hand-worked (decision 0307): on the identity every dual coefficient is at its bound C,
    # so no support vector pins the bias: rho may be anywhere in [C - 1, 1 - C] (libsvm takes
    # 0, the midpoint) and a decision value of 1e-20 changes sign within it.
    K, codes, K_test = _far_rows_kernel()
    assert determined_svc_predict(K, codes, K_test, C).tolist() == [-1, -1]
    # (C = 1: the interval is the point 0, but 1e-20 is within the solver's tolerance of it)
    # a row equal to all three rows of its class: w(x) = +-3C, determined only when it
    # exceeds the half-width 1 - C (C = 1: 3 > 0; C = 0.1: 0.3 < 0.9)
    K_near = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], float)
    want = [0, 1] if 3 * C > 1 - C else [-1, -1]
    assert determined_svc_predict(K, codes, K_near, C).tolist() == want
    if C == 0.1:                                      # the symmetry that fooled the tuning
        assert precomputed_svc_predict(K, codes, K_test, C).tolist() == [0, 1]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_determined_predictions_are_libsvms(seed, n_classes):
    # With free support vectors the bias is pinned: a row is undetermined only within the
    # solver's tolerance of the boundary, and the others are predicted as sklearn's SVC
    # predicts them (ovo votes).
    rng = np.random.default_rng(seed)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])[:n_classes]
    X = np.vstack([rng.normal(c, 1.0, (12, 2)) for c in centres])
    codes = np.repeat(np.arange(n_classes), 12)
    Z = rng.normal(0, 2.0, (40, 2))
    gram = lambda A, B: np.exp(-0.5 * ((A[:, None] - B[None]) ** 2).sum(-1))  # noqa: E731
    got = determined_svc_predict(gram(X, X), codes, gram(Z, X), 10.0)
    want = SVC(kernel="precomputed", C=10.0).fit(gram(X, X), codes).predict(gram(Z, X))
    assert np.mean(got >= 0) >= 0.9
    assert np.mean(got[got >= 0] == want[got >= 0]) >= 0.95   # pairwise fits: round-off


def test_decision_range_brackets_the_midpoint_bias_with_all_coefficients_at_bound():
    # C = 1e-3 on overlapping rows: every coefficient is at C, so the range holds libsvm's own
    # decision value (the interval's midpoint) and is as wide as the KKT conditions allow.
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(-0.3, 1, (4, 2)), rng.normal(0.3, 1, (4, 2))])
    codes = np.repeat([0, 1], 4)
    Z = rng.normal(0, 1, (30, 2))
    gram = lambda A, B: np.exp(-0.1 * ((A[:, None] - B[None]) ** 2).sum(-1))  # noqa: E731
    svc = SVC(kernel="precomputed", C=1e-3).fit(gram(X, X), codes)
    assert np.allclose(np.abs(svc.dual_coef_), 1e-3)
    got = determined_svc_predict(gram(X, X), codes, gram(Z, X), 1e-3)
    assert (got == -1).mean() > 0.9           # a bias-only SVM determines almost nothing


def test_error_rule_rates_a_kernel_that_sees_no_other_row_as_undetermined():
    # Two separated classes, 4 labeled rows each, at least 0.5 apart: at gamma = 100 the
    # labeled rows' Gram matrix is the identity (off-diagonal <= exp(-25)).  libsvm's class
    # then rests on the balanced inner folds' exact-zero bias and scores the point near 0;
    # the error rule counts its undetermined predictions as errors (score >= 1: every
    # validation row and every pool row).
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1.5, 0.4, (60, 2)), rng.normal(1.5, 0.4, (60, 2))])
    y = np.repeat([0, 1], 60)
    lab = np.r_[0:4, 60:64]
    X[lab] = [[-1.5, -1.5], [-1.5, 0.0], [-1.5, 1.5], [-3.0, 0.0],
              [1.5, -1.5], [1.5, 0.0], [1.5, 1.5], [3.0, 0.0]]
    y_obs = np.full(len(y), np.nan)
    y_obs[lab] = y[lab]
    errors = {}
    for rule in ("as_is", "error"):
        model = KernelSVC(kernel="rbf", gamma_grid=(100.0,), C_grid=(0.1, 1.0),
                          tuning_score="validation_expected", undetermined=rule,
                          random_state=0).fit(X, y_obs)
        errors[rule] = model.tuning_errors_[0]          # gamma = 100, C = 0.1
    assert errors["as_is"] < 0.1
    assert errors["error"] >= 1.0


def test_an_unknown_undetermined_rule_is_refused():
    X, _, y_obs = _two_blobs()
    with pytest.raises(ValueError, match="undetermined"):
        KernelSVC(kernel="rbf", undetermined="bias").fit(X, y_obs)


# ------------------------------------------------------------ LAP validation rows (decision 0308)


def _oog_inner_grams(X, y_obs, gamma, gamma_I, gamma_A, n_neighbors=7):
    """Each inner fold's deformed Gram matrices from the definition (an independent oracle):
    the pool without the fold's validation rows, its own kNN graph, one dense solve."""
    import functools

    from sklearn.model_selection import StratifiedKFold

    from alprbf.svm_kernels._graph import knn_laplacian
    from alprbf.svm_kernels.gram import deformed_gram_direct, rbf_gram

    lab = np.flatnonzero(~np.isnan(y_obs))
    y_lab = y_obs[lab].astype(int)
    unlabeled = np.flatnonzero(np.isnan(y_obs))
    k = functools.partial(rbf_gram, gamma=gamma)
    out = []
    for tr, va in StratifiedKFold(4, shuffle=True, random_state=0).split(lab, y_lab):
        keep = np.setdiff1d(np.arange(len(X)), lab[va])
        P, L = X[keep], knn_laplacian(X[keep], n_neighbors)
        c = gamma_I / (gamma_A * len(keep) ** 2)
        T, V, U = X[lab[tr]], X[lab[va]], X[unlabeled]
        out.append(tuple(deformed_gram_direct(k(P, P), L, k(P, A), k(P, T), k(A, T), c)
                         for A in (T, V, U)))
    return out


def test_out_of_graph_folds_are_the_deformed_kernel_of_the_pool_without_their_rows():
    X, _, y_obs = _iris_labels([4, 4, 4])
    m = KernelSVC(kernel="lap", gamma_grid=(0.5,), gamma_I_grid=(1.0,), gamma_A_grid=(1e-2,),
                  lap_validation="out_of_graph", tuning_score="validation_expected",
                  random_state=0).fit(X, y_obs)
    from sklearn.model_selection import StratifiedKFold

    from alprbf.svm_kernels.svm import _fold_grams
    lab = np.flatnonzero(~np.isnan(y_obs))
    folds = list(StratifiedKFold(4, shuffle=True, random_state=0)
                 .split(lab, y_obs[lab].astype(int)))
    m.gamma_, m.alpha_, m.beta_ = 0.5, 1.0, 1.0
    got = _fold_grams(m._fold_deformations(lab, folds, np.flatnonzero(np.isnan(y_obs))),
                      1.0, 1e-2)
    want = _oog_inner_grams(X, y_obs, 0.5, 1.0, 1e-2)
    for fold_got, fold_want in zip(got, want, strict=True):
        for a, b in zip(fold_got, fold_want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_out_of_graph_validation_sees_the_test_error_that_in_graph_validation_misses(seed):
    # gamma = 100 on z-scored iris: the base kernel between two different rows is mostly far
    # below libsvm's tolerance, so a row off the graph (a test row) is scored by the bias
    # alone, while a validation row inside the graph is scored through its kNN edges.  The
    # in-graph rating is then the pool's (transductive) error, far below the test error; the
    # out-of-graph rating is the test rows' situation (decision 0308)
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    pool, test = perm[:120], perm[120:]
    lab = np.concatenate([rng.choice(np.flatnonzero(y[pool] == k), 4, replace=False)
                          for k in range(3)])
    y_obs = np.full(len(pool), np.nan)
    y_obs[lab] = y[pool][lab]
    common = dict(kernel="lap", gamma_grid=(100.0,), gamma_I_grid=(10.0, 1.0),
                  gamma_A_grid=(1e-3,), undetermined="error", random_state=0)
    inside = KernelSVC(**common).fit(X[pool], y_obs)
    outside = KernelSVC(lap_validation="out_of_graph", **common).fit(X[pool], y_obs)
    test_error = np.mean(inside.predict(X[test]) != y[test])
    assert test_error >= 0.4
    assert inside.tuning_errors_[0] <= test_error - 0.25
    assert outside.tuning_errors_[0] >= max(0.5, test_error - 0.2)
    # the fitted models are the same: only the rating of the grid points differs
    np.testing.assert_array_equal(inside.decision_function(X), outside.decision_function(X))


def test_out_of_graph_is_lap_only_and_leaves_other_kernels_alone():
    X, _, y_obs = _iris_labels([4, 4, 4])
    a = KernelSVC(kernel="rbf", random_state=0).fit(X, y_obs)
    b = KernelSVC(kernel="rbf", lap_validation="out_of_graph", random_state=0).fit(X, y_obs)
    assert (a.C_, a.gamma_, a.cv_error_) == (b.C_, b.gamma_, b.cv_error_)


def test_an_unknown_lap_validation_is_refused():
    X, _, y_obs = _iris_labels([4, 4, 4])
    with pytest.raises(ValueError, match="lap_validation.*in_graph, out_of_graph"):
        KernelSVC(kernel="lap", lap_validation="transductive").fit(X, y_obs)
