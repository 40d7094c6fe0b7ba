"""Query by committee for PRBF learners (seed 000, §4.3).

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

from ..errors import UserError, did_you_mean
from ..models.base import labeled_mask
from ..prbf.qbc import STATISTICS, CommitteeOptions, kl_to_mean
from .base import STRATEGIES, QueryStrategy, select_top


@STRATEGIES.register("qbc_prbf")
class QBCPRBF(QueryStrategy):
    """Query by committee for the PRBF network: the pool rows with the largest KL to the mean.

    Parameters
    ----------
    n_members : int, default=5
        Committee size (the paper uses five).
    statistics : {"labeled", "all"}, default="labeled"
        Which rows build the sufficient statistics of eqs 46-49: the labeled rows only, with
        ``p(j|x,k)`` at their label (the equations as printed), or every row with the joint
        posteriors ``p(j,k|x)`` of the semi-supervised fit.
    em_max_iter : int, default=100
        Cap on the semi-supervised EM iterations of each member (the paper: "until
        convergence").
    em_tol : float, default=1e-4
        Convergence threshold on the change of the mean joint log-likelihood (eq 17) per row.
    sample_class_priors : bool, default=False
        Also draw ``p(k)`` from a Dirichlet posterior (the paper keeps the current priors).
    reg_covar : float or None, default=None
        Covariance floor of the members (None: the learner's ``reg_covar``).  On data with
        quantised features (pen digits) members' components collapse onto repeated points at
        the default floor 1e-6, which makes their EM slow; ``1e-3`` avoids that.
    """

    def __init__(self, n_members: int = 5, statistics: str = "labeled", em_max_iter: int = 100,
                 em_tol: float = 1e-4, sample_class_priors: bool = False,
                 reg_covar: float | None = None) -> None:
        if statistics not in STATISTICS:
            raise UserError(f"strategy 'qbc_prbf': unknown statistics '{statistics}'"
                            f"{did_you_mean(statistics, STATISTICS)}; valid choices: "
                            + ", ".join(STATISTICS))
        if not isinstance(n_members, int) or n_members < 2:
            raise UserError(f"strategy 'qbc_prbf': n_members must be an integer >= 2, "
                            f"got {n_members!r}")
        if not isinstance(em_max_iter, int) or em_max_iter < 0:
            raise UserError(f"strategy 'qbc_prbf': em_max_iter must be an integer >= 0, "
                            f"got {em_max_iter!r}")
        if reg_covar is not None and not (isinstance(reg_covar, (int, float))
                                          and not isinstance(reg_covar, bool) and reg_covar >= 0):
            raise UserError(f"strategy 'qbc_prbf': reg_covar must be a number >= 0, "
                            f"got {reg_covar!r}")
        self.options = CommitteeOptions(n_members=n_members, statistics=statistics,
                                        em_max_iter=em_max_iter, em_tol=float(em_tol),
                                        sample_class_priors=bool(sample_class_priors),
                                        reg_covar=None if reg_covar is None else float(reg_covar))

    def query(self, X, y, model, batch_size, rng):
        if not hasattr(model, "committee_log_proba"):
            raise UserError(f"strategy 'qbc_prbf' needs a PRBF learner that can sample a "
                            f"committee (active_prbf, incremental_ssl_prbf); got "
                            f"{type(model).__name__}")
        pool = np.flatnonzero(~labeled_mask(y))
        log_proba = model.committee_log_proba(X[pool], self.options, rng, self.threads)
        return select_top(kl_to_mean(log_proba), pool, batch_size, rng)
