"""Compaction of an E-step's surviving entries, eight at a time in vector registers.

:func:`~alprbf.prbf._normalize.normalize_with_offsets` takes the exponentials of a sparse
block (late in a QBC fold 88 % of its entries are flushed) only for the entries that survive
the clip: it copies them, with their column, to a buffer first.  One entry at a time that copy
is a chain of dependent stores, about 1.1 ns per entry, the largest single cost of such a
block.  Here eight entries are shifted, clipped and compared at once, and LLVM's
``llvm.experimental.vector.compress`` packs the survivors to the front of a register, which is
stored whole at the buffer's end (its unused lanes are overwritten by the next store or never
read): about 0.5 ns per entry where the CPU has a compress instruction (AVX-512).  Elsewhere
LLVM expands the intrinsic lane by lane; :func:`use_vector_compaction` therefore times both
forms once per process and keeps the faster.  Both copy the same values to the same places:
only speed depends on the choice.

The buffers need :data:`SLACK` spare slots past the last possible survivor.
"""

from __future__ import annotations

import functools
import time

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

CLIP = -461.0
"""The clip of :mod:`~alprbf.prbf._normalize` (``FLUSH_LOG - 1``)."""

LANES = 8
SLACK = LANES
"""Spare buffer slots the vector stores need past the last survivor."""

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


def _compress_codegen(context, builder, signature, args, shifted: bool):
    """IR for the two intrinsics below: ``e = max(w - m, CLIP)`` (or ``e = w`` when not
    ``shifted``) on lanes ``i .. i+7``, and the lanes with ``e > CLIP`` (or nan) stored, in
    order, at ``buf[k:]`` with their index at ``idx[k:]``; returns ``k`` plus their count."""
    if shifted:
        w_v, m_v, i_v, buf_v, idx_v, k_v = args
        tys = signature.args
        arrays = [(tys[0], w_v), (tys[1], m_v), (tys[3], buf_v), (tys[4], idx_v)]
    else:
        w_v, i_v, buf_v, idx_v, k_v = args
        tys = signature.args
        arrays = [(tys[0], w_v), (tys[2], buf_v), (tys[3], idx_v)]
    ptrs = [context.make_array(ty)(context, builder, v).data for ty, v in arrays]
    d, i64, i32 = ir.DoubleType(), ir.IntType(64), ir.IntType(32)
    v8d, v8i = ir.VectorType(d, LANES), ir.VectorType(i64, LANES)
    v8b = ir.VectorType(ir.IntType(1), LANES)

    def load(p):
        return builder.load(builder.bitcast(builder.gep(p, [i_v]), v8d.as_pointer()), align=8)

    def store(vec, p, vty):
        builder.store(vec, builder.bitcast(builder.gep(p, [k_v]), vty.as_pointer()), align=8)

    clip = ir.Constant(v8d, [CLIP] * LANES)
    if shifted:
        wp, mp, bp, ip = ptrs
        e = builder.fsub(load(wp), load(mp))
        e = builder.select(builder.fcmp_ordered("<", e, clip), clip, e)  # nan stays nan
    else:
        wp, bp, ip = ptrs
        e = load(wp)
    keep = builder.fcmp_unordered(">", e, clip)                          # not e <= CLIP
    first = builder.insert_element(ir.Constant(v8i, None), i_v, ir.Constant(i32, 0))
    splat = builder.shuffle_vector(first, ir.Constant(v8i, None),
                                   ir.Constant(ir.VectorType(i32, LANES), [0] * LANES))
    index = builder.add(splat, ir.Constant(v8i, list(range(LANES))))
    module = builder.module
    pack_d = cgutils.get_or_insert_function(module, ir.FunctionType(v8d, [v8d, v8b, v8d]),
                                            "llvm.experimental.vector.compress.v8f64")
    pack_i = cgutils.get_or_insert_function(module, ir.FunctionType(v8i, [v8i, v8b, v8i]),
                                            "llvm.experimental.vector.compress.v8i64")
    store(builder.call(pack_d, [e, keep, ir.Constant(v8d, None)]), bp, v8d)
    store(builder.call(pack_i, [index, keep, ir.Constant(v8i, None)]), ip, v8i)
    popcount = cgutils.get_or_insert_function(module, ir.FunctionType(ir.IntType(8),
                                                                      [ir.IntType(8)]),
                                              "llvm.ctpop.i8")
    count = builder.call(popcount, [builder.bitcast(keep, ir.IntType(8))])
    return builder.add(k_v, builder.zext(count, i64))


@intrinsic
def _shift_compress8(typingctx, w, m, i, buf, idx, k):
    """Lanes ``i .. i+7`` of ``max(w - m, CLIP)`` compacted to ``buf[k:]``, ``idx[k:]``."""
    def codegen(context, builder, signature, args):
        return _compress_codegen(context, builder, signature, args, shifted=True)
    return types.int64(w, m, types.int64, buf, idx, types.int64), codegen


@intrinsic
def _compress8(typingctx, w, i, buf, idx, k):
    """Lanes ``i .. i+7`` of ``w`` (already shifted and clipped) compacted likewise."""
    def codegen(context, builder, signature, args):
        return _compress_codegen(context, builder, signature, args, shifted=False)
    return types.int64(w, types.int64, buf, idx, types.int64), codegen


@_jit
def row_compact(w, m, buf, idx, k, vector):  # pragma: no cover - compiled
    """The entries of ``max(w - m, CLIP)`` above ``CLIP`` (or nan) into ``buf[k:]``, in
    order, with their index in ``idx``; returns the new ``k``.  ``vector``: eight at a time
    (``buf`` and ``idx`` then need :data:`SLACK` spare slots)."""
    head = 0                                       # entries done eight at a time
    if vector:
        while head + LANES <= len(w):
            k = _shift_compress8(w, m, head, buf, idx, k)
            head += LANES
    for i in range(head, len(w)):
        e = w[i] - m[i]
        e = e if not e < CLIP else CLIP            # nan stays nan, as in np.maximum
        buf[k] = e                                 # written always, kept only if counted
        idx[k] = i                                 # (no branch to mispredict)
        k += not e <= CLIP
    return k


@_jit
def row_gather(r, buf, idx, k, vector):  # pragma: no cover - compiled
    """:func:`row_compact` of entries already shifted and clipped (``r``)."""
    head = 0                                       # entries done eight at a time
    if vector:
        while head + LANES <= len(r):
            k = _compress8(r, head, buf, idx, k)
            head += LANES
    for i in range(head, len(r)):
        e = r[i]
        buf[k] = e
        idx[k] = i
        k += not e <= CLIP
    return k


@functools.cache
def use_vector_compaction() -> bool:
    """Whether the eight-lane compaction is faster than the one-entry loop on this CPU
    (best of five on 64 rows of 1 024 entries, a tenth surviving); both give the same
    results."""
    rng = np.random.default_rng(0)
    w = np.where(rng.random((64, 1024)) < 0.1, -1.0, -1000.0)
    m = np.zeros(1024)
    buf = np.empty(w.size + SLACK)
    idx = np.empty(w.size + SLACK, dtype=np.int64)

    def timed(vector: bool) -> float:
        best = np.inf
        for _ in range(5):
            t0 = time.perf_counter()
            k = 0
            for row in w:
                k = row_compact(row, m, buf, idx, k, vector)
            best = min(best, time.perf_counter() - t0)
        return best

    timed(True), timed(False)                      # compile and warm up
    return timed(True) < timed(False)
