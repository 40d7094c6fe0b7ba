"""The blocked E-step (alprbf.prbf.fast.gemm_blocks, blocked_e_step): same bits as the whole one."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

import alprbf.prbf._em as em
import alprbf.prbf.fast.blocked as blk
from alprbf.prbf import e_step, fit_em, initialize_params, prepare_data, run_em
from alprbf.prbf._gaussian import direct_log_densities, log_prob_coefficients
from alprbf.prbf.fast.gemm_blocks import _probe_rows, blocked_moments, gemm_k_blocks, k_partition
from tests.pinned import pinned_json, x86_only

CTS = ("full", "diag", "spherical")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # as every task runs (alprbf.engine.execution); the blocked E-step needs it
    with threadpool_limits(limits=1):
        yield


def test_no_blocks_while_the_blas_runs_several_threads():
    with threadpool_limits(limits=2):
        assert gemm_k_blocks(45, 270, 33, 8793) is None


def test_k_partition_follows_openblas_rule_by_hand():
    # blocks of Q while 2Q remain; then a rest above Q is halved, rounded up to U
    assert k_partition(200, 256, 4) == (0, 200)
    assert k_partition(300, 256, 4) == (0, 152, 300)          # 150 -> 152
    assert k_partition(600, 256, 4) == (0, 256, 428, 600)     # 344: 172, 172
    assert k_partition(700, 256, 4) == (0, 256, 480, 700)     # 444: 222 -> 224
    b = k_partition(8793, 256, 4)
    assert b[-4:] == (8192, 8448, 8620, 8793) and len(b) == 36
    assert all(hi - lo == 256 for lo, hi in pairwise(b[:-3]))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(512, 50_000), q=st.sampled_from([192, 256, 384]),
       u=st.sampled_from([4, 16]))
def test_probe_rows_have_every_block_size_of_the_real_rows(n, q, u):
    def sizes(b):
        return {hi - lo for lo, hi in pairwise(b)}
    assume(n >= 2 * q)                 # gemm_k_blocks asks no fewer rows
    probe = _probe_rows(n, q)
    assert 2 * q <= probe < 3 * q
    assert sizes(k_partition(n, q, u)) == sizes(k_partition(probe, q, u))
    assert k_partition(n, q, u)[-1] == n


def test_blocked_moments_is_the_whole_product_where_the_probe_says_so():
    rng = np.random.default_rng(0)
    a, rT = rng.normal(size=(13, 1500)), rng.random((37, 1500))
    bounds = gemm_k_blocks(13, 37, 9, 1500)
    if bounds is None:       # this BLAS splits differently: the E-step keeps whole products
        assert _any_size_blocks(_data(1500, 4, "diag"), 37) is None
        return
    assert np.array_equal(blocked_moments(a, rT, bounds), a @ rT.T)


def _data(n, d, ct, labeled=60, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(4, d))
    codes = rng.integers(0, 4, size=n)
    X = centers[codes] + rng.normal(size=(n, d))
    y = np.full(n, np.nan)
    y[:labeled] = codes[:labeled]
    return prepare_data(X, y, 4, ct)


def _any_size_blocks(data, m):
    """``e_step_blocks`` without its size floor (these test arrays are small)."""
    floor, blk.BLOCKED_MIN_ENTRIES = blk.BLOCKED_MIN_ENTRIES, 0
    try:
        return blk.e_step_blocks(data, m)
    finally:
        blk.BLOCKED_MIN_ENTRIES = floor


def _same(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _blocked_equals_whole(ct, n=1400):
    """Compare the blocked and whole E-steps of a few EM iterations; the blocks used."""
    data = _data(n, 5, ct)
    p = initialize_params(data, 9, reg_covar=1e-4, random_state=1)
    p = run_em(data, p, tol=0.0, max_iter=3, reg_covar=1e-4).params
    blocks = _any_size_blocks(data, 9)
    if blocks is None:
        return None
    got, want = blk.blocked_e_step(data, p, blocks), e_step(data, p)
    assert got.log_prob is None and got.resp is None
    for name in ("log_norm", "moments", "counts", "log_offsets"):
        assert _same(getattr(got, name), getattr(want, name)), name
    assert got.loglik == want.loglik and got.loglik_labeled == want.loglik_labeled
    return [int(b) for b in blocks[0]]


@pytest.mark.parametrize("ct", CTS)
def test_blocked_e_step_has_the_bits_of_e_step(ct):
    _blocked_equals_whole(ct)     # where this BLAS gives blocks (else None, checked below)


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@x86_only
def test_blocked_e_step_applies_under_the_kernels_every_command_pins():
    """In a process with the pinned kernels (alprbf.engine.cpu), the probe finds OpenBLAS's Haswell
    blocks (Q = 256, U = 4) and the blocked E-step equals the whole one for every type."""
    bounds = _pinned_results("_blocked_equals_whole")
    assert bounds == [list(k_partition(1400, 256, 4))] * 3


def _pinned_results(helper: str) -> list:
    """``[helper(ct) for ct in CTS]`` in a process with the kernels every command pins."""
    return pinned_json("test_prbf_blocked", f"[t.{helper}(ct) for ct in t.CTS]")


@pytest.mark.parametrize("ct", CTS)
def test_run_em_gives_the_same_bits_with_and_without_blocks(ct, monkeypatch):
    data = _data(1300, 4, ct, labeled=80, seed=2)
    monkeypatch.setattr(blk, "BLOCKED_MIN_ENTRIES", 0)       # these small arrays too
    f = data.features
    assert (blk.e_step_blocks(data, 7) is not None
            or gemm_k_blocks(f.weights_T.shape[0], 7, f.n_design, 1300) is None)

    def fit():
        return fit_em(data, 7, max_iter=25, reg_covar=1e-4, random_state=3)

    blocked = fit()
    monkeypatch.setattr(em, "e_step_blocks", lambda data, m: None)
    whole = fit()
    for a, b in [(blocked.params.means, whole.params.means),
                 (blocked.params.covariances, whole.params.covariances),
                 (blocked.params.weights, whole.params.weights),
                 (blocked.loglik_history, whole.loglik_history),
                 (blocked.estep.resp, whole.estep.resp),
                 (blocked.estep.log_prob, whole.estep.log_prob),
                 (blocked.estep.moments, whole.estep.moments)]:
        assert _same(a, b)
    assert blocked.n_iter == whole.n_iter and blocked.converged == whole.converged


def test_run_em_result_estep_is_whole_and_of_the_final_parameters(monkeypatch):
    monkeypatch.setattr(blk, "BLOCKED_MIN_ENTRIES", 0)
    data = _data(1100, 3, "diag", seed=4)
    p = initialize_params(data, 6, reg_covar=1e-4, random_state=0)
    res = run_em(data, p, tol=0.0, max_iter=4, reg_covar=1e-4)
    assert res.last_estep.resp is None or blk.e_step_blocks(data, 6) is None   # was blocked
    est = res.estep
    assert est.resp is not None and est.log_prob is not None
    np.testing.assert_allclose(est.resp.sum(axis=1), 1.0, rtol=1e-12)
    assert _same(est.resp, e_step(data, res.params).resp)
    assert res.estep is est                     # computed once
    assert est.loglik == res.loglik


def test_small_problems_keep_the_whole_e_step():
    data = _data(1000, 3, "diag")
    assert blk.e_step_blocks(data, 5) is None            # 1 000 x 11 entries: in cache
    assert blk.BLOCKED_MIN_ENTRIES > 11 * 1000


def test_m_step_of_a_blocked_e_step_needs_no_responsibilities_when_moments_are_accurate():
    from alprbf.prbf._gaussian import gaussian_parameters_and_precisions

    data = _data(900, 3, "full", seed=6)
    p = initialize_params(data, 5, reg_covar=1e-4, random_state=0)
    est = e_step(data, p)

    def never(comps):
        raise AssertionError("responsibilities read although no component needed them")

    got = gaussian_parameters_and_precisions(data.features, never, 1e-4, est.moments)
    want = gaussian_parameters_and_precisions(data.features, est.resp, 1e-4, est.moments)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def _collapsed_blocked_equals_whole(ct):
    """A component collapsed on a tight cluster far out (covariance floor 1e-12): rows beyond
    its accurate radius get direct log densities.  The blocked E-step gives the whole one's
    bits, keeps responsibility columns equal to the whole ``resp``'s, and the M-step from
    either (recomputing some covariances from those columns) gives the same parameters.
    Returns the number of direct entries, or None without blocks."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1400, 5))
    X[:60] = 40.0 + 1e-6 * rng.normal(size=(60, 5))     # a tight cluster far out
    y = np.full(1400, np.nan)
    y[:300] = rng.integers(0, 3, size=300)
    data = prepare_data(X, y, 3, ct)
    p = initialize_params(data, 9, reg_covar=1e-12, random_state=1)
    p = run_em(data, p, tol=0.0, max_iter=3, reg_covar=1e-12).params
    pc = p.precisions_cholesky
    _, muc, log_det = log_prob_coefficients(data.features, p.means, pc, ct)
    direct = direct_log_densities(data.features, muc, pc, ct, log_det)
    blocks = _any_size_blocks(data, 9)
    if blocks is None:
        return None
    got, want = blk.blocked_e_step(data, p, blocks), e_step(data, p)
    for name in ("log_norm", "moments", "counts"):
        assert _same(getattr(got, name), getattr(want, name)), name
    comps = np.array([2, 0, 8])
    assert got.resp_columns is not None
    cols = got.resp_columns(comps)
    assert all(cols[:, c].flags.c_contiguous for c in range(3))
    assert _same(cols, np.asfortranarray(want.resp[:, comps]))
    asked = []
    spy = replace(got, resp_columns=lambda c: asked.append(len(c)) or got.resp_columns(c))
    a, b = em.m_step(data, spy, p, 1e-12), em.m_step(data, want, p, 1e-12)
    for name in ("means", "covariances", "precisions_cholesky", "weights"):
        assert _same(getattr(a, name), getattr(b, name)), name
    assert asked, "the M-step recomputed no covariance: the case does not test resp_columns"
    # a blocked E-step that kept nothing: the M-step takes the whole E-step's columns
    bare = replace(got, resp_columns=None)
    c = em.m_step(data, bare, p, 1e-12)
    for name in ("means", "covariances", "precisions_cholesky", "weights"):
        assert _same(getattr(c, name), getattr(b, name)), name
    return int(len(direct[0]))


@pytest.mark.parametrize("ct", CTS)
def test_blocked_e_step_with_rows_beyond_the_accurate_radius(ct):
    _collapsed_blocked_equals_whole(ct)     # where this BLAS gives blocks


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@x86_only
def test_collapsed_components_keep_the_blocked_e_step_under_the_pinned_kernels():
    counts = _pinned_results("_collapsed_blocked_equals_whole")
    assert all(c is not None and c > 0 for c in counts), counts
