"""The E-step's normalisation in compiled loops: offsets, log-sum-exp, flushed exponentials.

:func:`normalize_with_offsets` computes, for the (M, n) log densities ``lpT`` of an E-step,

    w[j, i]   = lpT[j, i] + table[j, codes[i]]                  (log pi_jy or log w_j added)
    m[i]      = max_j w[j, i]     (0 where that is not finite)
    e[j, i]   = max(w[j, i] - m[i], CLIP)
    r[j, i]   = exp(e) if exp(e) >= FLUSH else 0                (FLUSH = exp(-460) ~ 1e-200)
    s[i]      = r[0, i] + r[1, i] + ... + r[M-1, i]             (in this order)
    log_norm  = m + log(s),   resp[j, i] = r[j, i] * (1 / s[i])  (1 / 1 where s[i] = 0)

Every floating-point operation is the one, in the order, of the NumPy expressions the E-step
used before (``take`` + ``add``, ``max(axis=0)``, ``subtract``, ``maximum``, ``exp``, the mask
product, ``sum(axis=0)``, ``multiply``), so the results are bit-identical to them (tested
against those expressions in ``tests/test_prbf_normalize.py``).  Two NumPy details are kept:

* NumPy sums the components of each row in order, except for a single row, which it sums
  pairwise; one row therefore still goes through the NumPy expressions;
* the exponentials and the logarithm are NumPy's: with its AVX-512 loops (a CPU that has
  them, without the pinned kernels of :mod:`alprbf.engine.cpu`) they round differently from the C
  library's.  Where NumPy calls the C library's ``exp`` (the pinned kernels), a compiled copy
  of it with the same bits does the exponentials (:mod:`~alprbf.prbf.fast.exp`).

What is gained (evidence: docs/history/notes.md, 'Fused E-step'):

* the element-wise chain runs in a few compiled passes per block of columns instead of about
  ten NumPy passes over the whole (M, n) arrays;
* no exponential is taken of an entry below ``CLIP``, whose result would be flushed anyway.
  Late in a QBC fold (pen digits, 270 components) 85 % of the entries are such, and their
  exponentials were the largest part of the E-step.  A block whose survivors are fewer than
  :func:`sparse_threshold` of its entries copies them to a buffer (eight at a time where the
  CPU can: :mod:`~alprbf.prbf.fast.compress`), takes their exponentials there and places them
  back; a denser block takes the exponentials of all its entries.  Which path a block takes
  is guessed from the block before it (the first is guessed dense); both give the same bits.
  Where the compiled ``exp`` applies, a block guessed sparse goes through all of that in one
  compiled call.  A caller that multiplies the responsibilities next can have a compacted
  block's left in the buffer instead of scattered among zeros (``sparse_below``;
  :mod:`~alprbf.prbf.fast.sparse_moments`); for such a caller a block is sparse below the larger
  of the two fractions, since its product over the survivors saves more than the compaction
  costs (docs/history/notes.md, 'Sparse or dense: the guess and its threshold').
* a caller that normalises many blocks can take the maxima and sums of each
  (``maxima_sums``) and form the log normaliser once (:func:`log_normaliser`): its NumPy
  calls cost about 30 us per call, against about 200 us for the rest of a late committee
  block's normalisation.
* when most rows share one offset column (unlabeled rows), the offsets are one broadcast
  addition plus a pass over the other rows, instead of a gather;
* the offset log densities ``w`` live in a buffer of one block of columns, not in an (M, n)
  array: an EM loop never reads them again, and writing them cost a pass over memory
  (:func:`weighted_logits` forms them, with the same bits, when they are wanted).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .._data import common_code
from ..reference import CLIP, FLUSH, log_normaliser, normalize, weighted_logits
from .compress import SLACK, row_compact, use_vector_compaction
from .exp import SCALE_BITS, TAIL, _exp_row, _row_in_range, exp_inplace, use_compiled_exp
from .timing import best_times

BLOCK_ENTRIES = 1 << 16
"""Entries (components x rows) per column block: 512 KiB per (M, block) array."""

MIN_COLUMNS = 512
"""Fewest rows per block (long enough inner loops for the vector units)."""

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


# Row kernels: one loop over a contiguous row of the (M, n) arrays, which LLVM vectorises (the
# loop-invariant flags are unswitched).  Block kernels call them component by component.

@_jit
def _store_max(w, m, i, v, first):  # pragma: no cover - compiled
    """``w[i] = v`` and the running maximum ``m[i]``; True for nan."""
    w[i] = v
    if first:
        m[i] = v
    else:
        m[i] = v if v > m[i] else m[i]
    return v != v


@_jit
def _row_offsets(lp, trow, codes, w, m, first):  # pragma: no cover - compiled
    nan = False
    for i in range(len(w)):
        nan |= _store_max(w, m, i, lp[i] + trow[codes[i]], first)
    return nan


@_jit
def _row_offset_common(lp, t, w, m, first):  # pragma: no cover - compiled
    nan = False
    for i in range(len(w)):
        nan |= _store_max(w, m, i, lp[i] + t, first)
    return nan


@_jit
def _row_shift(w, m, r):  # pragma: no cover - compiled
    """``r = max(w - m, CLIP)``; returns how many entries are above ``CLIP`` (or nan)."""
    k = 0
    for i in range(len(w)):
        e = w[i] - m[i]
        e = e if not e < CLIP else CLIP            # nan stays nan, as in np.maximum
        r[i] = e
        k += not e <= CLIP
    return k


@_jit
def _row_flush(r, s, first):  # pragma: no cover - compiled
    for i in range(len(r)):
        x = r[i]
        x = x if x >= FLUSH else x * 0.0           # the old mask product: 0 (nan stays nan)
        r[i] = x
        if first:
            s[i] = x
        else:
            s[i] += x


@_jit
def _row_scale(r, inv):  # pragma: no cover - compiled
    for i in range(len(r)):
        r[i] *= inv[i]


@_jit
def _offsets(lpT, table, codes, common, odd, wb, m, lo, hi):  # pragma: no cover - compiled
    """``wb[:, :hi-lo] = lpT[:, lo:hi] + table[:, codes[lo:hi]]`` and the column maxima
    ``m[lo:hi]`` (``wb`` holds one block of columns, so it stays in cache).

    With ``common >= 0`` every column is first given offset column ``common`` and the columns
    ``odd`` (sorted; those whose code differs) are then redone, maxima included.  Returns
    whether a nan was met (the caller then redoes the maxima with NumPy, which propagates it).
    """
    M = lpT.shape[0]
    w = hi - lo
    nan = False
    if common < 0:
        for j in range(M):
            nan |= _row_offsets(lpT[j, lo:hi], table[j], codes[lo:hi], wb[j, :w],
                                m[lo:hi], j == 0)
        return nan
    for j in range(M):
        nan |= _row_offset_common(lpT[j, lo:hi], table[j, common], wb[j, :w], m[lo:hi],
                                  j == 0)
    for t in range(np.searchsorted(odd, lo), np.searchsorted(odd, hi)):
        i = odd[t]
        c = codes[i]
        for j in range(M):
            v = lpT[j, i] + table[j, c]
            wb[j, i - lo] = v
            nan |= v != v
            if j == 0 or v > m[i]:
                m[i] = v
    return nan


@_jit
def _shift(wb, m, respT, lo, hi, buf, idx, starts, dense,
           vector):  # pragma: no cover - compiled
    """``e = max(wb - m, CLIP)`` on columns ``lo:hi`` (``wb`` holds those columns from 0, as
    :func:`_offsets` leaves them; ``m`` made finite first).  Returns how many entries are
    above ``CLIP`` (or nan).

    ``dense``: ``e`` into ``respT`` (a pass LLVM vectorises).  Otherwise only the entries
    above ``CLIP`` into ``buf``, in order, with their column offset in ``idx`` and each
    component's first index in ``starts`` (eight at a time with ``vector``:
    :mod:`~alprbf.prbf.fast.compress`)."""
    for i in range(lo, hi):
        if not math.isfinite(m[i]):
            m[i] = 0.0
    k = 0
    for j in range(wb.shape[0]):
        if dense:
            k += _row_shift(wb[j, :hi - lo], m[lo:hi], respT[j, lo:hi])
        else:
            starts[j] = k
            k = row_compact(wb[j, :hi - lo], m[lo:hi], buf, idx, k, CLIP, vector)
    starts[wb.shape[0]] = k
    return k


@_jit
def _normalize_dense(respT, lo, hi, s, inv):  # pragma: no cover - compiled
    """Exponentials already in ``respT``: flush, sum over the components in order into ``s``,
    divide by the sums."""
    for j in range(respT.shape[0]):
        _row_flush(respT[j, lo:hi], s[lo:hi], j == 0)
    for i in range(lo, hi):
        inv[i] = 1.0 / (s[i] if s[i] > 0 else 1.0)
    for j in range(respT.shape[0]):
        _row_scale(respT[j, lo:hi], inv[lo:hi])


@_jit
def _compacted_sums(lo, hi, buf, idx, starts, s, inv):  # pragma: no cover - compiled
    """Flush and sum the exponentials of the survivors in ``buf``, and ``inv = 1 / s``: every
    other entry is 0, so the sums add only the survivors (in component order per column;
    adding the zeros would change no bit: the sums start from 0.0 instead of the first term,
    which is the same)."""
    s[lo:hi] = 0.0
    for j in range(len(starts) - 1):
        for t in range(starts[j], starts[j + 1]):
            x = buf[t]
            x = x if x >= FLUSH else x * 0.0       # the old mask product: 0 (nan stays nan)
            buf[t] = x
            s[lo + idx[t]] += x
    for i in range(lo, hi):
        inv[i] = 1.0 / (s[i] if s[i] > 0 else 1.0)


@_jit
def _normalize_compacted(respT, lo, hi, buf, idx, starts, s, inv):  # pragma: no cover - compiled
    """:func:`_compacted_sums`, then the survivors divided by the sums into ``respT`` (every
    other entry 0)."""
    _compacted_sums(lo, hi, buf, idx, starts, s, inv)
    M = respT.shape[0]
    for j in range(M):
        respT[j, lo:hi] = 0.0
    for j in range(M):
        for t in range(starts[j], starts[j + 1]):
            i = lo + idx[t]
            respT[j, i] = buf[t] * inv[i]


@_jit
def _normalize_in_buffer(lo, hi, buf, idx, starts, s, inv):  # pragma: no cover - compiled
    """:func:`_compacted_sums`, then the survivors divided by the sums in ``buf`` (the
    values :func:`_normalize_compacted` writes to ``respT``)."""
    _compacted_sums(lo, hi, buf, idx, starts, s, inv)
    for j in range(len(starts) - 1):
        for t in range(starts[j], starts[j + 1]):
            buf[t] = buf[t] * inv[lo + idx[t]]


@_jit
def _compacted_block(lpT, table, codes, common, odd, wb, m, respT, lo, hi, buf, idx, starts, s,
                     inv, vector, leave_below, tail, scale_bits):  # pragma: no cover - compiled
    """Columns ``lo:hi`` the compacted way in one call, with the C library's ``exp``
    (:mod:`~alprbf.prbf.fast.exp`): offsets, shift and compaction, the exponentials of the
    survivors, sums, and the responsibilities -- left in ``buf`` when fewer than
    ``leave_below`` survive, else written to ``respT``.  Returns ``(done, left, k)``;
    ``done`` False (nothing kept) on a nan or an argument outside the compiled ``exp``'s
    range: the caller then takes the block the general way."""
    if _offsets(lpT, table, codes, common, odd, wb, m, lo, hi):
        return False, False, 0
    k = _shift(wb, m, respT, lo, hi, buf, idx, starts, False, vector)
    if not _row_in_range(buf[:k]):
        return False, False, k
    _exp_row(buf[:k], tail, scale_bits)
    if k < leave_below:
        _normalize_in_buffer(lo, hi, buf, idx, starts, s, inv)
        return True, True, k
    _normalize_compacted(respT, lo, hi, buf, idx, starts, s, inv)
    return True, False, k


class NormalizeWorkspace:
    """Buffers of :func:`normalize_with_offsets` kept from call to call, for an E-step taken
    one block of rows at a time (one call per block): they are allocated once, and the guess
    of whether a block is dense carries over from one call's last column block to the next
    call's first, where it would otherwise start at "dense" every time.

    Parameters
    ----------
    n_components : int
        ``M`` of every call.
    n_columns : int
        The most columns of any call.
    """

    def __init__(self, n_components: int, n_columns: int):
        M, n = n_components, n_columns
        self.n_components, self.n_columns = M, n
        self.cols = min(max(MIN_COLUMNS, BLOCK_ENTRIES // M), n)
        self.m, self.s, self.inv = np.empty(n), np.empty(n), np.empty(n)
        self.wb = np.empty((M, self.cols))         # the offset log densities of one block
        self.buf = np.empty(M * self.cols + SLACK)  # spare slots for the branch-free stores
        self.idx = np.empty(len(self.buf), dtype=np.int64)
        self.starts = np.empty(M + 1, dtype=np.int64)
        self.dense = True                          # the next block's guess

    def fits(self, n_components: int, n_columns: int) -> bool:
        return n_components == self.n_components and n_columns <= self.n_columns


def normalize_with_offsets(lpT: np.ndarray, table: np.ndarray, codes: np.ndarray,
                           respT: np.ndarray | None = None,
                           groups: tuple[int, np.ndarray] | None = None,
                           workspace: NormalizeWorkspace | None = None,
                           sparse_below: float = 0.0,
                           maxima_sums: tuple[np.ndarray, np.ndarray] | None = None
                           ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Log normaliser and flushed responsibilities of an E-step (see the module doc).

    The offset log densities ``w = lpT + table[:, codes]`` are formed one block of columns at a
    time and not kept (:func:`weighted_logits` gives them when wanted, with the same bits).

    Parameters
    ----------
    lpT : ndarray (M, n)
        Log densities ``log N(x_i; mu_j, Sigma_j)``, components by rows.
    table : ndarray (M, T)
        Log offsets; row ``i`` gets column ``codes[i]``.
    codes : ndarray (n,), int
        Column of ``table`` for each row, in ``0..T-1``.
    respT : ndarray (M, n), C-contiguous, optional
        Array to write the responsibilities into (allocated when not given).
    groups : (int, ndarray), optional
        :func:`common_code` of ``codes`` (computed when not given; an EM loop computes it once
        for all its E-steps).
    workspace : NormalizeWorkspace, optional
        Buffers to use (with ``M`` components and at least ``n`` columns); allocated for this
        call when not given.  The results do not depend on it.
    sparse_below : float
        With a ``workspace`` and ``n`` columns in one block (at most
        ``workspace.n_columns`` and one column block): if the block is compacted and fewer
        than this fraction of its entries survive the clip, ``respT`` is not written and
        ``None`` is returned for it; the responsibilities that may be non-zero are then in
        the workspace, component by component in column order: ``buf[t]`` for column
        ``idx[t]``, component ``j`` at ``starts[j]:starts[j + 1]`` (every other one is 0).
        0 (default): ``respT`` is always written.  A block then counts as sparse (for the
        guess of the next) below the larger of this fraction and :func:`sparse_threshold`:
        the caller's sparse product saves more than compacting costs.
    maxima_sums : (ndarray (n,), ndarray (n,)), optional
        Arrays to leave the column maxima ``m`` and sums ``s`` in; ``log_norm`` is then not
        formed (``None`` is returned for it): a caller that normalises many blocks forms it
        once over all its rows with :func:`log_normaliser`, with the same bits.

    Returns
    -------
    log_norm : ndarray (n,) or None
        ``log sum_j exp(w[j])`` (``-inf`` for a column that is all ``-inf``); ``None`` with
        ``maxima_sums``.
    respT : ndarray (M, n) or None
        ``exp(w - log_norm)`` with values below about 1e-200 flushed to 0; columns sum to 1
        (all zero for an all ``-inf`` column).  ``None`` when left in the workspace (see
        ``sparse_below``).
    """
    M, n = lpT.shape
    if M == 0:
        raise ValueError("normalize_with_offsets needs at least one component")
    table = np.ascontiguousarray(table, dtype=np.float64)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    if n == 1:
        m, s, respT = _single_row(lpT, table, codes, respT)
        if maxima_sums is None:
            return log_normaliser(m, s), respT
        maxima_sums[0][:], maxima_sums[1][:] = m, s
        return None, respT
    respT = np.empty((M, n)) if respT is None else respT
    if sparse_below and workspace is None:
        raise ValueError("sparse_below leaves the responsibilities in a workspace: give one")
    ws = workspace if workspace is not None else NormalizeWorkspace(M, n)
    if not ws.fits(M, n):
        raise ValueError(f"workspace for {ws.n_components} components and at most "
                         f"{ws.n_columns} columns, given {M} x {n}")
    m, s = (ws.m[:n], ws.s[:n]) if maxima_sums is None else maxima_sums
    inv = ws.inv[:n]
    wb, buf, idx, starts = ws.wb, ws.buf, ws.idx, ws.starts
    threshold, vector = sparse_threshold(), use_vector_compaction()
    compiled = use_compiled_exp()
    common, odd = common_code(codes) if groups is None else groups
    cols = min(ws.cols, n)
    leave = sparse_below * M * n if cols == n else 0.0
    limit = max(threshold, sparse_below) if leave else threshold
    dense = ws.dense                               # this block's guess
    for lo in range(0, n, cols):
        hi = min(n, lo + cols)
        if not dense and compiled:                 # the compacted way, in one call
            done, left, k = _compacted_block(lpT, table, codes, common, odd, wb, m, respT, lo,
                                             hi, buf, idx, starts, s, inv, vector, leave,
                                             TAIL, SCALE_BITS)
            if done:
                respT = None if left else respT
                dense = k >= limit * M * (hi - lo)
                continue
        if _offsets(lpT, table, codes, common, odd, wb, m, lo, hi):
            m[lo:hi] = wb[:, :hi - lo].max(axis=0)
        k = _shift(wb, m, respT, lo, hi, buf, idx, starts, dense, vector)
        if dense:                                  # the exponentials of every entry
            exp_inplace(respT, lo, hi)
            _normalize_dense(respT, lo, hi, s, inv)
        else:                                      # of the survivors only
            exp_inplace(buf[:k])
            if k < leave:
                _normalize_in_buffer(lo, hi, buf, idx, starts, s, inv)
                respT = None                       # left in the workspace
            else:
                _normalize_compacted(respT, lo, hi, buf, idx, starts, s, inv)
        dense = k >= limit * M * (hi - lo)         # the next block's guess
    ws.dense = dense
    return (log_normaliser(m, s) if maxima_sums is None else None), respT


def _single_row(lpT, table, codes, respT):
    """One row: NumPy sums a single column pairwise, not in component order; do as it does
    (the reference's NumPy expressions).  Returns the maximum, the sum and the
    responsibilities."""
    return normalize(weighted_logits(lpT, table, codes), out=respT)


@functools.cache
def sparse_threshold() -> float:
    """Surviving fraction below which compacting the arguments of ``exp`` pays, for this process.

    Compacting costs a pass over the entries (:mod:`~alprbf.prbf.fast.compress`) and an indexed
    store per survivor; it saves the
    exponentials of the entries that would be flushed.  NumPy's ``exp`` costs about 1 ns per
    value with its AVX-512 loop; where NumPy calls the C library's (AVX2 machines, and the
    pinned kernels of :mod:`alprbf.engine.cpu`) the compiled copy of it
    (:mod:`~alprbf.prbf.fast.exp`) costs about 1.6 ns; so the break-even point depends on the
    process.  It is
    measured once, on blocks of 16 x 1024 entries (:func:`~alprbf.prbf.fast.timing.best_times`):
    the dense path's time
    ``T_d`` and the compacted path's with no survivor ``T_0`` and with all surviving ``T_1``.
    Compacting a block with a fraction ``f`` of survivors costs about ``T_0 + f (T_1 - T_0)``,
    so it pays below ``f = (T_d - T_0) / (T_1 - T_0)``.  Either path gives bit-identical
    results; only speed depends on the measurement.
    """
    M, n = 16, 1024
    none = np.full((M, n), -1000.0)
    none[0] = 0.0
    every = np.linspace(-5.0, 0.0, M * n).reshape(M, n)
    m, s, inv = np.zeros(n), np.empty(n), np.empty(n)
    r = np.empty((M, n))
    buf = np.empty(M * n + SLACK)
    idx = np.empty(M * n + SLACK, dtype=np.int64)
    vector = use_vector_compaction()
    starts = np.empty(M + 1, dtype=np.int64)

    def dense():
        _shift(every, m, r, 0, n, buf, idx, starts, True, vector)
        exp_inplace(r)
        _normalize_dense(r, 0, n, s, inv)

    def compacted(w):
        k = _shift(w, m, r, 0, n, buf, idx, starts, False, vector)
        exp_inplace(buf[:k])
        _normalize_compacted(r, 0, n, buf, idx, starts, s, inv)

    t_d, t_0, t_1 = best_times((dense, lambda: compacted(none), lambda: compacted(every)))
    return min(1.0, max(0.0, (t_d - t_0) / max(t_1 - t_0, 1e-9)))
