"""Where the BLAS matrix product splits its inner dimension, so that an E-step can follow it.

Why.  An EM iteration on ``n`` rows makes three passes over (M, n) arrays: the log-density
product writes them, the normalisation reads and rewrites them, and the moments product
(``weights_T @ resp``, inner dimension ``n``) reads them again.  Late in a QBC fold (270
components, 8 800 rows) those arrays are 19 MB each, and the passes over memory are a large part
of the iteration.  Done one block of rows at a time, the three steps run on data in cache and
the (M, n) arrays need not be written at all -- but only if the blocked products give the bits of
the whole ones, because those bits fix every recorded result.

How the bits are kept.  A BLAS ``gemm`` (OpenBLAS's level-3 driver) walks the inner dimension
in blocks: each block's products are accumulated from zero in the micro-kernel and then added to
``C`` (``C + acc``), block after block.  Products over those same blocks, added one after the
other to a running sum, therefore give the same bits as the whole product; and a product on a
block of output columns gives the bits of those columns of the whole product when the block
starts on a multiple of the kernel's unroll.  OpenBLAS's rule: blocks of ``Q`` while at least
``2 Q`` remain, then the rest halved (rounded up to a multiple of the unroll ``U``) when it
exceeds ``Q`` (``driver/level3/level3.c``; ``Q = 256``, ``U = 4`` for its Haswell double
kernel, which every ``alprbf`` command pins, :mod:`alprbf.engine.cpu`).

Threads.  With more than one thread, OpenBLAS splits a product with few outputs along its
inner dimension too (measured: 13 x 37 outputs over 1 500 rows, 2 threads), so the blocked form
is used only while the BLAS runs one thread -- as every task does (:mod:`alprbf.engine.execution`).

Where it is used.  Only where it is checked: :func:`gemm_k_blocks` compares the blocked and
whole products, both orientations the E-step uses, on random data of the caller's shape (with
between ``2 Q`` and ``3 Q`` rows that give blocks of every size the real ones have), once per
shape and process, for each candidate ``(Q, U)``; it returns the partition of the first
candidate that matches bit for bit, or ``None`` (then the E-step keeps its whole products).
"""

from __future__ import annotations

import functools
from itertools import pairwise

import numpy as np
from threadpoolctl import ThreadpoolController

CANDIDATES: tuple[tuple[int, int], ...] = ((256, 4), (384, 16), (320, 4), (192, 4), (512, 16))
"""``(Q, U)`` pairs tried in order: OpenBLAS's double-precision Haswell/Zen kernel first, then
block sizes of its other x86-64 kernels."""


def k_partition(n: int, q: int, u: int) -> tuple[int, ...]:
    """Bounds ``0 = b_0 < b_1 < ... = n`` of OpenBLAS's blocks of an inner dimension ``n``."""
    bounds = [0]
    done = 0
    while done < n:
        size = n - done
        if size >= 2 * q:
            size = q
        elif size > q:
            size = ((size // 2 + u - 1) // u) * u
        done += size
        bounds.append(done)
    return tuple(bounds)


def blocked_moments(a: np.ndarray, bT: np.ndarray, bounds: tuple[int, ...]) -> np.ndarray:
    """``a @ bT.T`` (P, M) as a running sum of products over the blocks ``bounds`` of the
    inner dimension (``a`` (P, n), ``bT`` (M, n), both C-contiguous)."""
    out = np.zeros((a.shape[0], bT.shape[0]))
    for lo, hi in pairwise(bounds):
        out += a[:, lo:hi] @ np.ascontiguousarray(bT[:, lo:hi]).T
    return out


def _matches(p: int, m: int, q_design: int, n: int, bounds: tuple[int, ...]) -> bool:
    rng = np.random.default_rng(n + 7919 * m + 104729 * p)
    a = rng.standard_normal((p, n))
    rT = rng.random((m, n))
    rT[rT < 0.5] = 0.0                      # responsibilities: many exact zeros
    if not np.array_equal(a @ rT.T, blocked_moments(a, rT, bounds)):
        return False
    coef = rng.standard_normal((m, q_design))
    z = rng.standard_normal((q_design, n))
    whole = coef @ z
    for lo, hi in pairwise(bounds):
        if not np.array_equal(whole[:, lo:hi], coef @ z[:, lo:hi]):
            return False
    return True


def gemm_k_blocks(p: int, m: int, q_design: int, n: int) -> tuple[int, ...] | None:
    """Blocks of rows for a blocked E-step that gives the bits of the whole one, or ``None``.

    Parameters
    ----------
    p : int
        Rows of the moments product's left operand (``weights_T``: design, norms, extras).
    m : int
        Components.
    q_design : int
        Design rows of the log-density product (its inner dimension).
    n : int
        Data rows (the moments product's inner dimension).

    Returns
    -------
    tuple of int or None
        Bounds of the blocks (see :func:`k_partition`) for the first candidate ``(Q, U)`` whose
        blocked products equal the whole ones, in this process, for this shape; ``None`` for
        fewer than ``2 Q`` rows (one or two blocks: nothing to gain) or a BLAS running more
        than one thread.
    """
    if not blas_single_threaded():
        return None
    for q, u in CANDIDATES:
        if n >= 2 * q and _checked(p, m, q_design, _probe_rows(n, q), q, u):
            return k_partition(n, q, u)
    return None


def blas_single_threaded() -> bool:
    """Whether every BLAS loaded in this process (NumPy's among them) runs one thread."""
    return all(lib.num_threads == 1 for lib in _controller().lib_controllers)


def blas_openblas_haswell() -> bool:
    """Whether every BLAS loaded in this process is OpenBLAS running its Haswell kernels (the
    ones every ``alprbf`` command pins, :mod:`alprbf.engine.cpu`)."""
    libs = [lib for lib in _controller().lib_controllers if lib.user_api == "blas"]
    return bool(libs) and all(lib.internal_api == "openblas"
                              and getattr(lib, "architecture", None) == "Haswell"
                              for lib in libs)


@functools.cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()      # the libraries loaded by now, NumPy's BLAS included


def _probe_rows(n: int, q: int) -> int:
    """A number of rows in ``[2 Q, 3 Q)`` whose blocks have every size that ``n``'s have
    (one ``Q``, then the same last one or two)."""
    return 2 * q + (n - 2 * q) % q


@functools.lru_cache(maxsize=1024)
def _checked(p: int, m: int, q_design: int, n: int, q: int, u: int) -> bool:
    return _matches(p, m, q_design, n, k_partition(n, q, u))
