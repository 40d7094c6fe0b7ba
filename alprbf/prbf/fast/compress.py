"""Compaction of an E-step's surviving entries, eight at a time in vector registers.

:func:`~alprbf.prbf.fast.normalize.normalize_with_offsets` takes the exponentials of a sparse
block (late in a QBC fold 88 % of its entries are flushed) only for the entries that survive
the clip: it copies them, with their column, to a buffer first.  One entry at a time that copy
is a chain of dependent stores, about 1.1 ns per entry, the largest single cost of such a
block.  Here eight entries are shifted, clipped and compared at once, and LLVM's
``llvm.experimental.vector.compress`` packs the survivors to the front of a register, which is
stored whole at the buffer's end (its unused lanes are overwritten by the next store or never
read): about 0.5 ns per entry where the CPU has a compress instruction (AVX-512).  Elsewhere
the eight lanes are stored one by one (:func:`compress_instruction`).
:func:`use_vector_compaction` times both forms once per process and keeps the faster.  Both
copy the same values to the same places: only speed depends on the choice.

The buffers need :data:`SLACK` spare slots past the last possible survivor.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .timing import best_times

LANES = 8
SLACK = LANES
"""Spare buffer slots the vector stores need past the last survivor."""

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@intrinsic
def _shift_compress8(typingctx, w, m, i, buf, idx, k, clip):
    """``e = max(w - m, clip)`` on lanes ``i .. i+7``; the lanes with ``e > clip`` (or nan)
    stored, in order, at ``buf[k:]`` with their index at ``idx[k:]`` (eight slots written);
    returns ``k`` plus their count."""
    def codegen(context, builder, signature, args):
        w_v, m_v, i_v, buf_v, idx_v, k_v, clip_v = args
        tys = signature.args
        wp, mp, bp, ip = (context.make_array(ty)(context, builder, v).data
                          for ty, v in ((tys[0], w_v), (tys[1], m_v), (tys[3], buf_v),
                                        (tys[4], idx_v)))
        d, i64, i32 = ir.DoubleType(), ir.IntType(64), ir.IntType(32)
        v8d, v8i = ir.VectorType(d, LANES), ir.VectorType(i64, LANES)
        v8b = ir.VectorType(ir.IntType(1), LANES)
        lane0 = ir.Constant(i32, 0)
        zeros = ir.Constant(ir.VectorType(i32, LANES), [0] * LANES)

        def splat(value, vty):
            first = builder.insert_element(ir.Constant(vty, None), value, lane0)
            return builder.shuffle_vector(first, ir.Constant(vty, None), zeros)

        def load(p):
            return builder.load(builder.bitcast(builder.gep(p, [i_v]), v8d.as_pointer()),
                                align=8)

        def store(vec, p, vty):
            builder.store(vec, builder.bitcast(builder.gep(p, [k_v]), vty.as_pointer()),
                          align=8)

        c = splat(clip_v, v8d)
        e = builder.fsub(load(wp), load(mp))
        e = builder.select(builder.fcmp_ordered("<", e, c), c, e)         # nan stays nan
        keep = builder.fcmp_unordered(">", e, c)                           # not e <= clip
        index = builder.add(splat(i_v, v8i), ir.Constant(v8i, list(range(LANES))))
        module = builder.module
        if not compress_instruction():             # lane by lane, as the one-entry loop
            k = k_v
            for lane in range(LANES):
                at = ir.Constant(i32, lane)
                builder.store(builder.extract_element(e, at), builder.gep(bp, [k]))
                builder.store(builder.extract_element(index, at), builder.gep(ip, [k]))
                k = builder.add(k, builder.zext(builder.extract_element(keep, at), i64))
            return k
        pack_d = cgutils.get_or_insert_function(module, ir.FunctionType(v8d, [v8d, v8b, v8d]),
                                                "llvm.experimental.vector.compress.v8f64")
        pack_i = cgutils.get_or_insert_function(module, ir.FunctionType(v8i, [v8i, v8b, v8i]),
                                                "llvm.experimental.vector.compress.v8i64")
        store(builder.call(pack_d, [e, keep, ir.Constant(v8d, None)]), bp, v8d)
        store(builder.call(pack_i, [index, keep, ir.Constant(v8i, None)]), ip, v8i)
        i8 = ir.IntType(8)
        popcount = cgutils.get_or_insert_function(module, ir.FunctionType(i8, [i8]),
                                                  "llvm.ctpop.i8")
        count = builder.call(popcount, [builder.bitcast(keep, i8)])
        return builder.add(k_v, builder.zext(count, i64))

    return types.int64(w, m, types.int64, buf, idx, types.int64, types.float64), codegen


@_jit
def row_compact(w, m, buf, idx, k, clip, vector):  # pragma: no cover - compiled
    """The entries of ``max(w - m, clip)`` above ``clip`` (or nan) into ``buf[k:]``, in
    order, with their index in ``idx``; returns the new ``k``.  ``vector``: eight at a time
    (``buf`` and ``idx`` then need :data:`SLACK` spare slots)."""
    head = 0                                       # entries done eight at a time
    if vector:
        while head + LANES <= len(w):
            k = _shift_compress8(w, m, head, buf, idx, k, clip)
            head += LANES
    for i in range(head, len(w)):
        e = w[i] - m[i]
        e = e if not e < clip else clip            # nan stays nan, as in np.maximum
        buf[k] = e                                 # written always, kept only if counted
        idx[k] = i                                 # (no branch to mispredict)
        k += not e <= clip
    return k


@functools.cache
def compress_instruction() -> bool:
    """Whether numba compiles for a CPU with AVX-512 (``vcompresspd``), where the intrinsic
    is one instruction.  Elsewhere :func:`_shift_compress8` stores lane by lane: LLVM's own
    expansion of the intrinsic for AVX2 aborts in the LLVM that llvmlite 0.50 ships (an
    assertion in ``SelectionDAG::getConstant``, seen on an AMD EPYC, Zen 3).  Follows
    ``NUMBA_CPU_FEATURES`` where it is set, as numba's code generation does."""
    if numba.config.CPU_FEATURES is not None:
        return "+avx512f" in numba.config.CPU_FEATURES.split(",")
    return bool(llvm.get_host_cpu_features().get("avx512f", False))


@functools.cache
def use_vector_compaction() -> bool:
    """Whether the eight-lane compaction is faster than the one-entry loop on this CPU
    (:func:`~alprbf.prbf.fast.timing.best_times` on 64 rows of 1 024 entries, a tenth surviving,
    clip -461); both give the same results."""
    rng = np.random.default_rng(0)
    w = np.where(rng.random((64, 1024)) < 0.1, -1.0, -1000.0)
    m = np.zeros(1024)
    buf = np.empty(w.size + SLACK)
    idx = np.empty(w.size + SLACK, dtype=np.int64)

    def compact(vector: bool) -> None:
        k = 0
        for row in w:
            k = row_compact(row, m, buf, idx, k, -461.0, vector)

    vector, scalar = best_times((lambda: compact(True), lambda: compact(False)))
    return vector < scalar
