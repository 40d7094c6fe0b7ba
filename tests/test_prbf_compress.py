"""The eight-lane compaction of surviving entries against the one-entry loop and a NumPy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alprbf.prbf.fast import compress as _compress
from alprbf.prbf.fast.compress import SLACK, row_compact
from alprbf.prbf.reference import CLIP


def oracle(w, m):
    """Survivors of ``max(w - m, CLIP)`` (``not e <= CLIP``: above it, or nan), their indices."""
    e = w - m
    e = np.where(e < CLIP, CLIP, e)
    keep = ~(e <= CLIP)
    return e[keep], np.flatnonzero(keep)


def values(rng, n, p_keep):
    """Entries around the clip: survivors, flushed ones, exact boundary values, -inf and nan."""
    w = np.where(rng.random(n) < p_keep, rng.uniform(-460.9, 0.0, n),
                 rng.uniform(-2000.0, -461.0, n))
    special = rng.random(n)
    w[special < 0.05] = CLIP
    w[(special >= 0.05) & (special < 0.08)] = -np.inf
    w[(special >= 0.08) & (special < 0.10)] = np.nan
    w[(special >= 0.10) & (special < 0.12)] = np.nextafter(CLIP, 0.0)
    return w


def bits(a):
    return np.ascontiguousarray(a).view(np.int64)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 70), start=st.integers(0, 9), p_keep=st.sampled_from([0.0, 0.1, 0.9, 1.0]),
       seed=st.integers(0, 2**32 - 1))
def test_both_forms_give_the_oracle(n, start, p_keep, seed):
    rng = np.random.default_rng(seed)
    w = values(rng, n, p_keep)
    m = np.where(rng.random(n) < 0.5, 0.0, rng.uniform(-3.0, 3.0, n))
    want_e, want_i = oracle(w, m)
    for vector in (True, False):
        buf = np.full(start + n + SLACK, 7.0)
        idx = np.full(start + n + SLACK, -1, dtype=np.int64)
        k = row_compact(w, m, buf, idx, start, CLIP, vector)
        assert k == start + len(want_e)
        np.testing.assert_array_equal(bits(buf[start:k]), bits(want_e))
        np.testing.assert_array_equal(idx[start:k], want_i)
        assert (buf[:start] == 7.0).all() and (idx[:start] == -1).all()   # before k untouched


def test_choice_is_measured_once():
    first = _compress.use_vector_compaction()
    assert isinstance(first, bool)
    assert _compress.use_vector_compaction() is first


@pytest.mark.slow   # left out of make test-quick; make test and CI run it
def test_lane_by_lane_form_where_the_cpu_has_no_compress_instruction(tmp_path):
    """Numba compiling for a CPU without AVX-512 (the host's features with every AVX-512 one
    turned off) takes the lane-by-lane stores, which LLVM's own expansion of the intrinsic
    would abort in; they give the oracle's values."""
    import json
    import os
    import subprocess
    import sys

    from llvmlite import binding as llvm

    w = [0.0, -500.0, -1.0, np.nan, -np.inf, -460.0, -2.0, -900.0, -3.0, -4.0]
    features = ",".join(("-" if name.startswith("avx512") else ("+" if on else "-")) + name
                        for name, on in llvm.get_host_cpu_features().items())
    script = (
        "import json, numpy as np\n"
        "from alprbf.prbf.fast import compress as _compress\n"
        "from alprbf.prbf.reference import CLIP\n"
        f"w = np.array([float(x) for x in {[repr(x) for x in w]!r}])\n"
        "m = np.zeros_like(w)\n"
        "buf = np.full(len(w) + _compress.SLACK, 7.0)\n"
        "idx = np.full(len(w) + _compress.SLACK, -1, dtype=np.int64)\n"
        "k = _compress.row_compact(w, m, buf, idx, 0, CLIP, True)\n"
        "print(json.dumps([_compress.compress_instruction(), repr(buf[:k].tolist()),"
        " idx[:k].tolist()]))\n")
    env = {**os.environ, "NUMBA_CPU_FEATURES": features, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    has_compress, values, index = json.loads(out.stdout)
    want_e, want_i = oracle(np.array(w), np.zeros(len(w)))
    assert has_compress is False
    assert values == repr(want_e.tolist()) and index == want_i.tolist()
