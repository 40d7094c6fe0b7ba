"""Preprocessing: global vs per-fold statistics, missing values, one-hot, constant features, PCA."""

from __future__ import annotations

import numpy as np
import pytest

from alprbf.datasets import Preprocessing, make_dataset
from alprbf.engine.config import parse_config
from alprbf.errors import UserError

RNG = np.random.default_rng(7)


def mixed(n=60, with_nan=False):
    """3 numeric columns (one constant) + 2 integer-coded categorical ones."""
    X = np.column_stack([RNG.normal(5, 2, n), RNG.normal(-1, 0.5, n), np.full(n, 3.0),
                         RNG.integers(0, 3, n), RNG.integers(1, 5, n)]).astype(float)
    if with_nan:
        X[[2, 7], 0] = np.nan
        X[[4], 3] = np.nan
    cat = np.array([False, False, False, True, True])
    y = RNG.integers(0, 2, n)
    return make_dataset("toy", X, y, categorical=cat, split=np.array(["train"] * n))


def test_global_zscore_skips_categorical():
    ds = mixed()
    out = Preprocessing().apply_global(ds)
    num = ~ds.categorical
    np.testing.assert_allclose(out.X[:, [0, 1]].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(out.X[:, [0, 1]].std(0), 1)
    np.testing.assert_array_equal(out.X[:, 2], 0)  # constant column -> 0, not NaN
    np.testing.assert_array_equal(out.X[:, ~num], ds.X[:, ~num])


def test_drop_constant():
    ds = mixed()
    out = Preprocessing(drop_constant=True, standardize="none").apply_global(ds)
    assert out.n_features == 4 and "x2" not in out.feature_names
    np.testing.assert_array_equal(out.categorical, [False, False, True, True])
    np.testing.assert_array_equal(out.X, ds.X[:, [0, 1, 3, 4]])


def test_per_fold_statistics_never_see_the_test_fold():
    ds = mixed(80)
    pre = Preprocessing(standardize="per_fold", pca=2)
    glob = pre.apply_global(ds)
    train, test = np.arange(60), np.arange(60, 80)
    t1 = pre.fit_fold(glob.X[train], glob.categorical)
    # change every test row (as another data set would) and refit: nothing changes
    X2 = ds.X.copy()
    X2[test, :3] = RNG.normal(100, 50, (20, 3))
    ds2 = make_dataset("toy", X2, ds.y, categorical=ds.categorical)
    glob2 = pre.apply_global(ds2)
    np.testing.assert_array_equal(glob2.X[train], glob.X[train])  # global stage is row-wise
    t2 = pre.fit_fold(glob2.X[train], glob2.categorical)
    probe = RNG.normal(size=(5, 5))
    np.testing.assert_array_equal(t1(probe), t2(probe))
    np.testing.assert_array_equal(t1(glob.X[train]), t2(glob2.X[train]))
    # and the statistics are those of the training rows
    Xt = glob.X[train][:, :3]
    np.testing.assert_allclose(t1.zscore[0], Xt.mean(0))


def test_per_fold_zscore_matches_training_moments():
    ds = mixed(50)
    pre = Preprocessing(standardize="per_fold")
    X = pre.apply_global(ds).X
    np.testing.assert_array_equal(X, ds.X)  # nothing fitted globally
    t = pre.fit_fold(X[:30], ds.categorical)
    Z = t(X[:30])
    np.testing.assert_allclose(Z[:, :2].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].std(0), 1)
    np.testing.assert_array_equal(t(X[30:])[:, 3:], X[30:, 3:])
    assert t.categorical.tolist() == ds.categorical.tolist()


def test_missing_policies():
    ds = mixed(40, with_nan=True)
    with pytest.raises(UserError, match="3 missing values in 3 rows"):
        Preprocessing(missing="error").apply_global(ds)
    dropped = Preprocessing(missing="drop", standardize="none").apply_global(ds)
    assert dropped.n_samples == 37 and len(dropped.y) == 37 and len(dropped.split) == 37
    assert not np.isnan(dropped.X).any()
    imp = Preprocessing(missing="impute", standardize="none").apply_global(ds)
    col0 = ds.X[:, 0]
    assert imp.X[2, 0] == imp.X[7, 0] == np.nanmedian(col0)
    vals, counts = np.unique(ds.X[~np.isnan(ds.X[:, 3]), 3], return_counts=True)
    assert imp.X[4, 3] == vals[np.argmax(counts)]  # most frequent category
    np.testing.assert_array_equal(imp.X[~np.isnan(ds.X)], ds.X[~np.isnan(ds.X)])


def test_missing_draw_spreads_imputed_values_by_their_conditional_distribution():
    """``missing: draw`` (decision 0314): every observed value kept, a missing numeric value
    drawn given the row's other columns (so it follows a correlated column, unlike a single
    fill value), within the observed range, categorical codes filled with the mode, and the
    same seed gives the same data."""
    rng = np.random.default_rng(3)
    n = 400
    x0 = rng.normal(0, 1, n)
    X = np.column_stack([x0, 2 * x0 + rng.normal(0, 0.1, n), rng.integers(0, 3, n)]).astype(float)
    missing = rng.random(n) < 0.3
    X[missing, 1] = np.nan
    X[[5, 9], 2] = np.nan
    ds = make_dataset("toy", X, rng.integers(0, 2, n), categorical=np.array([False, False, True]))
    pre = Preprocessing(missing="draw", standardize="none")
    out = pre.apply_global(ds, np.random.SeedSequence(11)).X
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out[~np.isnan(X)], X[~np.isnan(X)])
    drawn = out[missing, 1]
    assert len(np.unique(drawn)) == missing.sum()          # no point mass
    assert np.corrcoef(drawn, x0[missing])[0, 1] > 0.95    # conditional on column 0
    assert np.nanmin(X[:, 1]) <= drawn.min() and drawn.max() <= np.nanmax(X[:, 1])
    vals, counts = np.unique(X[~np.isnan(X[:, 2]), 2], return_counts=True)
    assert out[5, 2] == out[9, 2] == vals[np.argmax(counts)]
    np.testing.assert_array_equal(out, pre.apply_global(ds, np.random.SeedSequence(11)).X)
    assert not np.array_equal(out, pre.apply_global(ds, np.random.SeedSequence(12)).X)
    with pytest.raises(ValueError, match="needs a seed"):
        pre.apply_global(ds)
    with pytest.raises(ValueError, match="not per_fold"):
        Preprocessing(missing="draw", standardize="per_fold")


def test_per_fold_imputation_uses_training_rows_only():
    ds = mixed(40, with_nan=True)
    pre = Preprocessing(standardize="per_fold")
    X = pre.apply_global(ds).X
    assert np.isnan(X).sum() == 3  # left for the folds
    train = np.arange(20, 40)  # rows 2, 4, 7 are test rows here
    t = pre.fit_fold(X[train], ds.categorical)
    filled = t(X[:10])
    assert not np.isnan(filled).any()
    med = np.median(X[train, 0])
    np.testing.assert_allclose(filled[2, 0], (med - X[train, 0].mean()) / X[train, 0].std())


def test_one_hot_codes_and_groups():
    ds = mixed(30, with_nan=True)
    out = Preprocessing(one_hot=True, standardize="none", missing="impute").apply_global(ds)
    k3, k4 = len(np.unique(ds.X[~np.isnan(ds.X[:, 3]), 3])), len(np.unique(ds.X[:, 4]))
    assert out.n_features == 3 + k3 + k4
    assert out.groups.tolist() == [0, 1, 2] + [3] * k3 + [4] * k4
    blocks = out.X[:, 3:3 + k3], out.X[:, 3 + k3:]
    np.testing.assert_array_equal(blocks[0].sum(1), 1)  # the NaN was imputed before coding
    np.testing.assert_array_equal(blocks[1].sum(1), 1)
    codes = np.unique(ds.X[:, 4])
    np.testing.assert_array_equal(codes[blocks[1].argmax(1)], ds.X[:, 4])
    assert out.categorical.tolist() == [False] * 3 + [True] * (k3 + k4)
    # per fold: the missing category becomes an all-zero indicator row
    pf = Preprocessing(one_hot=True, standardize="per_fold").apply_global(ds)
    assert pf.X[4, 3:3 + k3].sum() == 0


def test_pca_matches_svd_oracle_global_and_per_fold():
    X = RNG.normal(size=(120, 6)) @ RNG.normal(size=(6, 6))
    ds = make_dataset("toy", X, RNG.integers(0, 2, 120))
    out = Preprocessing(pca=3).apply_global(ds)
    Z = (X - X.mean(0)) / X.std(0)
    U, S, Vt = np.linalg.svd(Z - Z.mean(0), full_matrices=False)
    ref = U[:, :3] * S[:3]
    np.testing.assert_allclose(np.abs(out.X), np.abs(ref), atol=1e-8)
    assert out.feature_names == ("pc1", "pc2", "pc3") and out.n_features == 3
    # per fold: fitted on the training rows only
    pre = Preprocessing(pca=2, standardize="per_fold")
    t = pre.fit_fold(X[:80], ds.categorical)
    Zt = (X[:80] - X[:80].mean(0)) / X[:80].std(0)
    _, _, Vt = np.linalg.svd(Zt - Zt.mean(0), full_matrices=False)
    Zs = (X[80:] - X[:80].mean(0)) / X[:80].std(0)
    ref = (Zs - Zt.mean(0)) @ Vt[:2].T
    np.testing.assert_allclose(np.abs(t(X[80:])), np.abs(ref), atol=1e-8)
    assert t.categorical.tolist() == [False, False]
    with pytest.raises(UserError, match="pca=7"):
        Preprocessing(pca=7).apply_global(ds)


def test_pca_keeps_categorical_columns():
    ds = mixed(40)
    out = Preprocessing(pca=2).apply_global(ds)
    assert out.n_features == 4 and out.categorical.tolist() == [False, False, True, True]
    np.testing.assert_array_equal(out.X[:, 2:], ds.X[:, 3:])


def _cfg(pre):
    return {"name": "t", "dataset": {"name": "iris", "preprocessing": pre},
            "model": "gaussian_nb", "strategy": "random"}


def test_new_fields_are_config_options():
    cfg = parse_config(_cfg({"missing": "drop", "one_hot": True, "pca": 2,
                             "drop_constant": True}))
    p = cfg.datasets[0].preprocessing
    assert (p.missing, p.one_hot, p.pca, p.drop_constant) == ("drop", True, 2, True)
    for bad in ({"missing": "mean"}, {"pca": 0}, {"one_hot": "yes"}, {"pcaa": 3}):
        with pytest.raises(UserError):
            parse_config(_cfg(bad))
