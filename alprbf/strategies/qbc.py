"""Query by committee for PRBF learners (Constantinopoulos & Likas 2008, §4.3).

The committee is model-specific, so the strategy asks the learner for it through a small
protocol: a learner usable with ``qbc_prbf`` has a method ::

    committee_log_proba(X_pool, options, rng, n_threads) -> ndarray of shape (n_members, n_pool, K)

returning every member's log class posteriors on the pool rows, where ``options`` is a
:class:`alprbf.prbf.qbc.CommitteeOptions` and ``n_threads`` the strategy's ``threads`` (members
trained at the same time; the result must not depend on it).  The PRBF learners ``active_prbf`` and
``incremental_ssl_prbf`` implement it: they sample each member from the posteriors of their
current (unsplit) network (eqs 40-49) and train it by semi-supervised EM on all training rows.
"""

from __future__ import annotations

import numpy as np

from ..models.base import labeled_mask
from ..prbf.qbc import CommitteeOptions, kl_to_mean
from .base import QueryStrategy, select_top


class QBCPRBF(QueryStrategy):
    """Query by committee for the PRBF network: the pool rows with the largest KL to the mean.

    Parameters are those of :class:`alprbf.prbf.qbc.CommitteeOptions`, held as ``options``:

    n_members : int, default=5
        Committee size (the paper uses five).
    statistics : {"labeled", "all"}, default="labeled"
        Which rows build the sufficient statistics of eqs 46-49: the labeled rows only, with
        ``p(j|x,k)`` at their label (the equations as printed), or every row with the joint
        posteriors ``p(j,k|x)`` of the semi-supervised fit.
    max_iter : int, default=100
        Cap on the semi-supervised EM iterations of each member (the paper: "until
        convergence").
    tol : float, default=1e-4
        Convergence threshold on the change of the mean joint log-likelihood (eq 17) per row.
    sample_class_priors : bool, default=False
        Also draw ``p(k)`` from a Dirichlet posterior (the paper keeps the current priors).
    reg_covar : float or None, default=None
        Covariance floor of the members (None: the learner's ``reg_covar``; why the
        Constantinopoulos & Likas 2008 configs use 1e-3: docs/history/notes.md, 'Covariance floor').
    """

    params_from = CommitteeOptions
    required_model_methods = ("committee_log_proba",)

    def __init__(self, **params) -> None:
        self.options = CommitteeOptions(**params)

    def query(self, X, y, model, batch_size, rng):
        if not hasattr(model, "committee_log_proba"):
            raise TypeError(f"strategy 'qbc_prbf' needs a PRBF learner that can sample a "
                            f"committee (active_prbf, incremental_ssl_prbf); got "
                            f"{type(model).__name__}")
        pool = np.flatnonzero(~labeled_mask(y))
        log_proba = model.committee_log_proba(X[pool], self.options, rng, self.threads)
        return select_top(kl_to_mean(log_proba), pool, batch_size, rng)
