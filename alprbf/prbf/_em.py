"""EM for the PRBF network with labeled and unlabeled rows in one code path (pure functions).

Model (001 eqs 2-5, 000 eqs 16-18): ``p(x|k) = sum_j pi_jk N(x; mu_j, Sigma_j)`` with shared
Gaussian components ``j = 1..M``, class-conditional mixing weights ``pi_jk = p(j|k)`` (columns sum
to 1) and class priors ``p(k)``.

Rows are labeled (class code ``0..K-1``) or unlabeled (code ``-1``; ``nan`` in float label
vectors).  One E-step serves both (000 eqs 21-25):

* labeled row ``(x, k)``: ``p(j|x, k) = pi_jk N_j(x) / p(x|k)``  (001 eq 7, 000 eq 25);
* unlabeled row ``x``: joint posterior ``p(j, k|x) = p(k) pi_jk N_j(x) / p(x)`` (000 eqs 21-23).

The joint posterior of an unlabeled row factorises as ``p(j, k|x) = c_jk * r_j(x)`` with
``r_j(x) = sum_k p(j, k|x) = w_j N_j(x) / p(x)``, ``w_j = sum_k p(k) pi_jk`` and
``c_jk = p(k) pi_jk / w_j`` independent of ``x``.  Every quantity the M-step (000 eqs 26-29) and
the semi-supervised split (eqs 30-32) need is therefore computed from one (n, M) responsibility
matrix plus the (M, K) matrix ``counts[j, k] = sum_x p(j, k|x)``: the (n, M, K) joint array is
never formed (use :func:`joint_log_resp` when it is really wanted).

Log-likelihood (000 eq 17): ``sum_labeled log p(k) p(x|k) + sum_unlabeled log p(x)``.  With no
unlabeled rows it equals 001 eq 6 plus the constant ``sum_k N_k log p(k)``; the eq-6 part is
returned separately as ``EStep.loglik_labeled``.  Class priors are updated (eq 29) only when
there are unlabeled rows; in the supervised case they stay ``N_k / N`` (001 §II.A).

All work is in log space; ``pi_jk = 0`` gives ``log pi_jk = -inf`` and a zero responsibility, never
``nan``.  A component whose total responsibility is (numerically) zero keeps its previous mean and
covariance and gets zero weight.

Deviation from the printed equations: 001 eq 9 (and 24) write the covariance update around the
*old* mean ``mu_j^(t)``; the exact M-step maximiser (used here, as in 000 eq 27 and sklearn) is
the covariance around the *new* mean.  Only the latter guarantees a non-decreasing likelihood.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import pairwise

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from ..numerics import logsumexp_rows
from ._gaussian import (
    GaussianFeatures,
    check_covariance_type,
    compute_precision_cholesky,
    direct_log_densities,
    estimate_gaussian_parameters,
    estimate_log_gaussian_prob,
    gaussian_parameters_and_precisions,
    log_prob_coefficients,
    weighted_moments,
)
from ._gemm_blocks import gemm_k_blocks
from ._normalize import (
    NormalizeWorkspace,
    common_code,
    exp_flushed,
    normalize_with_offsets,
    weighted_logits,
)
from ._params import PRBFParams
from ._sparse_moments import (
    DENSITY_LIMIT,
    WIDTH,
    moments_add,
    row_stride,
    sparse_moments_match,
)

DEAD_MASS = 1e-10
"""A component whose summed responsibility is below this keeps its previous mean/covariance."""

INIT_METHODS = ("kmeans", "random_from_data")


# --------------------------------------------------------------------------------------------
# data


@dataclass(frozen=True, eq=False)
class PRBFData:
    """Training rows prepared once for many E/M steps (build with :func:`prepare_data`).

    Attributes
    ----------
    X : ndarray (n, d), float64
    y : ndarray (n,), int64
        Class codes ``0..K-1``; ``-1`` marks an unlabeled row.
    n_classes : int
        ``K`` (classes may have no labeled row at all).
    labeled : ndarray (n_l,), int
        Row indices of the labeled rows.
    unlabeled : ndarray (n_u,), int
    codes : ndarray (n_l,), int
        ``y[labeled]``.
    onehot : ndarray (n_l, K), float
    class_counts : ndarray (K,), float
        ``N_k``.
    features : GaussianFeatures
        Cached data quantities for the covariance type, with the ``K + 1`` columns of
        ``onehot_ext`` as its extra rows (so one product gives the M-step's moments and the
        E-step's class counts).
    codes_ext : ndarray (n,), int
        ``y`` with unlabeled rows coded ``K`` (indexes the E-step's (M, K+1) offset table).
    onehot_ext : ndarray (n, K+1), float
        One-hot of ``codes_ext``: class indicators plus an "unlabeled" column.
    """

    X: np.ndarray
    y: np.ndarray
    n_classes: int
    labeled: np.ndarray
    unlabeled: np.ndarray
    codes: np.ndarray
    onehot: np.ndarray
    class_counts: np.ndarray
    features: GaussianFeatures
    codes_ext: np.ndarray
    onehot_ext: np.ndarray

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_labeled(self) -> int:
        return len(self.labeled)

    @property
    def n_unlabeled(self) -> int:
        return len(self.unlabeled)

    @property
    def covariance_type(self) -> str:
        return self.features.covariance_type

    @cached_property
    def offset_groups(self) -> tuple[int, np.ndarray]:
        """:func:`~alprbf.prbf._normalize.common_code` of ``codes_ext``, for every E-step."""
        return common_code(self.codes_ext)


def label_codes(y: np.ndarray) -> np.ndarray:
    """Integer codes from an AL label vector: ``nan`` (or negative codes) -> ``-1``."""
    y = np.asarray(y)
    if y.dtype.kind == "f":
        out = np.full(y.shape, -1, dtype=np.int64)
        ok = ~np.isnan(y)
        out[ok] = y[ok].astype(np.int64)
        return out
    out = y.astype(np.int64)
    return np.where(out < 0, -1, out)


def prepare_data(X: np.ndarray, y: np.ndarray, n_classes: int,
                 covariance_type: str = "full") -> PRBFData:
    """Bundle rows, labels and cached features for the E/M steps.

    Parameters
    ----------
    X : array of shape (n, d)
    y : array of shape (n,)
        Integer codes ``0..K-1`` with ``-1`` for unlabeled rows, or floats with ``nan``.
    n_classes : int
    covariance_type : {"full", "diag", "spherical"}

    Returns
    -------
    PRBFData
    """
    X = np.asarray(X, dtype=np.float64)
    codes_all = label_codes(y)
    if codes_all.shape != (X.shape[0],):
        raise ValueError("y must have one entry per row of X")
    if np.any(codes_all >= n_classes):
        raise ValueError(f"class codes must be < n_classes={n_classes}")
    labeled = np.flatnonzero(codes_all >= 0)
    unlabeled = np.flatnonzero(codes_all < 0)
    codes = codes_all[labeled]
    onehot = np.zeros((len(labeled), n_classes))
    onehot[np.arange(len(labeled)), codes] = 1.0
    class_counts = np.bincount(codes, minlength=n_classes).astype(np.float64)
    codes_ext = np.where(codes_all < 0, n_classes, codes_all)
    onehot_ext = np.zeros((len(codes_all), n_classes + 1))
    onehot_ext[np.arange(len(codes_all)), codes_ext] = 1.0
    features = GaussianFeatures(X, check_covariance_type(covariance_type), extra=onehot_ext.T)
    return PRBFData(X, codes_all, n_classes, labeled, unlabeled, codes, onehot, class_counts,
                    features, codes_ext, onehot_ext)


# --------------------------------------------------------------------------------------------
# helpers


def safe_log(a: np.ndarray) -> np.ndarray:
    """``log(a)`` with ``log(0) = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(a)


def mixture_weights(params: PRBFParams) -> np.ndarray:
    """``w_j = sum_k p(k) pi_jk`` (M,): the weights of the marginal density ``p(x)`` (000 eq 18)."""
    return params.weights @ params.class_priors


# --------------------------------------------------------------------------------------------
# E-step


@dataclass(frozen=True, eq=False)
class EStep:
    """Result of :func:`e_step` (rows in the order of ``data.X``).

    Attributes
    ----------
    log_prob : ndarray (n, M)
        ``log N(x_i; mu_j, Sigma_j)``.  ``log_prob`` and ``resp`` are ``None`` in the E-steps
        that :func:`run_em` takes between M-steps one block of rows at a time
        (:func:`blocked_e_step`); every E-step a caller receives has them.
    log_weighted : ndarray (n, M)  (property, computed on access)
        Labeled rows: ``log pi_jy + log N_j(x)`` (= ``log p(j, x|y)``); unlabeled rows:
        ``log w_j + log N_j(x)`` (= ``log p(j, x)``).
    resp : ndarray (n, M)
        Labeled rows: ``p(j|x, y)`` (001 eq 7); unlabeled rows: ``sum_k p(j, k|x)``
        (000 eqs 21-23 marginalised over k).  Rows sum to 1; values below ~1e-200 are 0.
    log_resp : ndarray (n, M)  (property, computed on access)
        ``log_weighted - log_norm``: the exact logarithm of the responsibilities.

    The (n, M) arrays are column-major views of (M, n) arrays (fast per-row reductions over
    the components); index them as usual.
    log_norm : ndarray (n,)
        Labeled rows: ``log p(x|y)``; unlabeled rows: ``log p(x)``.
    counts : ndarray (M, K)
        ``sum_x p(j, k|x)`` over all rows: numerators of 001 eq 10 / 000 eq 28.
    moments : ndarray (M, n_design + 1 + K + 1)
        :func:`~alprbf.prbf._gaussian.weighted_moments` of ``resp``: everything the M-step
        needs, computed here in the same product as ``counts``.
    log_offsets : ndarray (M, K + 1)
        ``log pi_jk`` (columns ``0..K-1``) and ``log w_j`` (column ``K``).
    codes : ndarray (n,)
        Each row's column of ``log_offsets`` (``data.codes_ext``).
    resp_columns : function or None
        A blocked E-step's substitute for ``resp`` where an M-step may need some columns of
        it: ``resp_columns(comps)`` gives ``resp[:, comps]`` (see
        :func:`~alprbf.prbf._gaussian.gaussian_parameters_and_precisions`).
    loglik : float
        Joint log-likelihood, 000 eq 17.
    loglik_labeled : float
        ``sum_labeled log p(x|y)``: 001 eq 6 (the class-conditional likelihood).
    """

    log_prob: np.ndarray | None
    resp: np.ndarray | None
    log_norm: np.ndarray
    counts: np.ndarray
    loglik: float
    loglik_labeled: float
    moments: np.ndarray
    log_offsets: np.ndarray
    codes: np.ndarray
    resp_columns: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)

    @property
    def log_weighted(self) -> np.ndarray:
        # not kept by the E-step (an (n, M) array written and never read in an EM loop);
        # the same additions as the compiled E-step's, so the same bits
        return weighted_logits(self.log_prob.T, self.log_offsets, self.codes).T

    @property
    def log_resp(self) -> np.ndarray:
        norm = np.where(np.isfinite(self.log_norm), self.log_norm, 0.0)
        return self.log_weighted - norm[:, None]


def e_step(data: PRBFData, params: PRBFParams, log_prob: np.ndarray | None = None,
           reuse: EStep | None = None) -> EStep:
    """Posterior responsibilities and log-likelihood for the current parameters.

    Parameters
    ----------
    data : PRBFData
    params : PRBFParams
        With ``params.n_classes == data.n_classes`` and the same covariance type.
    log_prob : ndarray (n, M), optional
        Precomputed ``log N(x_i; mu_j, Sigma_j)`` (skips the Gaussian evaluation).
    reuse : EStep, optional
        A spent E-step on the same rows with the same number of components: its (n, M)
        arrays are overwritten with the results (an EM loop passes the previous iteration's,
        which saves paging in two fresh arrays per iteration).  Do not use ``reuse`` after.

    Returns
    -------
    EStep
    """
    M = params.n_components
    n = data.n_samples
    bufs = (None, None)
    if reuse is not None and reuse.resp is not None and reuse.resp.shape == (n, M):
        bufs = (reuse.log_prob.T, reuse.resp.T)
    if log_prob is None:
        log_prob = estimate_log_gaussian_prob(None, params.means, params.precisions_cholesky,
                                              params.covariance_type, features=data.features,
                                              out=bufs[0])
    lpT = log_prob.T                                        # (M, n), C-contiguous if ours
    # offsets: log pi_{j, y} for a labeled row, log w_j for an unlabeled one (table column K),
    # added, normalised and exponentiated in one compiled pass (bit-identical to the NumPy
    # expressions it replaced; see _normalize)
    w = mixture_weights(params)
    table = _offset_table(params, w)
    log_norm, respT = normalize_with_offsets(lpT, table, data.codes_ext, bufs[1],
                                             data.offset_groups)
    moments = weighted_moments(data.features, respT.T)
    return _finish_e_step(data, params, w, table, log_prob, respT.T, log_norm, moments)


def blocked_e_step(data: PRBFData, params: PRBFParams,
                   blocks: tuple[tuple[int, ...], list] | None,
                   workspace: NormalizeWorkspace | None = None) -> EStep | None:
    """:func:`e_step` one block of rows at a time, without its (n, M) arrays; same bits.

    The log densities, the normalisation and the moments product run block by block on data
    in cache, and the (n, M) log densities and responsibilities are never written (the
    returned E-step has ``log_prob = resp = None``): an EM loop reads only the moments, class
    counts and likelihood of the E-steps between its M-steps.  The blocks are those of the
    BLAS product's inner dimension, so that the blocked products give the whole ones' bits
    (:mod:`~alprbf.prbf._gemm_blocks`).

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
        ``None`` when the blocked form does not apply (no blocks): call :func:`e_step`.
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
    direct = _DirectEntries(f, muc, pc, ct, log_det)   # rows beyond an accurate radius
    w = mixture_weights(params)
    table = np.ascontiguousarray(_offset_table(params, w), dtype=np.float64)
    M = params.n_components
    P = f.weights_T.shape[0]
    sizes = tuple(hi - lo for lo, hi in pairwise(bounds))
    lp_buf, resp_buf = np.empty(M * max(sizes)), np.empty(M * max(sizes))
    if workspace is None:
        workspace = blocked_workspace(blocks, M)
    # blocks with few survivors: the moments product over them alone (same bits, where checked)
    sparse = DENSITY_LIMIT if sparse_moments_match(P, M, sizes) else 0.0
    chains = np.empty(WIDTH + 4)
    m_all, s_all = np.empty(data.n_samples), np.empty(data.n_samples)
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
        direct.copy_into(lpT, lo, hi)
        _, resp = normalize_with_offsets(lpT, table, codes[lo:hi], respT, group, workspace,
                                         sparse)
        m_all[lo:hi], s_all[lo:hi] = workspace.m[:b], workspace.s[:b]
        if resp is None:                               # left compacted in the workspace
            moments_add(total, f.padded_rows, row_stride(P), lo, b, workspace.buf,
                        workspace.idx, workspace.starts, chains, P % 2 == 1)
        else:
            total += f.weights_T[:, lo:hi] @ respT.T   # the whole product's running sum
        if kept is not None:
            kept.add(lo, respT if resp is not None else None, workspace)
    with np.errstate(divide="ignore"):
        log_norm = m_all + np.log(s_all)               # as each call's, in one pass
    estep = _finish_e_step(data, params, w, table, None, None, log_norm, total.T)
    return estep if kept is None else replace(estep, resp_columns=kept.columns)


class _DirectEntries:
    """The log densities a whole E-step evaluates directly
    (:func:`~alprbf.prbf._gaussian.direct_log_densities`, the same values), sorted by row,
    to overwrite block by block."""

    def __init__(self, f, muc, pc, ct, log_det):
        comps, rows, values = direct_log_densities(f, muc, pc, ct, log_det)
        order = np.argsort(rows, kind="stable")
        self.comps, self.rows, self.values = comps[order], rows[order], values[order]

    def __bool__(self) -> bool:
        return len(self.rows) > 0

    def copy_into(self, lpT: np.ndarray, lo: int, hi: int) -> None:
        if len(self.rows):
            a, b = np.searchsorted(self.rows, (lo, hi))
            lpT[self.comps[a:b], self.rows[a:b] - lo] = self.values[a:b]


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
    :func:`~alprbf.prbf._normalize.common_code`), or ``None`` where it does not apply: no
    cached design, small arrays (fewer than :data:`BLOCKED_MIN_ENTRIES` in the (M, n) ones and
    fewer than :data:`BLOCKED_MIN_DESIGN` in the design), too few rows, or a BLAS whose blocked
    products differ from its whole ones (:func:`~alprbf.prbf._gemm_blocks.gemm_k_blocks`)."""
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


def _offset_table(params: PRBFParams, w: np.ndarray) -> np.ndarray:
    """(M, K+1): ``log pi_jk`` (columns ``0..K-1``) and ``log w_j`` (column ``K``; ``w`` the
    :func:`mixture_weights`)."""
    K = params.n_classes
    table = np.empty((params.n_components, K + 1))
    table[:, :K] = safe_log(params.weights)
    table[:, K] = safe_log(w)
    return table


def _finish_e_step(data: PRBFData, params: PRBFParams, w: np.ndarray, table: np.ndarray,
                   log_prob: np.ndarray | None, resp: np.ndarray | None, log_norm: np.ndarray,
                   moments: np.ndarray) -> EStep:
    """Class counts and likelihoods from an E-step's normaliser and moments."""
    K = data.n_classes
    # counts[j, k] = sum_x p(j, k|x): labeled rows directly, unlabeled ones as c_jk * g_j with
    # g_j = sum_unlabeled r_j(x) (the last column of cg); one product with the M-step moments
    cg = moments[:, -(K + 1):]                              # respT @ onehot_ext, (M, K+1)
    counts = np.ascontiguousarray(cg[:, :K])
    if np.all(np.isfinite(log_norm)):
        per_class = log_norm @ data.onehot_ext              # (K+1,) sums of log_norm
    else:  # -inf rows (impossible for valid parameters): avoid -inf * 0 = nan
        per_class = np.array([np.sum(log_norm[data.codes_ext == k]) for k in range(K + 1)])
    loglik_labeled = float(per_class[:K].sum())
    log_prior = safe_log(params.class_priors)
    loglik = loglik_labeled + float(data.class_counts @ np.where(data.class_counts > 0,
                                                                 log_prior, 0.0))
    if data.n_unlabeled:
        with np.errstate(divide="ignore", invalid="ignore"):
            c = params.weights * params.class_priors / w[:, None]   # c_jk, (M, K)
        c[~np.isfinite(c)] = 0.0
        counts = counts + c * cg[:, K:]
        loglik += float(per_class[K])
    return EStep(log_prob, resp, log_norm, counts, loglik, loglik_labeled, moments, table,
                 data.codes_ext)


def joint_log_resp(estep: EStep, params: PRBFParams, rows: np.ndarray) -> np.ndarray:
    """``log p(j, k|x)`` (len(rows), M, K) for unlabeled ``rows`` (000 eq 21), from an E-step."""
    w = mixture_weights(params)
    log_c = safe_log(params.weights) + safe_log(params.class_priors) - safe_log(w)[:, None]
    log_c[~np.isfinite(log_c)] = -np.inf
    return estep.log_resp[rows][:, :, None] + log_c[None]


# --------------------------------------------------------------------------------------------
# M-step


def m_step(data: PRBFData, estep: EStep, params: PRBFParams, reg_covar: float = 1e-6,
           update_priors: bool | None = None,
           fixed_components: np.ndarray | None = None) -> PRBFParams:
    """New parameters from the E-step posteriors (001 eqs 8-10, 000 eqs 26-29).

    Parameters
    ----------
    data : PRBFData
    estep : EStep
        E-step of ``params`` on ``data``.
    params : PRBFParams
        Current parameters (kept for dead or fixed components, and for the priors when they
        are not updated).
    reg_covar : float
        Covariance floor added to every variance.
    update_priors : bool or None
        Re-estimate ``p(k)`` by 000 eq 29.  ``None`` (default): only when ``data`` has
        unlabeled rows; otherwise the priors in ``params`` are kept (``N_k / N`` in the
        supervised case).
    fixed_components : bool ndarray (M,), optional
        Components whose mean and covariance are not updated (their weights are).

    Returns
    -------
    PRBFParams
        ``weights[:, k] = counts[:, k] / sum_j counts[j, k]``; a class with no mass at all (no
        labeled row, zero prior) gets uniform weights ``1/M`` (irrelevant because ``p(k) = 0``).
    """
    ct = params.covariance_type
    resp = estep.resp
    if resp is None:                # a blocked E-step: the responsibilities only if needed
        def resp() -> np.ndarray:
            return e_step(data, params).resp
    _, means, covs, prec = gaussian_parameters_and_precisions(
        data.features, resp, reg_covar, estep.moments, resp_columns=estep.resp_columns)
    keep = estep.counts.sum(axis=1) < DEAD_MASS
    if fixed_components is not None:
        keep = keep | np.asarray(fixed_components, dtype=bool)
    if np.any(keep):
        means[keep] = params.means[keep]
        covs[keep] = params.covariances[keep]
        prec[keep] = params.precisions_cholesky[keep]
    counts = estep.counts
    colsum = counts.sum(axis=0)
    M = counts.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = np.where(colsum > 0, counts / colsum, 1.0 / M)
    if update_priors is None:
        update_priors = data.n_unlabeled > 0
    if update_priors:
        priors = colsum / colsum.sum()
    else:
        priors = params.class_priors.copy()
    return PRBFParams(means, covs, prec, weights, priors, ct)


# --------------------------------------------------------------------------------------------
# the EM loop


@dataclass(frozen=True, eq=False)
class EMResult:
    """Result of :func:`run_em`.

    Attributes
    ----------
    params : PRBFParams
        Final parameters.
    estep : EStep  (property)
        E-step of the final parameters (responsibilities for a subsequent split).  When the
        loop's last E-step was blocked (:func:`blocked_e_step`), the whole one is computed on
        first access, with the same bits.
    loglik_history : ndarray (n_iter + 1,)
        000 eq 17 after initialisation and after each M-step (non-decreasing up to the effect
        of ``reg_covar``).
    converged : bool
    n_iter : int
        Number of M-steps performed.
    """

    params: PRBFParams
    last_estep: EStep = field(repr=False)
    loglik_history: np.ndarray
    converged: bool
    n_iter: int
    data: PRBFData | None = field(default=None, repr=False)

    @cached_property
    def estep(self) -> EStep:
        if self.last_estep.resp is not None:
            return self.last_estep
        return e_step(self.data, self.params)

    @property
    def loglik(self) -> float:
        return float(self.loglik_history[-1])


def has_converged(change, n_rows: int, tol: float):
    """The stopping rule of the PRBF EM loops: the log-likelihood changed by less than ``tol``
    per row, ``|L_t - L_{t-1}| < tol * n_rows`` (as sklearn's GaussianMixture).  Element-wise
    on an array of changes (e.g. ``np.diff`` of an ``EMResult.loglik_history``)."""
    return np.abs(change) < tol * n_rows


def run_em(data: PRBFData, params: PRBFParams, *, tol: float = 1e-4, max_iter: int = 200,
           reg_covar: float = 1e-6, update_priors: bool | None = None,
           fixed_components: np.ndarray | None = None) -> EMResult:
    """Iterate E and M steps until the log-likelihood stops changing.

    The E-steps after the first run one block of rows at a time where that gives the same
    bits (:func:`blocked_e_step`); the result's E-step is then computed when first read.

    Parameters
    ----------
    data : PRBFData
    params : PRBFParams
        Starting point.
    tol : float
        Stop when ``|L_t - L_{t-1}| / n < tol`` (change of the mean per-row log-likelihood,
        000 eq 17 divided by the number of rows; as in sklearn's GaussianMixture).
    max_iter : int
        Maximum number of M-steps (0 only evaluates ``params``).
    reg_covar, update_priors, fixed_components
        See :func:`m_step`.

    Returns
    -------
    EMResult
    """
    n = max(data.n_samples, 1)
    blocks = e_step_blocks(data, params.n_components) if max_iter > 0 else None
    workspace = blocked_workspace(blocks, params.n_components) if blocks else None
    est = blocked_e_step(data, params, blocks, workspace) or e_step(data, params)
    spent = est if est.resp is not None else None      # arrays a whole E-step may reuse
    history = [est.loglik]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        params = m_step(data, est, params, reg_covar, update_priors, fixed_components)
        est = (blocked_e_step(data, params, blocks, workspace)
               or e_step(data, params, reuse=spent))
        if est.resp is not None:
            spent = est
        history.append(est.loglik)
        if has_converged(history[-1] - history[-2], n, tol):
            converged = True
            break
    return EMResult(params, est, np.asarray(history), converged, it if max_iter > 0 else 0,
                    data)


# --------------------------------------------------------------------------------------------
# initialisation and restarts


def initialize_params(data: PRBFData, n_components: int, *, reg_covar: float = 1e-6,
                      init_params: str = "kmeans",
                      random_state: int | np.random.Generator | None = None) -> PRBFParams:
    """Starting parameters: component means from k-means or random rows, hard-assignment moments.

    Parameters
    ----------
    data : PRBFData
        All rows (labeled and unlabeled) are used for the means and covariances.
    n_components : int
        ``M``; must not exceed the number of rows.
    reg_covar : float
    init_params : {"kmeans", "random_from_data"}
        "kmeans": sklearn ``KMeans(n_init=1)`` centres; "random_from_data": ``M`` distinct rows.
    random_state : int, Generator or None
        Seed of every draw (KMeans receives an integer drawn from it).

    Returns
    -------
    PRBFParams
        Means as chosen; covariances = moments of the rows nearest to each mean (a component
        with fewer than two rows gets the global covariance); ``pi_jk = 1/M`` (uniform, so that
        no ``pi_jk`` starts at the absorbing value 0); ``p(k) = N_k / N_labeled``.
    """
    if init_params not in INIT_METHODS:
        raise ValueError(f"init_params must be one of {', '.join(INIT_METHODS)}; "
                         f"got {init_params!r}")
    X = data.X
    n = X.shape[0]
    M = int(n_components)
    if M < 1:
        raise ValueError(f"n_components must be >= 1; got {n_components}")
    if n < M:
        raise ValueError(f"n_samples={n} should be >= n_components={M}")
    rng = np.random.default_rng(random_state)
    ct = data.covariance_type
    if init_params == "kmeans":
        seed = int(rng.integers(2**31 - 1))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Number of distinct clusters",
                                    category=ConvergenceWarning)
            km = KMeans(n_clusters=M, n_init=1, random_state=seed).fit(X)
        means = km.cluster_centers_.astype(np.float64)
        labels = km.labels_
    else:
        means = X[rng.choice(n, size=M, replace=False)].astype(np.float64)
        d2 = (np.sum(X * X, axis=1)[:, None] - 2.0 * X @ means.T
              + np.sum(means * means, axis=1)[None])
        labels = np.argmin(d2, axis=1)
    resp = np.zeros((n, M))
    resp[np.arange(n), labels] = 1.0
    _, _, covs = estimate_gaussian_parameters(None, resp, reg_covar, ct, features=data.features)
    small = np.bincount(labels, minlength=M) < 2
    if np.any(small):
        _, _, gcov = estimate_gaussian_parameters(None, np.ones((n, 1)), reg_covar, ct,
                                                  features=data.features)
        covs[small] = gcov[0]
    prec = compute_precision_cholesky(covs, ct)
    K = data.n_classes
    weights = np.full((M, K), 1.0 / M)
    n_l = data.class_counts.sum()
    priors = data.class_counts / n_l if n_l > 0 else np.full(K, 1.0 / K)
    return PRBFParams(means, covs, prec, weights, priors, ct)


def fit_em(data: PRBFData, n_components: int, *, tol: float = 1e-4, max_iter: int = 200,
           reg_covar: float = 1e-6, n_init: int = 1, init_params: str = "kmeans",
           random_state: int | np.random.Generator | None = None,
           update_priors: bool | None = None) -> EMResult:
    """EM from ``n_init`` initialisations; keep the run with the largest final log-likelihood.

    Parameters
    ----------
    data : PRBFData
    n_components : int
    tol, max_iter, reg_covar, update_priors
        See :func:`run_em` / :func:`m_step`.
    n_init : int
        Number of restarts (001 §IV uses the best of 5 for PRBFsplit).
    init_params : {"kmeans", "random_from_data"}
    random_state : int, Generator or None
        One generator drives all restarts (deterministic for an integer seed).

    Returns
    -------
    EMResult
        The best run (ties: the first).
    """
    if n_init < 1:
        raise ValueError(f"n_init must be >= 1; got {n_init}")
    rng = np.random.default_rng(random_state)
    best: EMResult | None = None
    for _ in range(n_init):
        p0 = initialize_params(data, n_components, reg_covar=reg_covar,
                               init_params=init_params, random_state=rng)
        res = run_em(data, p0, tol=tol, max_iter=max_iter, reg_covar=reg_covar,
                     update_priors=update_priors)
        if best is None or res.loglik > best.loglik:
            best = res
    assert best is not None
    return best


# --------------------------------------------------------------------------------------------
# prediction


def log_class_conditional(log_prob: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``log p(x|k) = log sum_j pi_jk N_j(x)`` (001 eq 2 / 15), shape (n, K).

    Parameters
    ----------
    log_prob : ndarray (n, M)
        ``log N_j(x_i)``.
    weights : ndarray (M, K)

    Notes
    -----
    Sparse weights (a split network: every component serves one class) take an exact
    log-sum-exp per class over that class's components, ``n * M`` work in all.  Otherwise
    the result is ``m_i + log(exp(log_prob - m) @ weights)`` (one matrix product); entries that
    underflow (below 1e-280 before the log) are recomputed with an exact log-sum-exp over the
    (rows, M, K) array.  Either way the result is accurate in log space and ``-inf`` only when
    every ``pi_jk N_j(x)`` is exactly zero.
    """
    support = weights > 0
    if support.sum() <= 2 * weights.shape[0]:
        return _log_class_conditional_sparse(log_prob, weights, support)
    m = log_prob.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    e = log_prob - m[:, None]
    exp_flushed(e, out=e)   # subnormal operands make the product ~100x slower
    prob = e @ weights
    low = prob < 1e-280
    with np.errstate(divide="ignore"):
        out = np.log(prob) + m[:, None]
    rows = np.flatnonzero(low.any(axis=1))
    if len(rows):
        a = log_prob[rows][:, :, None] + safe_log(weights)[None]   # (r, M, K)
        am = a.max(axis=1)
        am = np.where(np.isfinite(am), am, 0.0)
        with np.errstate(divide="ignore"):
            exact = am + np.log(np.exp(a - am[:, None, :]).sum(axis=1))
        out[rows] = np.where(low[rows], exact, out[rows])
    return out


def _log_class_conditional_sparse(log_prob: np.ndarray, weights: np.ndarray,
                                  support: np.ndarray) -> np.ndarray:
    """:func:`log_class_conditional`, one class at a time over the components it uses.

    The maximum is taken per class, so the largest term of each sum is ``pi_jk >= tiny``
    and nothing underflows."""
    n, K = log_prob.shape[0], weights.shape[1]
    out = np.full((n, K), -np.inf)
    for k in range(K):
        cols = np.flatnonzero(support[:, k])
        if not len(cols):
            continue
        sub = log_prob[:, cols]
        m = sub.max(axis=1)
        m = np.where(np.isfinite(m), m, 0.0)
        sub -= m[:, None]
        exp_flushed(sub, out=sub)
        with np.errstate(divide="ignore"):
            out[:, k] = m + np.log(sub @ weights[cols, k])
    return out


def _log_prob(X: np.ndarray, params: PRBFParams, features: GaussianFeatures | None
              ) -> np.ndarray:
    return estimate_log_gaussian_prob(X, params.means, params.precisions_cholesky,
                                      params.covariance_type, features=features)


def log_joint_from_log_prob(log_prob: np.ndarray, params: PRBFParams) -> np.ndarray:
    """``log p(k) + log p(x|k)`` (n, K) from precomputed ``log N_j(x_i)`` (n, M) of ``params``."""
    return log_class_conditional(log_prob, params.weights) + safe_log(params.class_priors)


def log_proba_from_log_prob(log_prob: np.ndarray, params: PRBFParams) -> np.ndarray:
    """Log class posteriors (n, K) from precomputed ``log N_j(x_i)`` (n, M) of ``params``."""
    lj = log_joint_from_log_prob(log_prob, params)
    return lj - logsumexp_rows(lj)[:, None]


def predict_log_joint(X: np.ndarray, params: PRBFParams,
                      features: GaussianFeatures | None = None) -> np.ndarray:
    """``log p(k) + log p(x|k)`` (000 eq 15), shape (n, K)."""
    return log_joint_from_log_prob(_log_prob(X, params, features), params)


def predict_log_proba(X: np.ndarray, params: PRBFParams,
                      features: GaussianFeatures | None = None) -> np.ndarray:
    """Log class posteriors ``log p(k|x)`` (001 eq 1 / 000 eq 3), shape (n, K).

    Classes with prior 0 get ``-inf``; rows never contain ``nan``.
    """
    return log_proba_from_log_prob(_log_prob(X, params, features), params)


def with_params(params: PRBFParams, **changes) -> PRBFParams:
    """A copy of ``params`` with some fields replaced (precisions recomputed if covariances are)."""
    if "covariances" in changes and "precisions_cholesky" not in changes:
        changes["precisions_cholesky"] = compute_precision_cholesky(
            changes["covariances"], changes.get("covariance_type", params.covariance_type))
    return replace(params, **changes)
