"""The moments product over a block's survivors (alprbf.prbf.fast.sparse_moments): the BLAS
product's bits where the probe says so, and a blocked E-step that uses it keeps them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

import alprbf.prbf.fast.blocked as blocked
import alprbf.prbf.fast.sparse_moments as sm
from alprbf.prbf import e_step, initialize_params, prepare_data, run_em
from tests.pinned import pinned_json, x86_only


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield


def _sparse(rng, m, b, density):
    respT = rng.random((m, b))
    respT[respT > density] = 0.0
    return respT


def _same(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 9), b=st.integers(1, 40), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**32 - 1))
def test_compact_lists_the_non_zeros_by_component_in_row_order(m, b, density, seed):
    respT = _sparse(np.random.default_rng(seed), m, b, density)
    vals, idx, starts = sm.compact(respT)
    rebuilt = np.zeros_like(respT)
    for j in range(m):
        cols = idx[starts[j]:starts[j + 1]]
        assert np.all(np.diff(cols) > 0)
        rebuilt[j, cols] = vals[starts[j]:starts[j + 1]]
    assert np.array_equal(rebuilt, respT) and starts[-1] == np.count_nonzero(respT)


def test_padded_rows_are_the_data_rows_then_zeros():
    w = np.arange(12.0).reshape(3, 4)
    flat = sm.padded_rows(w)
    assert sm.row_stride(3) == 8 and flat.shape == (4 * 8 + sm.WIDTH,)
    assert flat.ctypes.data % 64 == 0
    rows = flat[:32].reshape(4, 8)
    assert np.array_equal(rows[:, :3], w.T) and not rows[:, 3:].any() and not flat[32:].any()


def _moments(p, m, blocks, density, seed, explicit_zeros=False):
    """moments_add over random blocks; the dense product beside it."""
    rng = np.random.default_rng(seed)
    n = sum(blocks)
    w = rng.normal(size=(p, n))
    flat = sm.padded_rows(w)
    total, dense = np.zeros((p, m)), np.zeros((p, m))
    chains = np.empty(sm.WIDTH + 4)
    lo = 0
    for b in blocks:
        respT = _sparse(rng, m, b, density)
        dense += w[:, lo:lo + b] @ respT.T
        if explicit_zeros:           # every entry listed, the zeros included
            vals, idx = respT.ravel().copy(), np.tile(np.arange(b), m)
            starts = np.arange(0, m * b + 1, b)
        else:
            vals, idx, starts = sm.compact(respT)
        sm.moments_add(total, flat, sm.row_stride(p), lo, b, vals, idx, starts, chains,
                       p % 2 == 1)
        lo += b
    return total, dense


@settings(max_examples=30, deadline=None)
@given(p=st.integers(1, 120), m=st.integers(1, 11),
       blocks=st.lists(st.integers(1, 256), min_size=1, max_size=3),
       density=st.floats(0.0, 0.6), seed=st.integers(0, 2**32 - 1))
def test_moments_add_is_the_product_and_zeros_change_no_bit(p, m, blocks, density, seed):
    """The survivors alone give the dense product (to round-off), and listing the zero
    responsibilities too changes no bit (a chain's ``+-0`` terms are exact)."""
    total, dense = _moments(p, m, blocks, density, seed)
    np.testing.assert_allclose(total, dense, rtol=1e-12, atol=1e-12)
    with_zeros, _ = _moments(p, m, blocks, density, seed, explicit_zeros=True)
    assert _same(total, with_zeros)


def test_probe_is_false_for_one_component_where_numpy_takes_a_vector_product():
    assert not sm.sparse_moments_match(45, 1, (256, 131))


def _late_data(n=1400, d=3, k=4, seed=0):
    """Many tight, separate clusters: most responsibilities flush to 0, as late in QBC."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-40.0, 40.0, size=(40, d))
    which = rng.integers(0, 40, size=n)
    X = centers[which] + 0.5 * rng.normal(size=(n, d))
    y = np.full(n, np.nan)
    y[:200] = which[:200] % k
    return X, y, k


def _blocked_sparse_equals_whole(ct):
    """A blocked E-step in the sparse regime against the whole one, bit for bit; how many
    blocks took the sparse product."""
    X, y, k = _late_data()
    data = prepare_data(X, y, k, ct)
    p = initialize_params(data, 40, reg_covar=1e-4, random_state=0)
    p = run_em(data, p, tol=0.0, max_iter=5, reg_covar=1e-4).params
    floor, blocked.BLOCKED_MIN_ENTRIES = blocked.BLOCKED_MIN_ENTRIES, 0
    try:
        blocks = blocked.e_step_blocks(data, 40)
    finally:
        blocked.BLOCKED_MIN_ENTRIES = floor
    if blocks is None:
        return None
    calls = []
    real = blocked.moments_add
    blocked.moments_add = lambda *a: calls.append(1) or real(*a)
    try:
        got = blocked.blocked_e_step(data, p, blocks)
    finally:
        blocked.moments_add = real
    want = e_step(data, p)
    for name in ("log_norm", "moments", "counts"):
        assert _same(getattr(got, name), getattr(want, name)), name
    assert got.loglik == want.loglik
    return len(calls)


@pytest.mark.parametrize("ct", ("full", "diag", "spherical"))
def test_blocked_e_step_with_sparse_moments_has_the_bits_of_e_step(ct):
    _blocked_sparse_equals_whole(ct)    # sparse where this BLAS passes the probe


def _broken_kernel_is_refused():
    """A kernel without the 4 x 1 edge's four chains fails the probe (odd left rows)."""
    real = sm.moments_add

    def one_chain(total, flat, stride, lo, b, vals, idx, starts, chains, split_last):
        real(total, flat, stride, lo, b, vals, idx, starts, chains, False)

    sm._checked.cache_clear()
    sm.moments_add = one_chain
    try:
        return sm.sparse_moments_match(45, 270, (256, 131))
    finally:
        sm.moments_add = real
        sm._checked.cache_clear()


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@x86_only
def test_sparse_moments_apply_under_the_kernels_every_command_pins():
    """With the pinned kernels the probe passes for the E-step's shapes (odd and even left
    rows, more than WIDTH of them, components not a multiple of 4, short last blocks), the
    blocked E-step takes the sparse product and keeps the whole one's bits, and a kernel
    without the edge's four chains is refused."""
    probes, calls, broken = pinned_json("test_prbf_sparse_moments", "t._pinned_checks()")
    assert probes == [True] * 6
    assert all(c is not None and c >= 3 for c in calls), calls
    assert broken is False


@pytest.mark.slow
@x86_only
def test_run_em_gives_the_same_bits_with_and_without_sparse_moments():
    """Under the pinned kernels, EM with the sparse product follows the BLAS product's path
    bit for bit (histories and parameters)."""
    assert pinned_json("test_prbf_sparse_moments", "t._run_em_both()") == [True, True]


def _pinned_checks():
    """The shape probes, the blocked E-step's sparse products and the broken kernel's refusal
    (for the pinned-kernels test above)."""
    probes = [sm.sparse_moments_match(p, m, (256, 255, 133))
              for p, m in ((45, 270), (44, 269), (165, 150), (137, 271), (2028, 20), (3, 5))]
    calls = [_blocked_sparse_equals_whole(ct) for ct in ("full", "diag", "spherical")]
    return [probes, calls, _broken_kernel_is_refused()]


def _run_em_both():
    X, y, k = _late_data(n=2600)
    results = []
    with threadpool_limits(1):
        for sparse in (True, False):
            data = prepare_data(X, y, k, "diag")
            p = initialize_params(data, 40, reg_covar=1e-4, random_state=0)
            floor, blocked.BLOCKED_MIN_ENTRIES = blocked.BLOCKED_MIN_ENTRIES, 0
            limit = blocked.DENSITY_LIMIT
            blocked.DENSITY_LIMIT = limit if sparse else 0.0
            try:
                results.append(run_em(data, p, tol=0.0, max_iter=12, reg_covar=1e-4))
            finally:
                blocked.BLOCKED_MIN_ENTRIES, blocked.DENSITY_LIMIT = floor, limit
    a, b = results
    same_history = _same(a.loglik_history, b.loglik_history)
    same_params = all(_same(getattr(a.params, f), getattr(b.params, f))
                      for f in ("means", "covariances", "weights", "class_priors"))
    return [bool(same_history), bool(same_params)]
