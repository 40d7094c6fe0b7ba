"""The sparse weighted squared deviations: the documented summation order, NumPy's bits where
checked, and the M-step's covariances unchanged by them."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import alprbf.prbf._gaussian as g
import alprbf.prbf.fast.sparse_variance as sv
from tests.pinned import pinned_json, x86_only


def _fma(a, b, c):
    return float(Fraction(a) * Fraction(b) + Fraction(c))      # rounded once


def _documented_order(Xc, mu, r, strided):
    """The module docstring's order, written out in plain Python floats."""
    n, d = Xc.shape
    sq = (Xc - mu) * (Xc - mu)
    d4 = d - d % 4
    y = [0.0] * d
    for a in range(d4):
        i = 0
        while i + 4 <= n:
            even = _fma(sq[i + 2, a], r[i + 2], sq[i, a] * r[i])
            odd = _fma(sq[i + 3, a], r[i + 3], sq[i + 1, a] * r[i + 1])
            y[a] = y[a] + (even + odd)
            i += 4
        if n - i >= 2 and not strided:
            y[a] = y[a] + (sq[i, a] * r[i] + sq[i + 1, a] * r[i + 1])
            i += 2
        for k in range(i, n):
            y[a] = y[a] + sq[k, a] * r[k]
    for a in range(d4, d):
        t = 0.0
        for k in range(n):
            t = t + sq[k, a] * r[k]
        y[a] = y[a] + t
    return np.array(y)


def _random_case(rng, n, d, strided, zeros=0.6):
    Xc = rng.standard_normal((n, d)) * np.exp(rng.uniform(-3.0, 3.0, d))
    mu = 0.1 * rng.standard_normal(d)
    r = np.zeros((n, 3))[:, 1] if strided else np.zeros(n)
    r[:] = rng.random(n) * (rng.random(n) >= zeros)
    r[: 4 * (n // 8)] = 0.0                              # whole groups of zeros, skipped
    return Xc, mu, r


@pytest.mark.parametrize("strided", [False, True])
def test_the_kernel_adds_in_the_documented_order(strided):
    rng = np.random.default_rng(5)
    for n in range(1, 14):
        for d in range(4, 10):
            Xc, mu, r = _random_case(rng, n, d, strided, zeros=0.3)
            got = sv.weighted_squared_deviations(Xc, mu, r, strided, np.empty(d))
            want = _documented_order(Xc, mu, r, strided)
            assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), (n, d)


def _numpy_agreement(seed=0):
    """(shapes checked by sparse_variance_match, shapes whose random cases all equal NumPy's
    product) over n = 1..37 and 4 493..4 496 rows, d in 4, 5, 7, 16, 19, 64, both strides."""
    rng = np.random.default_rng(seed)
    checked = agreed = 0
    for n in [*range(1, 38), 4493, 4494, 4495, 4496]:
        for d in (4, 5, 7, 16, 19, 64):
            for strided in (False, True):
                if not sv.sparse_variance_match(n, d, strided):
                    continue
                checked += 1
                same = True
                for _ in range(3):
                    Xc, mu, r = _random_case(rng, n, d, strided)
                    want = r @ ((Xc - mu) * (Xc - mu))
                    got = sv.weighted_squared_deviations(Xc, mu, r, strided, np.empty(d))
                    same &= np.array_equal(got.view(np.uint64), want.view(np.uint64))
                agreed += bool(same)
    return checked, agreed


def test_where_checked_the_kernel_has_numpys_bits():
    checked, agreed = _numpy_agreement()
    assert agreed == checked


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@x86_only
def test_under_the_pinned_kernels_every_shape_is_taken_and_agrees():
    assert pinned_json("test_prbf_sparse_variance", "t._numpy_agreement()") == [41 * 6 * 2] * 2


def test_the_check_rejects_another_summation_order(monkeypatch):
    def reversed_rows(Xc, mu, r, strided, out):
        out[:] = r[::-1] @ ((Xc[::-1] - mu) * (Xc[::-1] - mu))
        return out

    monkeypatch.setattr(sv, "weighted_squared_deviations", reversed_rows)
    assert not sv.sparse_variance_match.__wrapped__(4496, 64, False)
    assert not sv.sparse_variance_match.__wrapped__(100, 3, False)      # too narrow: never


def _collapsed_m_step(ct):
    """Covariances of the M-step with nearly collapsed components, with and without the
    sparse squares: (same bits, number of components that took them)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(900, 6))
    X[:40] = 25.0 + 1e-7 * rng.normal(size=(40, 6))            # a tight cluster far out
    f = g.GaussianFeatures(X, ct)
    resp = rng.random((900, 5)) * (rng.random((900, 5)) < 0.3)
    resp[:40] = 0.0
    resp[:40, 2] = 1.0                                           # component 2 on the cluster
    resp[40:, 2] = 0.0
    resp[rng.integers(40, 900, 3), 2] = 1e-9                     # a few far stragglers
    calls = []
    original, match = sv.weighted_squared_deviations, sv.sparse_variance_match

    def counted(*args):
        calls.append(1)
        return original(*args)

    sv.weighted_squared_deviations = counted
    try:
        sparse = g.gaussian_parameters_and_precisions(f, resp, 1e-12, None,
                                                     sv.sparse_squared_deviations)
        used = len(calls)
        sv.sparse_variance_match = lambda *a: False
        dense = g.gaussian_parameters_and_precisions(f, resp, 1e-12, None,
                                                     sv.sparse_squared_deviations)
    finally:
        sv.weighted_squared_deviations, sv.sparse_variance_match = original, match
    same = all(np.array_equal(a, b) for a, b in zip(sparse, dense, strict=True))
    return bool(same), used


@pytest.mark.parametrize("ct", ["diag", "spherical"])
def test_the_m_step_gives_the_same_covariances_either_way(ct):
    same, _ = _collapsed_m_step(ct)
    assert same


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@x86_only
def test_the_m_step_takes_the_sparse_squares_under_the_pinned_kernels():
    results = pinned_json("test_prbf_sparse_variance",
                          "[t._collapsed_m_step(ct) for ct in ('diag', 'spherical')]")
    assert all(same and used > 0 for same, used in results), results
