"""The compiled E-step normalisation against the NumPy expressions it replaced, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from alprbf.prbf import reference as ref
from alprbf.prbf._data import common_code
from alprbf.prbf.fast import exp as _exp
from alprbf.prbf.fast import normalize as _normalize
from alprbf.prbf.fast.normalize import BLOCK_ENTRIES, normalize_with_offsets
from alprbf.prbf.reference import weighted_logits
from tests.test_prbf_exp import glibc_fma_exp, libm_exp

FLUSH_LOG = -460.0


def reference(lpT, table, codes, exp=np.exp):
    """The E-step's NumPy code before the compiled pass (the oracle): offsets, then the
    column-wise log-sum-exp with the flush (maximum with the clip, exp, mask product)."""
    wT = lpT + table[:, codes]
    m = wT.max(axis=0)
    bad = ~np.isfinite(m)
    m[bad] = 0.0
    e = wT - m
    np.maximum(e, FLUSH_LOG - 1.0, out=e)
    e[...] = exp(e)
    np.multiply(e, e >= float(np.exp(FLUSH_LOG)), out=e)
    s = e.sum(axis=0)
    with np.errstate(divide="ignore"):
        log_norm = m + np.log(s)
    e *= 1.0 / np.where(s > 0, s, 1.0)
    return wT, log_norm, e


def ours(lpT, table, codes, **kwargs):
    """The offset log densities (not kept by the compiled pass, formed on demand) and the
    compiled pass's results, in the order of :func:`reference`."""
    return (weighted_logits(lpT, table, codes),
            *normalize_with_offsets(lpT, table, codes, **kwargs))


@pytest.fixture(params=[0.0, 0.3, 1.1], ids=["dense", "mixed", "compacted"], autouse=True)
def path(request, monkeypatch):
    """Run every test through both ways to the exponentials, whichever this CPU prefers:
    always dense, always compacted, and a block-by-block choice (with wrong predictions)."""
    monkeypatch.setattr(_normalize, "sparse_threshold", lambda: request.param)
    return request.param


@pytest.fixture(params=[True, False], ids=["vector", "scalar"], autouse=True)
def compaction(request, monkeypatch):
    """And both ways to compact the survivors: eight at a time and one at a time."""
    monkeypatch.setattr(_normalize, "use_vector_compaction", lambda: request.param)
    return request.param


def assert_bits_equal(got, want):
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.int64), w.view(np.int64))


def case(rng, M, n, T, spread, p_inf, common=0.0):
    """Log densities with rows of varying spread (some blocks dense, some sparse), offsets
    with zeros in them, and a fraction ``common`` of rows with the last code (unlabeled)."""
    lpT = rng.normal(scale=spread, size=(M, n)) - rng.exponential(spread, size=(M, n))
    lpT *= rng.uniform(0.01, 1.0, size=n)
    lpT[rng.random((M, n)) < p_inf] = -np.inf
    table = np.log(rng.dirichlet(np.ones(M), size=T).T)
    table[rng.random((M, T)) < 0.2] = -np.inf          # pi_jk = 0
    codes = np.where(rng.random(n) < common, T - 1, rng.integers(T, size=n))
    return lpT, table, codes


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 40), n=st.integers(1, 300), T=st.integers(1, 6),
       spread=st.sampled_from([0.1, 10.0, 300.0, 3000.0]), p_inf=st.sampled_from([0.0, 0.3, 1.0]),
       common=st.sampled_from([0.0, 0.9, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_bit_identical_to_the_numpy_expressions(M, n, T, spread, p_inf, common, seed):
    lpT, table, codes = case(np.random.default_rng(seed), M, n, T, spread, p_inf, common)
    got = ours(lpT, table, codes)
    assert_bits_equal(got, reference(lpT, table, codes))
    _, log_norm, respT = got
    finite = np.isfinite(log_norm)
    np.testing.assert_allclose(respT[:, finite].sum(axis=0), 1.0, rtol=1e-12)
    assert not respT[:, ~finite].any()                  # all -inf column: no mass, no nan


@pytest.mark.parametrize("common", [0.0, 0.96])
@pytest.mark.parametrize("M", [1, 7, 270])
def test_several_column_blocks_and_given_buffers(M, common):
    cols = max(_normalize.MIN_COLUMNS, BLOCK_ENTRIES // M)
    n = 3 * cols + 5                                    # three full blocks and a partial one
    lpT, table, codes = case(np.random.default_rng(M), M, n, 11, 200.0, 0.05, common)
    respT = np.full((M, n), np.nan)
    got = ours(lpT, table, codes, respT=respT)
    assert got[2] is respT
    assert_bits_equal(got, reference(lpT, table, codes))
    assert 0 < np.count_nonzero(respT) < respT.size     # both branches (kept, flushed) taken


def test_flush_boundary_is_decided_on_the_exponential():
    # differences around -460: the clip (-461) only skips arguments whose result is flushed
    d = np.array([0.0, -459.9, -460.0 + 1e-13, -460.0, -460.0 - 1e-13, -460.5, -460.999,
                  -461.0, -461.0 - 1e-12, -800.0, -np.inf])
    lpT = d[:, None] + np.zeros((1, 3))
    got = ours(lpT, np.zeros((len(d), 1)), np.zeros(3, dtype=np.int64))
    assert_bits_equal(got, reference(lpT, np.zeros((len(d), 1)), np.zeros(3, dtype=np.int64)))
    kept = got[2][:, 0] > 0
    assert kept[:3].all() and not kept[5:].any()


def test_nan_propagates_as_before():
    lpT = np.array([[0.0, np.nan], [1.0, 2.0]])
    got = ours(lpT, np.zeros((2, 1)), np.zeros(2, dtype=np.int64))
    want = reference(lpT, np.zeros((2, 1)), np.zeros(2, dtype=np.int64))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
    assert np.isnan(got[1][1]) and np.isnan(got[2][0, 1])


def test_no_components_is_an_error():
    with pytest.raises(ValueError, match="at least one component"):
        normalize_with_offsets(np.zeros((0, 3)), np.zeros((0, 1)), np.zeros(3, dtype=np.int64))


@pytest.mark.parametrize("M", [1, 8, 40])
def test_single_row_sums_as_numpy_does(M):
    # NumPy sums one column pairwise (M >= 8 differs from the in-order sum of more rows)
    rng = np.random.default_rng(M)
    lpT = rng.normal(scale=3.0, size=(M, 1))
    table = np.log(rng.dirichlet(np.ones(M), size=2).T)
    codes = np.array([1])
    assert_bits_equal(ours(lpT, table, codes), reference(lpT, table, codes))


def test_threshold_is_measured_once_and_is_a_fraction(monkeypatch):
    monkeypatch.undo()                                  # the real one, not the fixture's
    first = _normalize.sparse_threshold()
    assert 0.0 <= first <= 1.0
    assert _normalize.sparse_threshold() == first


def test_exp_flushed_is_the_dense_reference():
    a = np.array([[0.0, -1.0, -459.9, -460.5, -461.0, -800.0, -np.inf]])
    got = ref.exp_flushed(a.copy())
    np.testing.assert_array_equal(got, np.where(np.exp(a) >= np.exp(FLUSH_LOG), np.exp(a), 0.0))


def test_given_groups_equal_computed_ones():
    lpT, table, codes = case(np.random.default_rng(3), 9, 700, 4, 50.0, 0.1, 0.9)
    groups = common_code(codes)
    assert groups[0] == 3 and np.array_equal(groups[1], np.flatnonzero(codes != 3))
    assert_bits_equal(ours(lpT, table, codes, groups=groups),
                      reference(lpT, table, codes))


@pytest.mark.skipif(not glibc_fma_exp(), reason="the oracle is glibc's exp on a CPU with FMA")
@settings(max_examples=25, deadline=None)
@given(M=st.integers(1, 40), n=st.integers(2, 300), T=st.integers(1, 6),
       spread=st.sampled_from([0.1, 10.0, 300.0]), common=st.sampled_from([0.0, 0.9]),
       seed=st.integers(0, 2**32 - 1))
def test_compiled_exp_gives_the_c_library_bits(M, n, T, spread, common, seed):
    # the path every alprbf command takes (pinned kernels: NumPy's exp is the C library's)
    lpT, table, codes = case(np.random.default_rng(seed), M, n, T, spread, 0.1, common)
    with pytest.MonkeyPatch.context() as mp:   # (sparse blocks in one compiled call)
        mp.setattr(_exp, "use_compiled_exp", lambda: True)
        mp.setattr(_normalize, "use_compiled_exp", lambda: True)
        got = ours(lpT, table, codes)
    assert_bits_equal(got, reference(lpT, table, codes, exp=libm_exp))


def test_a_workspace_shared_by_calls_changes_nothing():
    # blocks alternately dense and sparse, so that the guess carried over is sometimes wrong
    rng = np.random.default_rng(5)
    M, n = 30, 200
    ws = _normalize.NormalizeWorkspace(M, n)
    for spread in (0.1, 3000.0, 3000.0, 0.1, 300.0, 0.1):
        width = int(rng.integers(2, n + 1))
        lpT, table, codes = case(rng, M, width, 4, spread, 0.05, 0.9)
        got = ours(lpT, table, codes, workspace=ws)
        assert_bits_equal(got, reference(lpT, table, codes))


def test_a_workspace_too_small_is_an_error():
    ws = _normalize.NormalizeWorkspace(3, 10)
    with pytest.raises(ValueError, match="at most 10 columns"):
        normalize_with_offsets(np.zeros((3, 11)), np.zeros((3, 1)), np.zeros(11, dtype=np.int64),
                               workspace=ws)
    with pytest.raises(ValueError, match="3 components"):
        normalize_with_offsets(np.zeros((4, 5)), np.zeros((4, 1)), np.zeros(5, dtype=np.int64),
                               workspace=ws)


def test_responsibilities_left_in_the_workspace_are_the_written_ones():
    """With ``sparse_below``, a compacted block's responsibilities stay in the workspace (none
    written) and are, entry for entry, those written otherwise; a dense block is written."""
    rng = np.random.default_rng(11)
    M, n = 30, 200
    left = 0
    for spread in (3000.0, 3000.0, 0.1, 3000.0):
        lpT, table, codes = case(rng, M, n, 4, spread, 0.0, 0.9)
        _, want_norm, want = reference(lpT, table, codes)
        ws = _normalize.NormalizeWorkspace(M, n)
        ws.dense = False                       # guessed sparse: the compacted path
        log_norm, respT = normalize_with_offsets(lpT, table, codes, workspace=ws,
                                                 sparse_below=1.0)
        assert np.array_equal(log_norm.view(np.uint64), want_norm.view(np.uint64))
        if respT is not None:                  # (the dense path, never left)
            assert_bits_equal((log_norm, respT), (want_norm, want))
            continue
        left += 1
        got = np.zeros((M, n))
        for j in range(M):
            t = slice(ws.starts[j], ws.starts[j + 1])
            got[j, ws.idx[t]] = ws.buf[t]
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    assert left >= 3


@settings(max_examples=30, deadline=None)
@given(M=st.integers(1, 40), n=st.integers(1, 300), T=st.integers(1, 6),
       spread=st.sampled_from([0.1, 300.0, 3000.0]), p_inf=st.sampled_from([0.0, 0.3, 1.0]),
       seed=st.integers(0, 2**32 - 1))
@example(M=8, n=2, T=1, spread=0.1, p_inf=0.0, seed=1)   # two one-row blocks
def test_maxima_and_sums_give_the_log_normaliser_bit_for_bit(M, n, T, spread, p_inf, seed):
    """A caller that takes each block's maxima and sums and forms the log normaliser once over
    all its rows gets, bit for bit, the normalisers and responsibilities of the same calls
    without ``maxima_sums`` (one-row blocks included, which NumPy sums pairwise)."""
    lpT, table, codes = case(np.random.default_rng(seed), M, n, T, spread, p_inf, 0.5)
    maxima, sums = np.full(n + 2, np.nan), np.full(n + 2, np.nan)
    cut = seed % n if n > 1 else n                 # a first block of 0 .. n-1 rows
    want_norm, want, got = [], [], []
    for lo, hi in ((0, cut), (cut, n)):
        if hi > lo:
            block = (np.ascontiguousarray(lpT[:, lo:hi]), table, codes[lo:hi])
            norm, r = normalize_with_offsets(*block)
            want_norm.append(norm)
            want.append(r)
            none, r = normalize_with_offsets(*block, maxima_sums=(maxima[lo:hi], sums[lo:hi]))
            assert none is None
            got.append(r)
    log_norm = ref.log_normaliser(maxima[:n], sums[:n])
    assert np.array_equal(log_norm.view(np.uint64), np.hstack(want_norm).view(np.uint64))
    assert np.array_equal(np.hstack(got).view(np.uint64), np.hstack(want).view(np.uint64))
    assert np.isnan(maxima[n:]).all() and np.isnan(sums[n:]).all()   # nothing past the rows


def test_a_caller_with_a_sparse_product_guesses_sparse_below_its_own_limit(monkeypatch):
    """Between the threshold of the exponentials and the caller's ``sparse_below`` a block is
    taken as sparse for the next one's guess (its survivors go to the sparse product); without
    ``sparse_below``, as dense."""
    monkeypatch.setattr(_normalize, "sparse_threshold", lambda: 0.05)
    M, n = 10, 256
    lpT = np.full((M, n), -1000.0)
    lpT[:2] = 0.0                              # 20 % of the entries survive the clip
    table, codes = np.zeros((M, 1)), np.zeros(n, dtype=np.int64)
    for below, guess in ((0.3, False), (0.0, True), (0.15, True)):
        ws = _normalize.NormalizeWorkspace(M, n)
        normalize_with_offsets(lpT, table, codes, workspace=ws, sparse_below=below)
        assert ws.dense is guess


def test_sparse_below_needs_a_workspace():
    with pytest.raises(ValueError, match="workspace"):
        normalize_with_offsets(np.zeros((3, 5)), np.zeros((3, 1)), np.zeros(5, dtype=np.int64),
                               sparse_below=0.5)


@settings(max_examples=25, deadline=None)
@given(M=st.integers(1, 40), n=st.integers(2, 300), T=st.integers(1, 6),
       spread=st.sampled_from([30.0, 300.0, 3000.0]), common=st.sampled_from([0.0, 0.9]),
       leave=st.sampled_from([0.0, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_one_call_compacted_block_is_the_general_path(M, n, T, spread, common, leave, seed):
    """With the compiled exp, a block guessed sparse goes through one compiled call; it gives
    what the general path gives (maxima, sums, responsibilities written or left in the
    workspace, the next guess), bit for bit."""
    lpT, table, codes = case(np.random.default_rng(seed), M, n, T, spread, 0.1, common)
    out = []
    for one_call in (True, False):
        with pytest.MonkeyPatch.context() as mp:  # the compiled exp on both paths
            mp.setattr(_exp, "use_compiled_exp", lambda: True)
            mp.setattr(_normalize, "use_compiled_exp", lambda one_call=one_call: one_call)
            ws = _normalize.NormalizeWorkspace(M, n)
            ws.dense = False
            log_norm, respT = normalize_with_offsets(lpT, table, codes, None, None, ws, leave)
        k = int(ws.starts[M]) if respT is None else 0
        out.append((log_norm, respT, ws.dense, ws.buf[:k].copy(), ws.idx[:k].copy()))
    (a_norm, a_resp, a_guess, a_buf, a_idx), (b_norm, b_resp, b_guess, b_buf, b_idx) = out
    assert np.array_equal(a_norm.view(np.uint64), b_norm.view(np.uint64))
    assert (a_resp is None) == (b_resp is None) and a_guess == b_guess
    if a_resp is not None:
        assert np.array_equal(a_resp.view(np.uint64), b_resp.view(np.uint64))
    assert np.array_equal(a_buf.view(np.uint64), b_buf.view(np.uint64))
    assert np.array_equal(a_idx, b_idx)


# the nan block goes to np.exp, which overflows on it exactly as the reference expressions
# do (checked): the expected warning of this invalid input, not one of ours
@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")
def test_one_call_gives_a_nan_block_to_the_general_path(monkeypatch):
    lpT, table, codes = case(np.random.default_rng(3), 20, 100, 3, 3000.0, 0.0)
    lpT[3, 7] = np.nan
    monkeypatch.setattr(_exp, "use_compiled_exp", lambda: True)
    monkeypatch.setattr(_normalize, "use_compiled_exp", lambda: True)
    ws = _normalize.NormalizeWorkspace(20, 100)
    ws.dense = False
    got = ours(lpT, table, codes, workspace=ws)
    want = reference(lpT, table, codes, exp=_exp.compiled_exp)
    for g, w in zip(got, want, strict=True):       # nan where the NumPy expressions have it
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
    assert np.isnan(got[1][7])
