"""The whole E-step with the compiled normalisation: :func:`alprbf.prbf.reference.e_step`'s
bits, its (M, n) arrays reused from one EM iteration to the next."""

from __future__ import annotations

import numpy as np

from .._data import PRBFData
from .._gaussian import weighted_moments
from .._params import PRBFParams
from ..reference import EStep, finish_e_step, mixture_weights, offset_table
from .far_rows import estimate_log_gaussian_prob
from .normalize import normalize_with_offsets


def e_step(data: PRBFData, params: PRBFParams, log_prob: np.ndarray | None = None,
           reuse: EStep | None = None) -> EStep:
    """:func:`~alprbf.prbf.reference.e_step`, fast, with the same bits.

    The log densities' far rows come from :class:`~.far_rows.FarRowDensities`; offsets,
    normalisation and exponentials from one compiled pass
    (:func:`~.normalize.normalize_with_offsets`).

    Parameters
    ----------
    data, params, log_prob
        As :func:`~alprbf.prbf.reference.e_step` takes them.
    reuse : EStep, optional
        A spent E-step on the same rows with the same number of components: its (n, M)
        arrays are overwritten with the results (an EM loop passes the previous iteration's,
        which saves paging in two fresh arrays per iteration).  Do not use ``reuse`` after.
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
    w = mixture_weights(params)
    table = offset_table(params, w)
    log_norm, respT = normalize_with_offsets(log_prob.T, table, data.codes_ext, bufs[1],
                                             data.offset_groups)
    moments = weighted_moments(data.features, respT.T)
    return finish_e_step(data, params, w, table, log_prob, respT.T, log_norm, moments)
