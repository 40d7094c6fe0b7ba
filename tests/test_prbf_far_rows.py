"""The direct log densities of far rows: the compiled form against the NumPy one, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import alprbf.prbf.fast.far_rows as g
from alprbf.prbf._gaussian import GaussianFeatures, direct_log_densities, log_det_cholesky
from alprbf.prbf.fast.far_rows import FarRowDensities, compiled_far_rows_match
from tests.pinned import x86_only


def _case(seed, n, d, M, ct):
    """Data at mixed scales and components of mixed precision, some nearly collapsed (a small
    accurate radius: many far rows) and some broad (none)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-2.0, 3.0, d))
    f = GaussianFeatures(X, ct, max_bytes=0)
    means = X[rng.integers(0, n, M)] + 0.01 * rng.standard_normal((M, d))
    tight = np.exp(rng.uniform(0.0, 12.0, M)) * (rng.random(M) < 0.7)
    if ct == "diag":
        pc = np.exp(rng.uniform(-1.0, 2.0, (M, d)))
        pc[np.arange(M), rng.integers(0, d, M)] += tight
    else:
        pc = np.exp(rng.uniform(-1.0, 2.0, M)) + tight
    return f, means - f.center, pc, log_det_cholesky(pc, ct, d)


def _written(f, muc, pc, ct, log_det, bounds, compiled):
    out = np.full((len(muc), f.n_samples), -7.0)              # left alone where not far
    direct = FarRowDensities(f, muc, pc, ct, log_det, compiled=compiled)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        block = np.ascontiguousarray(out[:, lo:hi])
        direct.write(block, lo, hi)
        out[:, lo:hi] = block
    return out, bool(direct)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 90), d=st.integers(1, 70),
       M=st.integers(1, 6), ct=st.sampled_from(["diag", "spherical"]),
       cuts=st.lists(st.integers(1, 89), max_size=4))
def test_compiled_far_rows_have_the_bits_of_direct_log_densities(seed, n, d, M, ct, cuts):
    f, muc, pc, log_det = _case(seed, n, d, M, ct)
    bounds = sorted({0, n, *(c for c in cuts if c < n)})
    got, any_far = _written(f, muc, pc, ct, log_det, bounds, compiled=True)
    # the oracle: NumPy's per-component form, scattered into the same array
    comps, rows, values = direct_log_densities(f, muc, pc, ct, log_det)
    want = np.full((M, n), -7.0)
    want[comps, rows] = values
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    assert any_far == (len(comps) > 0)
    fallback, _ = _written(f, muc, pc, ct, log_det, bounds, compiled=False)
    assert np.array_equal(fallback.view(np.uint64), want.view(np.uint64))


def test_the_cases_have_far_rows_and_near_ones():
    counts = []
    for seed in range(5):
        f, muc, pc, log_det = _case(seed, 80, 9, 5, "diag")
        counts.append(len(direct_log_densities(f, muc, pc, "diag", log_det)[0]))
    assert all(0 < c < 80 * 5 for c in counts), counts


@x86_only
def test_the_compiled_form_is_taken_on_x86_64():
    assert all(compiled_far_rows_match(d) for d in (1, 2, 7, 8, 9, 16, 62, 64, 65))


def test_the_check_rejects_another_summation_order(monkeypatch):
    def pairwise_sum(outT, lo, by_norm, Xc, norms, far, limit, muc, scale, spherical, const,
                     log_det):
        for j in far:                                          # np.sum's order, not einsum's
            rows = by_norm[norms[by_norm] > limit[j]]
            y = (Xc[rows] - muc[j]) * (1.0 if spherical else scale[j])
            q = np.sum(y[:, ::-1] * y[:, ::-1], axis=1)
            if spherical:
                q = scale[j, 0] * scale[j, 0] * q
            outT[j, rows - lo] = -0.5 * (const + q) + log_det[j]

    monkeypatch.setattr(g, "write_far", pairwise_sum)
    assert not compiled_far_rows_match.__wrapped__(64)


def test_full_covariances_stay_on_the_numpy_form(monkeypatch):
    def refuse(*args):
        raise AssertionError("write_far called for full covariances")

    monkeypatch.setattr(g, "write_far", refuse)
    rng = np.random.default_rng(3)
    f = GaussianFeatures(rng.standard_normal((40, 4)), "full")
    muc = 0.01 * rng.standard_normal((3, 4))
    pc = np.stack([np.eye(4) * 1e6] * 3)
    log_det = log_det_cholesky(pc, "full", 4)
    got = np.zeros((3, 40))
    FarRowDensities(f, muc, pc, "full", log_det).write(got, 0, 40)
    comps, rows, values = direct_log_densities(f, muc, pc, "full", log_det)
    want = np.zeros((3, 40))
    want[comps, rows] = values
    assert len(comps) == 120 and np.array_equal(got, want)
