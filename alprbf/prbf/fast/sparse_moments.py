"""The moments product of one block of rows over its surviving responsibilities only.

Why.  Late in a QBC fold most responsibilities are flushed to exactly 0 (87 % on pen digits,
270 components), yet the blocked E-step's moments product ``weights_T[:, lo:hi] @ respT.T``
(:func:`~alprbf.prbf.fast.blocked.blocked_e_step`) multiplies them all, and it was the largest
part of the iteration.  A block that the normalisation compacted already lists its survivors
per component, in row order (:mod:`~alprbf.prbf.fast.normalize`); the product over those alone
does a
fraction of the work, and the zeros need not be written at all.

How the bits are kept.  OpenBLAS's double-precision Haswell kernel (the one every ``alprbf``
command pins, :mod:`alprbf.engine.cpu`) computes each entry of a block's product (one block of the
inner dimension, at most 256 rows: :mod:`~alprbf.prbf.fast.gemm_blocks`) as one chain of fused
multiply-adds over the block's rows, in order, from zero, and then adds the chain to the
running sum (``C + acc``).  A term whose responsibility is 0 adds ``+-0`` to its chain and
changes no bit, so the chain over the survivors alone is the same number.  One exception: an
odd number of left rows leaves the last one to the kernel's ``4 x 1`` edge, which, for the
components in its groups of four (all but the last ``M mod 4``), keeps four chains -- rows
``0, 1, 2, 3 mod 4`` of the first ``8 floor(b / 8)`` on chains 0-3, the rest on chain 0 -- and
adds them as ``(c0 + c1) + (c2 + c3)``; :func:`moments_add` does the same for that row
(OpenBLAS ``kernel/x86_64/dgemm_kernel_4x8_haswell.S``, macros ``KERNEL4x1`` and
``SAVE4x1``).

How it is fast.  For each component, the chains of :data:`WIDTH` left rows at a time run in
twelve vector registers over the component's survivors (one load and one fused multiply-add
per four entries, nothing stored until the end): about 2 ns per survivor at 45 left rows,
against the BLAS product's 0.6 ns per entry, survivor or not (idle core, pinned kernels).  So
it pays below about a third of the entries surviving; the E-step uses it below
:data:`DENSITY_LIMIT`.  It reads the left operand by data rows (:func:`padded_rows`).

Where it is used.  Only where it is checked: :func:`sparse_moments_match` compares it with the
BLAS product, bit for bit, on random data of the caller's shape and block lengths, once per
shape and process; another BLAS, kernel or thread count gives ``False`` and the E-step keeps
the BLAS product.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

VECTORS = 12
"""Vector registers of accumulators (of the 16 AVX2 has; four doubles each)."""
WIDTH = 4 * VECTORS
"""Left rows whose chains run together."""
DENSITY_LIMIT = 0.3
"""Fraction of surviving entries below which the E-step takes this product instead of the
BLAS one (break-even measured at 0.3-0.4 for 45 to 2 028 left rows; either gives the
same bits)."""

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@intrinsic
def _chains(typingctx, out, flat, stride, offset, vals, idx, start, stop, split, unrolled):
    """With ``row(t) = idx[t] * stride + offset``: ``out[c]`` = the chain over
    ``t = start .. stop - 1`` of ``fma(flat[row(t) + c], vals[t], .)`` from 0, for
    ``c = 0 .. WIDTH - 1`` (``flat`` is read up to ``WIDTH`` past the last row), and
    ``out[WIDTH + r]`` the chain of ``fma(flat[row(t) + split], vals[t], .)`` over the ``t``
    with ``idx[t] mod 4 = r`` and ``idx[t] < unrolled``, the other ``t`` on ``r = 0`` (the
    ``4 x 1`` edge's four chains; one more vector register, beside the others' latency)."""
    def codegen(context, builder, signature, args):
        out_v, flat_v, stride_v, off_v, vals_v, idx_v, start_v, stop_v, split_v, unr_v = args
        tys = signature.args
        op, fp, vp, ip = (context.make_array(ty)(context, builder, v).data
                          for ty, v in ((tys[0], out_v), (tys[1], flat_v), (tys[4], vals_v),
                                        (tys[5], idx_v)))
        d, i32, i64 = ir.DoubleType(), ir.IntType(32), ir.IntType(64)
        v4 = ir.VectorType(d, 4)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v4, [v4, v4, v4]),
                                             "llvm.fma.v4f64")
        entry = builder.block
        head = builder.append_basic_block("chains.head")
        body = builder.append_basic_block("chains.body")
        done = builder.append_basic_block("chains.done")
        builder.branch(head)

        builder.position_at_end(head)                  # t and the accumulators
        t = builder.phi(i64)
        accs = [builder.phi(v4) for _ in range(VECTORS + 1)]
        t.add_incoming(start_v, entry)
        for acc in accs:
            acc.add_incoming(ir.Constant(v4, [0.0] * 4), entry)
        builder.cbranch(builder.icmp_signed("<", t, stop_v), body, done)

        builder.position_at_end(body)                  # one survivor: acc += row * v
        v = builder.load(builder.gep(vp, [t]))
        k = builder.load(builder.gep(ip, [t]))
        base = builder.add(builder.mul(k, stride_v), off_v)

        def splat(value, ty):
            lane0 = builder.insert_element(ir.Constant(ir.VectorType(ty, 4), None), value,
                                           ir.Constant(i32, 0))
            return builder.shuffle_vector(lane0, ir.Constant(ir.VectorType(ty, 4), None),
                                          ir.Constant(ir.VectorType(i32, 4), [0] * 4))

        vv = splat(v, d)
        new = []
        for u, acc in enumerate(accs[:VECTORS]):
            ptr = builder.gep(fp, [builder.add(base, ir.Constant(i64, 4 * u))])
            row = builder.load(builder.bitcast(ptr, v4.as_pointer()), align=8)
            new.append(builder.call(fma, [row, vv, acc]))
        # the split row: v on lane idx mod 4 (lane 0 past `unrolled`), +0 on the others,
        # which leaves their chains' bits as they are
        lane = builder.select(builder.icmp_signed("<", k, unr_v),
                              builder.and_(k, ir.Constant(i64, 3)), ir.Constant(i64, 0))
        on = builder.icmp_signed("==", splat(lane, i64),
                                 ir.Constant(ir.VectorType(i64, 4), [0, 1, 2, 3]))
        a = builder.load(builder.gep(fp, [builder.add(base, split_v)]))
        new.append(builder.call(fma, [splat(a, d), builder.select(on, vv, ir.Constant(
            v4, [0.0] * 4)), accs[VECTORS]]))
        t.add_incoming(builder.add(t, ir.Constant(i64, 1)), builder.block)
        for acc, value in zip(accs, new, strict=True):
            acc.add_incoming(value, builder.block)
        builder.branch(head)

        builder.position_at_end(done)                  # the chains into out[0:WIDTH]
        for u, acc in enumerate(accs):
            ptr = builder.gep(op, [ir.Constant(i64, 4 * u)])
            builder.store(acc, builder.bitcast(ptr, v4.as_pointer()), align=8)
        return context.get_dummy_value()

    sig = types.void(out, flat, types.int64, types.int64, vals, idx, types.int64, types.int64,
                     types.int64, types.int64)
    return sig, codegen


@_jit
def moments_add(total, flat, stride, lo, b, vals, idx, starts, chains,
                split_last):  # pragma: no cover - compiled
    """``total[:, j] += sum_t rows[lo + idx[t]] * vals[t]`` over ``t`` in
    ``starts[j]:starts[j + 1]`` for every component ``j``, with the BLAS kernel's bits (see the
    module doc); ``rows`` the data rows of the left operand, in ``flat`` (:func:`padded_rows`).

    Parameters
    ----------
    total : ndarray (P, M)
        Running sum of the moments product ``weights_T @ resp``.
    flat, stride : ndarray (n stride + WIDTH,), int
        :func:`padded_rows` of ``weights_T`` and its row stride (:func:`row_stride` of P).
    lo, b : int
        The block's first data row and its number of rows (at most one BLAS block).
    vals, idx, starts : ndarray
        The block's responsibilities that may be non-zero, component by component:
        ``vals[t]`` of block row ``idx[t]`` (increasing within a component), component ``j``
        at ``starts[j]`` to ``starts[j + 1]``.
    chains : ndarray (WIDTH + 4,)
        Scratch.
    split_last : bool
        Whether the last left row is the kernel's ``4 x 1`` edge (an odd number of rows).
    """
    P, M = total.shape
    q = P - 1 if split_last else P                 # left rows with one chain per entry
    grouped = 4 * (M // 4)                         # components of the 4 x 1 edge's groups
    main = 8 * (b // 8)                            # block rows of its unrolled loop
    for j in range(M):
        start, stop = starts[j], starts[j + 1]
        unrolled = main if j < grouped else 0
        for p0 in range(0, max(q, 1), WIDTH):
            _chains(chains, flat, stride, lo * stride + p0, vals, idx, start, stop, q - p0,
                    unrolled)
            for p in range(p0, min(q, p0 + WIDTH)):
                total[p, j] += chains[p - p0]
            if split_last and p0 + WIDTH >= q:     # the pass whose rows reach q
                c = chains[WIDTH:]
                total[q, j] += (c[0] + c[1]) + (c[2] + c[3])


def row_stride(p: int) -> int:
    """Doubles from one row of :func:`padded_rows` to the next: ``p`` rounded up to 8, so
    that every row starts on a 64-byte cache line (20 % faster than rows of 45 doubles)."""
    return -(-p // 8) * 8


def padded_rows(weights_T: np.ndarray) -> np.ndarray:
    """``weights_T.T`` (n, P) by rows of :func:`row_stride` doubles (zeros after the ``P``),
    flattened, 64-byte aligned, with :data:`WIDTH` zeros after it (the vector loads of the
    last row's last chains read past it)."""
    P, n = weights_T.shape
    stride = row_stride(P)
    size = n * stride + WIDTH
    raw = np.zeros(size + 8)
    start = (-raw.ctypes.data % 64) // 8
    flat = raw[start:start + size]
    flat[:n * stride].reshape(n, stride)[:, :P] = weights_T.T
    return flat


def features_padded_rows(features) -> np.ndarray:
    """:func:`padded_rows` of a :class:`~alprbf.prbf._gaussian.GaussianFeatures`'
    ``weights_T``, built on first use and kept in the instance (under the name of the cached
    property it was before, so that checkpoints pickled with it still load)."""
    flat = features.__dict__.get("padded_rows")
    if flat is None:
        flat = features.__dict__["padded_rows"] = padded_rows(features.weights_T)
    return flat


def compact(respT: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zeros of ``respT`` (M, b) as ``(vals, idx, starts)`` (component by component, in
    row order), the layout a compacted block leaves in its normalisation workspace."""
    M = respT.shape[0]
    starts = np.zeros(M + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(respT, axis=1), out=starts[1:])
    comp, idx = np.nonzero(respT)
    return respT[comp, idx].copy(), idx.astype(np.int64), starts


def sparse_moments_match(p: int, m: int, block_sizes: tuple[int, ...]) -> bool:
    """Whether :func:`moments_add` gives the bits of the blocked E-step's BLAS product
    (``total += weights_T[:, lo:hi] @ respT.T``), in this process, for ``p`` left rows, ``m``
    components and blocks of these lengths: checked once per shape on random data with about
    15 % of the responsibilities non-zero, some survivors 0 after all, and an indicator last
    row as the E-step's."""
    return _checked(p, m, tuple(sorted(set(block_sizes))))


@functools.lru_cache(maxsize=1024)
def _checked(p: int, m: int, block_sizes: tuple[int, ...]) -> bool:
    rng = np.random.default_rng(7919 * p + 104729 * m + sum(block_sizes))
    bounds = np.concatenate([[0], np.cumsum(block_sizes)]).astype(int)
    weights_T = rng.standard_normal((p, int(bounds[-1])))
    weights_T[-1] = rng.random(weights_T.shape[1]) < 0.5
    flat = padded_rows(weights_T)
    whole, sparse = np.zeros((p, m)), np.zeros((p, m))
    chains = np.empty(WIDTH + 4)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        respT = rng.random((m, hi - lo))
        respT[respT > 0.15] = 0.0
        vals, idx, starts = compact(respT)
        vals[::5] = 0.0                            # survivors flushed after all
        comp, col = np.nonzero(respT)
        respT[comp[::5], col[::5]] = 0.0
        whole += weights_T[:, lo:hi] @ respT.T
        moments_add(sparse, flat, row_stride(p), lo, hi - lo, vals, idx, starts, chains,
                    p % 2 == 1)
    return bool(np.array_equal(whole.view(np.uint64), sparse.view(np.uint64)))
