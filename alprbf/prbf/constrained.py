"""PRBF network with constrained kernel sharing (Titsias & Likas 2001, eqs 3-14).

Every kernel ``j`` has sharing parameters ``r_jk >= 0`` with ``sum_k r_jk = 1`` (eq 4) that
limit how much it may serve class ``k``.  Training maximises

    L(Theta, r) = sum_k sum_{x in X_k} log phi_k(x),   phi_k(x) = sum_j r_jk pi_jk f_j(x)  (3, 6)

by EM: the E-step posteriors are ``Phi_j(x; k) = r_jk pi_jk f_j(x) / phi_k(x)`` (eq 8); the M-step
gives the means and covariances of the responsibility-weighted data (10, 11), ``pi_jk =
sum_{X_k} Phi_j / N_k`` (12) and ``r_jk = pi_jk N_k / sum_i pi_ji N_i`` (13, 14).  The
classifier then uses the *unconstrained* class densities ``p(x|k) = sum_j pi_jk f_j(x)`` (eq 1)
with the learned ``Theta`` and priors ``N_k / N``; ``r`` only shapes training.

Implementation: ``phi`` is a PRBF class density with un-normalised weights ``r_jk pi_jk``, so one
E-step of the PRBF core (:func:`alprbf.prbf._estep.e_step`) on a network whose weights are
``r * pi`` yields exactly ``Phi`` (its responsibilities), ``log phi`` (its ``log_norm``) and
eq 6 (its ``loglik_labeled``); the core's M-step on that E-step yields eqs 10-12 (its weight
update ``counts / N_k`` is eq 12 because ``Phi`` sums to one over ``j``).  Only eq 14 is new.

Behaviour with ``r`` fixed at ``1/K`` (``update_r=False``, ``r_init="uniform"``): the common
factor ``1/K`` cancels in ``Phi``, which becomes the PRBF posterior of 001 eq 7, so every EM
iteration is the unconstrained PRBF iteration and the fit (from the same initialisation)
equals :class:`alprbf.prbf.estimators.PRBF`'s; the objective is the PRBF log-likelihood (001
eq 6) minus ``N log K``.

Choices where the paper is silent: initialisation as the PRBF core (k-means means, uniform
``pi_jk = 1/M``; the same random draws as :class:`~alprbf.prbf.estimators.PRBF` for the same
``random_state`` and ``n_init``, so paired comparisons start from identical networks) and
``r_jk = 1/K``; a kernel with no responsibility mass in any class keeps ``r_j = 1/K``;
convergence when eq 6 per row changes by less than ``tol``; with ``n_init > 1`` the restart
with the largest objective (6) is kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._base import PRBFClassifierBase
from ._data import PRBFData, prepare_data
from ._em import has_converged, initialize_params, m_step, with_params
from ._estep import e_step
from ._params import PRBFParams
from .estimators import check_em_params

R_INITS = ("uniform", "proportional")


def update_sharing(weights: np.ndarray, class_counts: np.ndarray) -> np.ndarray:
    """Eq 14: ``r_jk = pi_jk N_k / sum_i pi_ji N_i`` (rows with no mass: ``1/K``).

    Parameters
    ----------
    weights : ndarray (M, K)
        ``pi_jk`` (columns sum to 1).
    class_counts : ndarray (K,)
        ``N_k``.

    Returns
    -------
    ndarray (M, K), rows sum to 1.
    """
    mass = weights * class_counts[None, :]
    tot = mass.sum(axis=1, keepdims=True)
    K = weights.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tot > 0, mass / np.where(tot > 0, tot, 1.0), 1.0 / K)


def initial_sharing(weights: np.ndarray, class_counts: np.ndarray, how: str = "uniform"
                    ) -> np.ndarray:
    """Starting ``r``: ``1/K`` everywhere ("uniform") or eq 14 at the initial ``pi``."""
    if how == "uniform":
        return np.full(weights.shape, 1.0 / weights.shape[1])
    if how == "proportional":
        return update_sharing(weights, class_counts)
    raise ValueError(f"r_init must be one of {R_INITS}; got {how!r}")


@dataclass(frozen=True, eq=False)
class ConstrainedEMResult:
    """Result of :func:`constrained_em`.

    Attributes
    ----------
    params : PRBFParams
        Final ``Theta`` (weights = ``pi``, normalised per class).
    sharing : ndarray (M, K)
        Final ``r``.
    objective_history : ndarray (n_iter + 1,)
        Eq 6 at the start and after every M-step (non-decreasing).
    converged : bool
    n_iter : int
    """

    params: PRBFParams
    sharing: np.ndarray
    objective_history: np.ndarray
    converged: bool
    n_iter: int

    @property
    def objective(self) -> float:
        return float(self.objective_history[-1])


def constrained_em(data: PRBFData, params: PRBFParams, sharing: np.ndarray, *,
                   tol: float = 1e-4, max_iter: int = 200, reg_covar: float = 1e-6,
                   update_r: bool = True) -> ConstrainedEMResult:
    """EM for the constrained PRBF (002 eqs 8, 10-14) on labeled rows.

    Parameters
    ----------
    data : PRBFData
        Labeled rows only (the model is supervised).
    params : PRBFParams
        Starting ``Theta``.
    sharing : ndarray (M, K)
        Starting ``r`` (rows sum to 1).
    tol : float
        Stop when eq 6 per row changes by less than this.
    max_iter : int
    reg_covar : float
    update_r : bool
        Re-estimate ``r`` by eq 14 (False keeps it fixed).

    Returns
    -------
    ConstrainedEMResult
    """
    if data.n_unlabeled:
        raise ValueError("the constrained PRBF is supervised: every row must be labeled")
    n = max(data.n_samples, 1)
    r = np.asarray(sharing, dtype=np.float64)

    def estep(p, r):
        return e_step(data, with_params(p, weights=r * p.weights))

    est = estep(params, r)
    history = [est.loglik_labeled]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        new = m_step(data, est, with_params(params, weights=r * params.weights), reg_covar)
        params = with_params(new, class_priors=params.class_priors)
        if update_r:
            r = update_sharing(params.weights, data.class_counts)
        est = estep(params, r)
        history.append(est.loglik_labeled)
        if has_converged(history[-1] - history[-2], n, tol):
            converged = True
            break
    return ConstrainedEMResult(params, r, np.asarray(history), converged,
                               it if max_iter > 0 else 0)


class ConstrainedPRBF(PRBFClassifierBase):
    """PRBF network with constrained kernel sharing (002), trained by EM (eqs 8, 10-14).

    Parameters
    ----------
    n_components : int, default=5
        Number ``M`` of kernels.
    covariance_type : {"full", "diag", "spherical"}, default="full"
    tol : float, default=1e-4
        Convergence threshold on the change of eq 6 per row.
    reg_covar : float, default=1e-6
    max_iter : int, default=200
    n_init : int, default=1
        Restarts; the one with the largest objective (eq 6) is kept.
    init_params : {"kmeans", "random_from_data", "kmeans_per_class"}, default="kmeans"
        See :func:`alprbf.prbf._em.initialize_params`.
    r_init : {"uniform", "proportional"}, default="uniform"
        Starting sharing parameters: ``1/K``, or eq 14 at the initial ``pi``.
    update_r : bool, default=True
        Learn ``r`` (False keeps it at ``r_init``; with "uniform" this is the plain PRBF).
    classes : array-like or None, default=None
        Every class of the task (see :class:`~alprbf.prbf.PRBFClassifierBase`).
    random_state : int, Generator or None
        Seeds the initialisation (same draws as :class:`~alprbf.prbf.estimators.PRBF`).

    Attributes
    ----------
    classes_ : ndarray (K,)
    params_ : PRBFParams
        ``Theta`` used for prediction through eq 1 (priors ``N_k / N``).
    sharing_ : ndarray (M, K)
        Learned ``r``.
    objective_history_ : ndarray
        Eq 6 along the kept run.
    objective_ : float
    n_iter_ : int
    converged_ : bool
    restart_ : int
        Index of the kept restart (0 .. n_init - 1).
    restart_logliks_ : ndarray (n_init,)
        Final objective (eq 6) of every restart.
    fit_time_ : float
    n_features_in_ : int
    """

    def __init__(self, n_components=5, *, covariance_type="full", tol=1e-4, reg_covar=1e-6,
                 max_iter=200, n_init=1, init_params="kmeans", r_init="uniform",
                 update_r=True, classes=None, random_state=None):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.r_init = r_init
        self.update_r = update_r
        self.classes = classes
        self.random_state = random_state

    def _validate(self) -> None:
        check_em_params(self, r_init=R_INITS)

    def _fit_codes(self, X, codes, n_classes):
        """Fit on integer codes ``0..n_classes-1`` (all rows labeled); ``M`` is capped at the
        number of rows."""
        t0 = time.perf_counter()
        data = prepare_data(X, codes, n_classes, self.covariance_type)
        M = min(self.n_components, data.n_samples)
        rng = np.random.default_rng(self.random_state)
        best = None
        objectives = []
        for i in range(self.n_init):
            p0 = initialize_params(data, M, reg_covar=self.reg_covar,
                                   init_params=self.init_params, random_state=rng)
            r0 = initial_sharing(p0.weights, data.class_counts, self.r_init)
            res = constrained_em(data, p0, r0, tol=self.tol, max_iter=self.max_iter,
                                 reg_covar=self.reg_covar, update_r=self.update_r)
            objectives.append(res.objective)
            if best is None or res.objective > best.objective:
                best, self.restart_ = res, i
        self.restart_logliks_ = np.asarray(objectives)
        self.params_ = best.params
        self.sharing_ = best.sharing
        self.objective_history_ = best.objective_history
        self.objective_ = best.objective
        self.n_iter_ = best.n_iter
        self.converged_ = best.converged
        self.classes_ = np.arange(n_classes)
        self.fit_time_ = time.perf_counter() - t0
        return self

    @property
    def n_components_(self) -> int:
        check_is_fitted(self, "params_")
        return self.params_.n_components
