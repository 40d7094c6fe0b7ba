"""The E-step one block of rows at a time, for the E-steps an EM loop takes between M-steps.

:func:`blocked_e_step` gives :func:`~alprbf.prbf._estep.e_step`'s bits without its (n, M)
arrays: the log densities, the normalisation and the moments product run block by block on
data in cache, with the blocks of the BLAS product's inner dimension
(:mod:`~alprbf.prbf.fast.gemm_blocks`), and blocks with few surviving responsibilities take the
moments product over the survivors alone (:mod:`~alprbf.prbf.fast.sparse_moments`).  The
measurements behind it are in ``docs/history/notes.md`` ('Blocked E-step', 'Sparse moments
product').
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np

from .._data import PRBFData, common_code
from .._gaussian import log_prob_coefficients
from .._params import PRBFParams
from ..reference import EStep, finish_e_step, log_normaliser, mixture_weights, offset_table
from .far_rows import FarRowDensities
from .gemm_blocks import gemm_k_blocks
from .normalize import NormalizeWorkspace, normalize_with_offsets
from .sparse_moments import (
    DENSITY_LIMIT,
    WIDTH,
    features_padded_rows,
    moments_add,
    row_stride,
    sparse_moments_match,
)


def blocked_e_step(data: PRBFData, params: PRBFParams,
                   blocks: tuple[tuple[int, ...], list] | None,
                   workspace: NormalizeWorkspace | None = None) -> EStep | None:
    """:func:`~alprbf.prbf._estep.e_step` one block of rows at a time, without its (n, M)
    arrays; same bits.

    The log densities, the normalisation and the moments product run block by block on data
    in cache, and the (n, M) log densities and responsibilities are never written (the
    returned E-step has ``log_prob = resp = None``): an EM loop reads only the moments, class
    counts and likelihood of the E-steps between its M-steps.  The blocks are those of the
    BLAS product's inner dimension, so that the blocked products give the whole ones' bits
    (:mod:`~alprbf.prbf.fast.gemm_blocks`).

    Parameters
    ----------
    data : PRBFData
    params : PRBFParams
    blocks : (bounds, groups) from :func:`e_step_blocks`, or None
    workspace : NormalizeWorkspace, optional
        The normalisation's buffers (``M`` components, columns for the widest block), kept by
        an EM loop from one E-step to the next so that its guess of a sparse first block
        carries over too (:func:`blocked_workspace`); allocated when not given.  The results
        do not depend on it.

    Returns
    -------
    EStep or None
        ``None`` when the blocked form does not apply (no blocks): call
        :func:`~alprbf.prbf._estep.e_step`.
        Rows beyond a component's accurate radius get the values the whole E-step evaluates
        directly (:func:`~alprbf.prbf._gaussian.direct_log_densities`), and where there are
        such rows the E-step keeps its responsibilities for the M-step (``resp_columns``).
    """
    if blocks is None:
        return None
    f = data.features
    pc, ct = params.precisions_cholesky, params.covariance_type
    BT, muc, log_det = log_prob_coefficients(f, params.means, pc, ct)
    bounds, groups = blocks
    direct = FarRowDensities(f, muc, pc, ct, log_det)   # rows beyond an accurate radius
    w = mixture_weights(params)
    table = np.ascontiguousarray(offset_table(params, w), dtype=np.float64)
    M = params.n_components
    P = f.weights_T.shape[0]
    sizes = tuple(hi - lo for lo, hi in pairwise(bounds))
    lp_buf, resp_buf = np.empty(M * max(sizes)), np.empty(M * max(sizes))
    if workspace is None:
        workspace = blocked_workspace(blocks, M)
    # blocks with few survivors: the moments product over them alone (same bits, where checked)
    sparse = DENSITY_LIMIT if sparse_moments_match(P, M, sizes) else 0.0
    chains = np.empty(WIDTH + 4)
    maxima, sums = np.empty(data.n_samples), np.empty(data.n_samples)
    total = np.zeros((P, M))
    codes = data.codes_ext
    # an M-step may recompute nearly collapsed components' covariances from their
    # responsibility columns: keep them where such components are likely (direct entries)
    kept = _KeptResponsibilities(data.n_samples) if direct else None
    for (lo, hi), group in zip(pairwise(bounds), groups, strict=True):
        b = hi - lo
        lpT = lp_buf[:M * b].reshape(M, b)
        respT = resp_buf[:M * b].reshape(M, b)
        np.matmul(BT, f.ZT[:, lo:hi], out=lpT)
        direct.write(lpT, lo, hi)
        _, resp = normalize_with_offsets(lpT, table, codes[lo:hi], respT, group, workspace,
                                         sparse, (maxima[lo:hi], sums[lo:hi]))
        if resp is None:                               # left compacted in the workspace
            moments_add(total, features_padded_rows(f), row_stride(P), lo, b, workspace.buf,
                        workspace.idx, workspace.starts, chains, P % 2 == 1)
        else:
            total += f.weights_T[:, lo:hi] @ respT.T   # the whole product's running sum
        if kept is not None:
            kept.add(lo, respT if resp is not None else None, workspace)
    log_norm = log_normaliser(maxima, sums)         # once for all the blocks
    estep = finish_e_step(data, params, w, table, None, None, log_norm, total.T)
    return estep if kept is None else replace(estep, resp_columns=kept.columns)


class _KeptResponsibilities:
    """Each block's responsibilities, compacted or dense, to give any component's column."""

    def __init__(self, n: int):
        self.n, self.blocks = n, []

    def add(self, lo: int, respT: np.ndarray | None, ws: NormalizeWorkspace) -> None:
        if respT is not None:
            self.blocks.append((lo, respT.copy(), None, None))
        else:
            k = int(ws.starts[ws.n_components])
            self.blocks.append((lo, ws.buf[:k].copy(), ws.idx[:k].copy(), ws.starts.copy()))

    def columns(self, comps: np.ndarray) -> np.ndarray:
        """``resp[:, comps]`` (n, len(comps)) of the E-step, C-contiguous by component
        (``out[:, c]`` is contiguous): the whole E-step's values, zeros included."""
        comps = np.asarray(comps)
        out = np.zeros((len(comps), self.n))
        for lo, a, idx, starts in self.blocks:
            if idx is None:
                out[:, lo:lo + a.shape[1]] = a[comps]
            else:                                  # each survivor's component, then ours
                slot = np.full(len(starts) - 1, -1)
                slot[comps] = np.arange(len(comps))
                which = slot[np.repeat(np.arange(len(starts) - 1), np.diff(starts))]
                keep = which >= 0
                out[which[keep], lo + idx[keep]] = a[keep]
        return out.T


def blocked_workspace(blocks: tuple[tuple[int, ...], list], n_components: int
                      ) -> NormalizeWorkspace:
    """A normalisation workspace for :func:`blocked_e_step` on these blocks."""
    return NormalizeWorkspace(n_components, max(hi - lo for lo, hi in pairwise(blocks[0])))


BLOCKED_MIN_ENTRIES = 1 << 19
"""Fewest entries of the (M, n) arrays for which run_em takes its E-steps by blocks, unless the
design is large (:data:`BLOCKED_MIN_DESIGN`).  Below both, the arrays stay in cache and the
calls per block cost more than they save (``bench_em.py``, diag, 4 500 x 62, M = 20: 2.7 ms
per iteration blocked against 2.4-2.6 ms whole).  The bits are the same either way."""

BLOCKED_MIN_DESIGN = 1 << 22
"""Fewest entries of the design (its rows times n; 32 MiB) for which the E-steps are blocked
whatever M: each block of it is then read from cache by the second product (full, 4 500 x 62,
M = 20: 28-29 ms against 30 ms)."""


def e_step_blocks(data: PRBFData, n_components: int) -> tuple[tuple[int, ...], list] | None:
    """Row blocks for :func:`blocked_e_step` (bounds and each block's
    :func:`~alprbf.prbf.fast.normalize.common_code`), or ``None`` where it does not apply: no
    cached design, small arrays (fewer than :data:`BLOCKED_MIN_ENTRIES` in the (M, n) ones and
    fewer than :data:`BLOCKED_MIN_DESIGN` in the design), too few rows, or a BLAS whose blocked
    products differ from its whole ones (:func:`~alprbf.prbf.fast.gemm_blocks.gemm_k_blocks`)."""
    f = data.features
    if f.weights_T is None:
        return None
    if (n_components * data.n_samples < BLOCKED_MIN_ENTRIES
            and f.weights_T.size < BLOCKED_MIN_DESIGN):
        return None
    bounds = gemm_k_blocks(f.weights_T.shape[0], n_components, f.n_design, data.n_samples)
    if bounds is None:
        return None
    codes = data.codes_ext
    groups = [common_code(codes[lo:hi]) for lo, hi in pairwise(bounds)]
    return bounds, groups
