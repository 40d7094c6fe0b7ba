"""What a fit of the LAP SVM keeps (issue 50: table 003 at one query per round).

* The memo (:attr:`KernelSVC.memoize`, on by default): the labeled rows' back-projection once
  per ratio, the Gram matrix of rows asked for again within a fit.  Exact: the loop's numbers
  equal the plain path's bit for bit (``np.array_equal``).
* The column cache (``lap_column_cache=True``, off by default): the labeled rows' projected
  columns kept between fits.  A column computed in a batch of one differs from the same
  column computed beside others in the last bits (the BLAS's order of operations depends on
  a product's width), so it agrees with the plain path to 1e-12, not bit for bit.
"""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons

from alprbf.strategies.svm import svm_margin
from alprbf.svm_kernels.gram import LaplacianDeformation, rbf_gram
from alprbf.svm_kernels.svm import KernelSVC


def _deformation(n: int = 90, seed: int = 0, degree: int = 1) -> LaplacianDeformation:
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return LaplacianDeformation(X, functools.partial(rbf_gram, gamma=0.4), n_neighbors=5,
                                bandwidth=8, degree=degree)


@pytest.mark.parametrize("degree", [1, 2])
def test_kept_rows_give_the_plain_numbers(degree):
    """Kept rows (the memo) against fresh rows, over several ratios and both orientations of
    the cross Gram matrix: bit for bit."""
    lap = _deformation(degree=degree)
    index = np.random.default_rng(1).permutation(lap.n_pool)[:13]
    kept = lap.kept_rows(index)
    X_new = np.random.default_rng(2).normal(size=(7, 3))
    for gamma_I in (1.0, 1e4, 1.0, 1e6):
        kw = dict(gamma_I=gamma_I * lap.n_pool ** 2 / 1e4, gamma_A=1.0)
        assert np.array_equal(lap.gram(kept, **kw), lap.gram(lap.rows(index=index), **kw))
        for rows in (lap.rows(index=np.arange(lap.n_pool)), lap.rows(X=X_new)):
            fresh = lap.rows(X=rows.X) if rows.index is None else lap.rows(index=rows.index)
            assert np.array_equal(lap.gram(rows, kept, **kw),
                                  lap.gram(fresh, lap.rows(index=index), **kw))
    assert len(kept.W) == 3                       # one back-projection per ratio


@pytest.mark.parametrize("degree", [1, 2])
def test_kept_columns_agree_with_one_batch(degree):
    """Labeled sets growing by one, two and five rows (and a reordering): the kept columns'
    projection, back-projection and deformed Gram matrices (square, the pool against them)
    equal those of one batch to round-off, with the batch's memory layout."""
    lap = _deformation(degree=degree)
    rng = np.random.default_rng(1)
    order = rng.permutation(lap.n_pool)
    gamma_I, gamma_A = 1e-2 * lap.n_pool ** 2, 1.0
    c = lap.ratio(gamma_I, gamma_A)
    kind, factor = lap._band_factor(c)
    for size in (8, 9, 11, 16, 17):
        for index in (order[:size], order[:size][::-1]):
            kept, plain = lap.kept_rows(index, columns=True), lap.rows(index=index)
            square = lap.gram(kept, gamma_I=gamma_I, gamma_A=gamma_A)
            np.testing.assert_allclose(square, lap.gram(plain, gamma_I=gamma_I,
                                                        gamma_A=gamma_A), rtol=0, atol=1e-12)
            assert np.array_equal(square, square.T)
            pool = lap.rows(index=np.arange(lap.n_pool))
            np.testing.assert_allclose(
                lap.gram(pool, kept, gamma_I=gamma_I, gamma_A=gamma_A),
                lap.gram(pool, lap.rows(index=index), gamma_I=gamma_I, gamma_A=gamma_A),
                rtol=0, atol=1e-12)
            np.testing.assert_allclose(
                lap.pool_gram(kept, gamma_I=gamma_I, gamma_A=gamma_A),
                lap.gram(pool, lap.rows(index=index), gamma_I=gamma_I, gamma_A=gamma_A),
                rtol=0, atol=1e-12)
            W = lap._back_projection(lap.rows(index=index), c, kind, factor)
            np.testing.assert_allclose(kept.W[c], W, rtol=0, atol=1e-12)
            assert kept.G.flags.f_contiguous == plain.G.flags.f_contiguous
            assert kept.W[c].flags.c_contiguous == W.flags.c_contiguous


def test_pool_gram_needs_kept_columns():
    lap = _deformation()
    with pytest.raises(ValueError, match="kept_rows"):
        lap.pool_gram(lap.kept_rows([1, 2]), gamma_I=1.0, gamma_A=1.0)
    assert np.array_equal(lap.pool_gram(lap.kept_rows([1, 2], columns=True), gamma_I=0.0,
                                        gamma_A=1.0), lap.K[:, [1, 2]])


def test_kept_columns_follow_the_ratio():
    """Another ratio starts the kept back-projection afresh; the kept projection stays."""
    lap = _deformation()
    index = np.arange(0, 40, 3)
    pool = lap.rows(index=np.arange(lap.n_pool))
    for gamma_I in (1.0, 1e4, 1.0):
        got = lap.gram(pool, lap.kept_rows(index, columns=True), gamma_I=gamma_I, gamma_A=1.0)
        want = lap.gram(pool, lap.rows(index=index), gamma_I=gamma_I, gamma_A=1.0)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        assert lap._kept_W.ratio == lap.ratio(gamma_I, 1.0)
    assert len(lap._kept_G.columns) == len(index)


def _loop(kernel: str, memoize: bool, monkeypatch, rounds: int = 12, batch: int = 1,
          pickle_at: int | None = None, **params):
    """A few rounds of Reitmaier et al. 2016's loop (fit, the evaluation's predictions, US query of
    ``batch`` rows) with the memo on or off (``pickle_at``: the fit of that round goes
    through pickle, as a checkpoint does); returns every decision value it computed and the
    queries."""
    monkeypatch.setattr(KernelSVC, "memoize", memoize)
    X, y = make_moons(120, noise=0.2, random_state=3) if kernel != "rwm" else \
        make_blobs(120, centers=3, random_state=3)
    X = np.c_[X, np.random.default_rng(0).normal(size=(len(X), 1))]
    X, X_test, y = X[:100], X[100:], y[:100]
    labeled = np.r_[[np.flatnonzero(y == k)[:4] for k in np.unique(y)]].ravel()
    y_obs = np.full(len(y), np.nan)
    y_obs[labeled] = y[labeled]
    grid = dict(gamma_grid=(0.1, 1.0), gamma_I_grid=(1e-2, 1.0), gamma_A_grid=(1e-2, 1.0),
                C_grid=(0.1, 10.0))
    previous, seen, queries = None, [], []
    for _ in range(rounds):
        est = KernelSVC(kernel=kernel, random_state=0, tuning_score="validation_expected",
                        tie_rule="default_closest", **grid, **params)
        est.fit(X, y_obs, previous=previous)
        pool = np.flatnonzero(np.isnan(y_obs))
        labeled = np.flatnonzero(~np.isnan(y_obs))
        seen += [est.scores(X_test), est.predict_log_proba(X_test), est.scores(X),
                 est.scores_rows(X, labeled), est.predict_log_proba_rows(X, pool)]
        scores, pairwise = est.decision_values(X, pool)
        seen += [scores, pairwise, *est.decision_values(X[pool])]
        picked = pool[np.argsort(svm_margin(scores, pairwise), kind="stable")[:batch]]
        queries.append(picked)
        y_obs[picked] = y[picked]
        previous = pickle.loads(pickle.dumps(est)) if pickle_at == len(queries) else est
    return seen, queries


@pytest.mark.parametrize(("kernel", "batch"), [("lap", 1), ("lap", 5), ("rbf", 1),
                                               pytest.param("rwm", 1, marks=pytest.mark.slow)])
def test_the_memo_gives_the_plain_numbers(kernel, batch, monkeypatch):
    """Memo on and off: identical decision values, log posteriors and queries."""
    cached, queries = _loop(kernel, True, monkeypatch, batch=batch)
    plain, plain_queries = _loop(kernel, False, monkeypatch, batch=batch)
    assert len(cached) == len(plain)
    for a, b in zip(cached, plain, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    for a, b in zip(queries, plain_queries, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("batch", [1, 5])
def test_the_column_cache_agrees_with_the_plain_numbers(batch, monkeypatch):
    """``lap_column_cache``: the same queries, decision values within 1e-12 of the plain
    path's (they differ in the last bits: see the module docstring)."""
    cached, queries = _loop("lap", True, monkeypatch, batch=batch, lap_column_cache=True)
    plain, plain_queries = _loop("lap", False, monkeypatch, batch=batch)
    for a, b in zip(cached, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    for a, b in zip(queries, plain_queries, strict=True):
        assert np.array_equal(a, b)


def test_a_checkpoint_keeps_the_columns(monkeypatch):
    """With the column cache, a fit that went through pickle (a resumed task) continues with
    the same numbers as an uninterrupted run, bit for bit: the kept columns go along."""
    for at in (1, 5):
        resumed, q_resumed = _loop("lap", True, monkeypatch, pickle_at=at,
                                   lap_column_cache=True)
        straight, q_straight = _loop("lap", True, monkeypatch, lap_column_cache=True)
        for a, b in zip(resumed + q_resumed, straight + q_straight, strict=True):
            assert np.array_equal(a, b, equal_nan=True)


def test_the_memo_is_not_pickled():
    X, y = make_moons(40, noise=0.2, random_state=0)
    y_obs = np.where(np.arange(40) < 10, y, np.nan)
    est = KernelSVC(kernel="lap", C=1.0, gamma=1.0, gamma_I_grid=(1.0,),
                    gamma_A_grid=(1.0,)).fit(X, y_obs)
    est.scores(X)
    assert est._new_rows_gram
    assert "_new_rows_gram" not in est.__getstate__()
    assert "_new_rows_gram" in est.__dict__


def test_the_memo_shares_the_fold_grams_of_one_ratio(monkeypatch):
    """``lap_validation="out_of_graph"``: the grid points of one ratio gamma_I / gamma_A share
    their inner folds' Gram matrices with the memo on; the tuning's scores and its choice are
    the plain path's, bit for bit, with fewer Gram computations."""
    import alprbf.svm_kernels.svm as svm_module

    X, y = make_moons(60, noise=0.25, random_state=1)
    y_obs = np.full(len(y), np.nan)
    first = np.r_[np.flatnonzero(y == 0)[:4], np.flatnonzero(y == 1)[:4]]
    y_obs[first] = y[first]
    plain_fold_grams, calls = svm_module._fold_grams, []
    monkeypatch.setattr(svm_module, "_fold_grams",
                        lambda *a: calls.append(a[1:]) or plain_fold_grams(*a))
    fits = {}
    for memoize in (False, True):
        monkeypatch.setattr(KernelSVC, "memoize", memoize)
        calls.clear()
        est = KernelSVC(kernel="lap", lap_validation="out_of_graph", random_state=0,
                        tuning_score="validation_expected", tie_rule="default_closest",
                        tie_tolerance="one_se_binomial", gamma_grid=(0.5, 2.0),
                        gamma_I_grid=(1e-2, 1.0, 100.0), gamma_A_grid=(1e-2, 1.0, 100.0))
        fits[memoize] = (est.fit(X, y_obs), len(calls))
    (plain, n_plain), (memo, n_memo) = fits[False], fits[True]
    assert np.array_equal(plain.tuning_errors_, memo.tuning_errors_)
    assert (plain.gamma_, plain.gamma_I_, plain.gamma_A_, plain.C_) == \
        (memo.gamma_, memo.gamma_I_, memo.gamma_A_, memo.C_)
    assert n_plain == len(plain.tuning_points_) == 18
    assert n_memo < n_plain
