"""The compiled copy of the C library's exp (alprbf.prbf.fast.exp) against the C library itself."""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alprbf.prbf.fast import exp as _exp


def glibc_fma_exp() -> bool:
    """Whether math.exp is glibc's (>= 2.28, the algorithm copied) on a CPU with FMA, where
    glibc runs the fused build of it."""
    name, version = platform.libc_ver()
    if name != "glibc" or tuple(int(v) for v in version.split(".")[:2]) < (2, 28):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " fma " in flags or " fma\n" in flags


needs_glibc = pytest.mark.skipif(not glibc_fma_exp(),
                                 reason="the oracle is glibc's exp on a CPU with FMA")


def libm_exp(a: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.exp, 1, 1)(a).astype(np.float64)


def test_table_is_two_to_the_i_over_128():
    scales = (_exp.SCALE_BITS + (np.arange(128, dtype=np.uint64) << np.uint64(45))).view(
        np.float64)
    want = 2.0 ** (np.arange(128) / 128.0)
    np.testing.assert_allclose(scales, want, rtol=2.3e-16)
    assert scales[0] == 1.0 and _exp.TAIL[0] == 0.0
    assert np.all(np.abs(_exp.TAIL) <= 2.0**-53)         # the rounding error, relative


@needs_glibc
def test_same_bits_as_the_c_library_over_the_e_step_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-461.0, 0.0, 400_000), -np.logspace(-20, 2.7, 100_000),
                        np.linspace(-511.999, 0.0, 100_000), [-0.0, 0.0, -2.0**-54, -2.0**-60,
                                                             -461.0, -460.0, -1e-300]])
    got = _exp.compiled_exp(x.copy())
    np.testing.assert_array_equal(got.view(np.uint64), libm_exp(x).view(np.uint64))


@needs_glibc
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=-511.9999, max_value=0.0), min_size=1, max_size=50))
def test_same_bits_as_the_c_library_property(values):
    x = np.array(values)
    np.testing.assert_array_equal(_exp.compiled_exp(x.copy()).view(np.uint64),
                                  libm_exp(x).view(np.uint64))


def test_arguments_outside_the_range_go_to_numpy():
    x = np.array([-0.5, np.nan, -600.0, 1.0, -np.inf, np.inf])
    got = _exp.compiled_exp(x.copy())
    want = np.exp(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


def test_a_block_of_columns_is_done_in_place_and_alone():
    a = np.array([[-1.0, -2.0, 5.0, -7.0], [-3.0, -4.0, -5.0, -8.0]])
    b = a.copy()
    _exp.compiled_exp(b, 0, 2)                           # in range: compiled
    _exp.compiled_exp(a, 1, 3)                           # 5.0: NumPy for the whole block
    np.testing.assert_allclose(b[:, :2], np.exp([[-1.0, -2.0], [-3.0, -4.0]]), rtol=1e-15)
    np.testing.assert_array_equal(b[:, 2:], [[5.0, -7.0], [-5.0, -8.0]])
    np.testing.assert_array_equal(a[:, 1:3], np.exp([[-2.0, 5.0], [-4.0, -5.0]]))
    np.testing.assert_array_equal(a[:, [0, 3]], [[-1.0, -7.0], [-3.0, -8.0]])


@pytest.mark.parametrize("compiled", [False, True])
def test_exp_inplace_follows_the_choice(monkeypatch, compiled):
    monkeypatch.setattr(_exp, "use_compiled_exp", lambda: compiled)
    x = np.linspace(-400.0, 0.0, 1001).reshape(7, 143)
    want = x.copy()
    want[:, 3:90] = (_exp.compiled_exp if compiled else np.exp)(x[:, 3:90].copy())
    np.testing.assert_array_equal(_exp.exp_inplace(x.copy(), 3, 90), want)


def test_the_choice_is_made_once_and_is_a_bool():
    first = _exp.use_compiled_exp()
    assert isinstance(first, bool) and _exp.use_compiled_exp() is first


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
@needs_glibc
def test_the_pinned_kernels_use_the_compiled_exp():
    # every alprbf command pins NumPy to its AVX2 loops, where np.exp is the C library's
    code = ("from alprbf.engine import cpu; cpu.pin_kernels(); "
            "from alprbf.prbf.fast.exp import use_compiled_exp; print(use_compiled_exp())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ})
    assert out.stdout.strip() == "True"
