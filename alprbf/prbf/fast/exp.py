"""The C library's ``exp``, compiled: the same bits as glibc's, a third of the time.

Why.  Every ``alprbf`` command pins NumPy to its AVX2 loops (:mod:`alprbf.engine.cpu`), and there
NumPy's float64 ``exp`` calls the C library's ``exp`` once per value: 4-5 ns, the largest
element-wise cost of an E-step whose responsibilities are not mostly flushed.  Since glibc
2.28, ``exp`` is the table-driven algorithm of ARM's optimized-routines (``e_exp.c``), and on a
CPU with FMA the C library runs a build of it whose multiply-adds are fused.  This module does
the same operations, fused at the same places, in a compiled loop: about 1.6 ns per value, and
bit-identical to the C library's (the algorithm is exactly rounded step by step, with no
dependence on the instruction set beyond the fused multiply-add, which IEEE 754 defines).

The algorithm, for ``x`` in the main range (2^-54 <= |x| < 512)::

    kd' = fma(x, N/ln2, 1.5 * 2^52)        k = round(x N / ln2) sits in the low bits of kd'
    kd  = kd' - 1.5 * 2^52
    r   = fma(kd, -ln2hi/N, x);  r = fma(kd, -ln2lo/N, r)        |r| <= ln2 / 2N
    exp(x) = 2^(k/N) exp(r) ~= s + s * (t_i + r + r^2 (C2 + r C3) + r^4 (C4 + r C5))

with ``N = 128``, ``i = k mod N``, ``s = 2^(k/N)`` rounded (its bits: table entry plus ``k``
shifted into the exponent) and ``t_i`` the relative error of that rounding.  The table is built
here from its definition (``2^(i/128)`` to 60 digits) and equals glibc's entry for entry.

Where it is used.  Only where it equals what NumPy would compute: :func:`use_compiled_exp`
compares it with ``np.exp`` once per process on 65 536 arguments.  With NumPy's own AVX-512
``exp`` (a CPU that has it, kernels not pinned) the two differ in about 5 % of the values,
and NumPy's stays.  Arguments outside ``(-512, 0]`` (or nan) are left to ``np.exp`` too.
"""

from __future__ import annotations

import functools
import struct
from decimal import Decimal, localcontext

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

N_TABLE = 128
INV_LN2_N = float.fromhex("0x1.71547652b82fep+7")         # N / ln 2
NEG_LN2_HI_N = float.fromhex("-0x1.62e42fefa0000p-8")     # -ln 2 / N, high part
NEG_LN2_LO_N = float.fromhex("-0x1.cf79abc9e3b3ap-47")    # -ln 2 / N, low part
SHIFT = float.fromhex("0x1.8p52")                         # rounds to an integer when added
C2 = float.fromhex("0x1.ffffffffffdbdp-2")
C3 = float.fromhex("0x1.555555555543cp-3")
C4 = float.fromhex("0x1.55555cf172b91p-5")
C5 = float.fromhex("0x1.1111167a4d017p-7")
LOWEST = -512.0
"""Arguments at or below this (and nan) are not computed here (the C library's special cases
start at |x| >= 512)."""


def _table() -> tuple[np.ndarray, np.ndarray]:
    """``t_i`` and the bits of ``2^(i/N)`` minus ``i`` in the exponent field, i = 0..N-1."""
    tail = np.empty(N_TABLE)
    bits = np.empty(N_TABLE, dtype=np.uint64)
    with localcontext() as ctx:
        ctx.prec = 60
        for i in range(N_TABLE):
            exact = Decimal(2) ** (Decimal(i) / Decimal(N_TABLE))
            scale = float(exact)                            # correctly rounded
            tail[i] = float((exact - Decimal(scale)) / Decimal(scale))
            bits[i] = struct.unpack("<Q", struct.pack("<d", scale))[0] - (i << 45)
    return tail, bits


TAIL, SCALE_BITS = _table()


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _bits(typingctx, x):
    """The bits of a float64 as uint64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


@intrinsic
def _from_bits(typingctx, u):
    """The float64 with these bits."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.uint64), codegen


_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def _row_in_range(a):  # pragma: no cover - compiled
    ok = True
    for i in range(len(a)):
        x = a[i]
        ok &= (x > LOWEST) & (x <= 0.0)
    return ok


@_jit
def _in_range(a, lo, hi):  # pragma: no cover - compiled
    """Whether every value of columns ``lo:hi`` of the 2-D ``a`` is in ``(LOWEST, 0]``
    (False for nan)."""
    ok = True
    for j in range(a.shape[0]):
        ok &= _row_in_range(a[j, lo:hi])
    return ok


@_jit
def _exp_row(a, tail, scale_bits):  # pragma: no cover - compiled
    """``exp`` in place on a contiguous row, every value in ``(LOWEST, 0]`` (the C library's
    operations)."""
    mask = np.uint64(N_TABLE - 1)
    for i in range(len(a)):
        x = a[i]
        kd = fma(x, INV_LN2_N, SHIFT)
        ki = _bits(kd)
        kd = kd - SHIFT
        r = fma(kd, NEG_LN2_HI_N, x)
        r = fma(kd, NEG_LN2_LO_N, r)
        k = ki & mask
        p23 = fma(r, C3, C2)
        t = r + tail[k]
        scale = _from_bits(scale_bits[k] + (ki << np.uint64(45)))
        r2 = r * r
        p45 = fma(r, C5, C4)
        t = fma(p23, r2, t)
        t = fma(r2 * r2, p45, t)
        a[i] = fma(scale, t, scale)


@_jit
def _exp_columns(a, lo, hi, tail, scale_bits):  # pragma: no cover - compiled
    for j in range(a.shape[0]):
        _exp_row(a[j, lo:hi], tail, scale_bits)


def compiled_exp(a: np.ndarray, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """The C library's ``exp`` of columns ``lo:hi`` of a C-contiguous float64 array (1-D or
    2-D), in place, with its bits; returns ``a``.

    Arguments outside ``(LOWEST, 0]`` send the whole block to ``np.exp`` (the C library's
    only where NumPy calls it: see :func:`use_compiled_exp`).
    """
    rows = a.reshape(1, -1) if a.ndim == 1 else a
    hi = rows.shape[1] if hi is None else hi
    if _in_range(rows, lo, hi):
        _exp_columns(rows, lo, hi, TAIL, SCALE_BITS)
    else:
        block = rows[:, lo:hi]
        np.exp(block, out=block)
    return a


@functools.cache
def use_compiled_exp() -> bool:
    """Whether :func:`compiled_exp` gives ``np.exp``'s bits in this process.

    Checked once, on 65 536 arguments spread over ``[-461, 0]`` (the E-step's range) and
    tiny ones; NumPy's AVX-512 ``exp`` differs from the C library's in about 5 % of them.
    """
    rng = np.random.default_rng(20261125)
    probe = np.concatenate([np.linspace(-461.0, 0.0, 16384), rng.uniform(-461.0, 0.0, 32768),
                            -np.logspace(-17.0, 0.0, 16384)])
    ours = compiled_exp(probe.copy())
    return bool(np.array_equal(ours.view(np.uint64), np.exp(probe).view(np.uint64)))


def exp_inplace(a: np.ndarray, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """``np.exp`` of columns ``lo:hi`` of ``a`` in place, bit for bit, by
    :func:`compiled_exp` where that gives the same bits (:func:`use_compiled_exp`)."""
    if use_compiled_exp():
        return compiled_exp(a, lo, hi)
    block = (a.reshape(1, -1) if a.ndim == 1 else a)[:, lo:hi]
    np.exp(block, out=block)
    return a
