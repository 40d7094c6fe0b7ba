"""The label model (eqs 3-6, 13-25): a mixture of logistic regressions on cluster representatives.

``p(y|k) = sigmoid(y (c_k . a + b))`` (eq 3) and ``p(y|x) = sum_k p(k|x) p(y|k)`` (eq 5).  The
parameters minimise the regularised negative log-likelihood of the labeled rows (eq 14)

    L(a, b) = lam/2 ||a||^2 - sum_i log sum_k p(k|x_i) p(y_i|k)

by Newton steps (eq 15) with the gradient of eqs 16-17 and the positive definite approximation
of the Hessian of eqs 18-19.  With one cluster per labeled row and hard memberships this is
L2-regularised logistic regression with an unpenalised intercept, and the approximation is then
the exact Hessian.

The Newton system is solved through its structure (eqs 20-25): eliminating ``db`` leaves
``G da = -(dL/da - z dL/db)`` with ``G = lam I + sum_k tau_k (c_k - z)(c_k - z)^T``.

**Erratum.** Eqs 21-22 build ``G`` from the columns ``sqrt(tau_k) c_k``; eqs 23-24 solve the
Newton system of eq 18 only when the columns are centred, ``sqrt(tau_k) (c_k - z)`` (the Schur
complement of the intercept block is ``sum_k tau_k c_k c_k^T - (sum_k tau_k) z z^T``).  The
centred columns are used here; ``tests/test_preclustering_label_model.py`` checks the result
against a dense solve of eq 15 with the Hessian of eq 18.  ``G^{-1}`` is applied by the
Woodbury identity (eq 25) with only the clusters of non-zero ``tau_k`` as columns, or, when
those clusters outnumber the dimensions, by a Cholesky factor of ``G`` itself.

Choices where the paper is silent:

* Start: ``a = 0, b = 0`` (or a given start); the objective is not convex for soft memberships
  (the paper says it is), so the result can depend on the start.
* Damping: a full Newton step is taken when it satisfies the Armijo condition
  ``L(new) <= L + 1e-4 t g.step``; otherwise the step length ``t`` is halved (at most
  ``max_halvings`` times; if none is accepted the fit stops where it is).
* Stopping: when half the Newton decrement ``-g.step / 2`` is at most
  ``tol * max(1, |L|)``, or after ``max_iter`` steps.
* Clusters whose ``tau_k`` is below ``1e-12`` of the largest are left out of the Hessian
  (``tau_rtol``): at small ``sigma`` the memberships of far clusters are like ``exp(-200)``,
  not zero, and would otherwise all stay in the solve.
* All clusters have ``tau_k = 0`` (every ``p(y_i|k)`` is 0 or 1 in floating point): the
  intercept block of eq 18 vanishes; the step is then ``da = -dL/da / lam, db = 0``.
* Probabilities are multiplied in log space: ``log p(y|k)`` by ``log_sigmoid``, the mixture by
  ``logsumexp``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp

from ..validation import check_int, check_positive, check_real

ARMIJO = 1e-4


def log_sigmoid(t: np.ndarray) -> np.ndarray:
    """``log(1 / (1 + exp(-t)))`` without overflow."""
    return -np.logaddexp(0.0, -t)


@dataclass(frozen=True)
class LabelTerms:
    """Objective (eq 14), gradient (eqs 16-17) and the weights of eq 19 at ``(a, b)``.

    Attributes
    ----------
    objective : float
    grad_a : ndarray of shape (d,)
    grad_b : float
    tau : ndarray of shape (K,)
        Eq 19.
    """

    objective: float
    grad_a: np.ndarray
    grad_b: float
    tau: np.ndarray


def label_terms(a: np.ndarray, b: float, centres: np.ndarray, log_resp: np.ndarray,
                y: np.ndarray, lam: float) -> LabelTerms:
    """Evaluate eqs 14, 16, 17 and 19.

    Parameters
    ----------
    a : ndarray of shape (d,)
    b : float
    centres : ndarray of shape (K, d)
        Cluster representatives ``c_k``.
    log_resp : ndarray of shape (m, K)
        ``log p(k|x_i)`` of the labeled rows (``-inf`` allowed).
    y : ndarray of shape (m,)
        Labels in {-1, +1}.
    lam : float

    Returns
    -------
    LabelTerms
    """
    t = centres @ a + b                                   # (K,)
    yt = y[:, None] * t[None, :]                          # (m, K)
    log_s = log_sigmoid(yt)                               # log p(y_i|k)
    log_joint = log_resp + log_s
    log_p = logsumexp(log_joint, axis=1)                  # log p(y_i|x_i)
    # p(k|x_i) p(y_i|k) (1 - p(y_i|k)) / p(y_i|x_i), the common factor of eqs 17 and 19
    r = np.exp(log_joint + log_sigmoid(-yt) - log_p[:, None])
    gamma = y @ r                                         # eq 17, (K,)
    tau = np.einsum("ik,ik->k", r, np.exp(log_s))         # eq 19
    grad_a = lam * a - centres.T @ gamma
    return LabelTerms(objective=float(0.5 * lam * (a @ a) - log_p.sum()), grad_a=grad_a,
                      grad_b=float(-gamma.sum()), tau=tau)


def newton_step(centres: np.ndarray, tau: np.ndarray, grad_a: np.ndarray, grad_b: float,
                lam: float, tau_rtol: float = 0.0,
                gram: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Solve eq 15 with the Hessian of eq 18 through eqs 20-25 (centred columns, see the
    module docstring) over the clusters with ``tau_k > tau_rtol * max(tau)``.

    ``G`` is inverted by the Woodbury identity (eq 25, a ``K' x K'`` system) when the ``K'``
    retained clusters are at most ``d``, else by a Cholesky factor of the ``d x d`` ``G``
    itself: the same system, the cheaper side.

    Parameters
    ----------
    centres : ndarray of shape (K, d)
    tau : ndarray of shape (K,)
        Non-negative weights of eq 19.
    grad_a : ndarray of shape (d,)
    grad_b : float
    lam : float
        > 0.
    tau_rtol : float, default=0.0
        Clusters with ``tau_k <= tau_rtol * max(tau)`` are left out of the Hessian (0: only the
        exact zeros, as eq 25's remark says).  Only the path of the iteration depends on it:
        the gradient, and so the solution, is exact.
    gram : ndarray of shape (K, K), optional
        ``centres @ centres.T``; with it ``D^T D`` of eq 25 costs ``O(K'^2)`` instead of
        ``O(K'^2 d)`` (the centres change only when the data are re-clustered).

    Returns
    -------
    da : ndarray of shape (d,)
    db : float
    """
    top = tau.max(initial=0.0)
    active = np.flatnonzero(tau > tau_rtol * top) if top > 0 else np.zeros(0, dtype=np.int64)
    if len(active) == 0:
        return -grad_a / lam, 0.0
    t = tau[active]
    total = t.sum()
    C = centres[active]
    z = (t @ C) / total                                   # eq 20
    Dt = (C - z) * np.sqrt(t)[:, None]                    # rows = columns of D (erratum)
    v = grad_a - z * grad_b
    if len(active) <= C.shape[1]:
        if gram is None:
            inner = Dt @ Dt.T
        else:                                             # (C - z)(C - z)^T from C C^T
            cz = C @ z
            inner = gram[np.ix_(active, active)] - cz[:, None] - cz[None, :] + z @ z
            inner *= np.sqrt(t)[:, None] * np.sqrt(t)[None, :]
        inner[np.diag_indices_from(inner)] += lam         # lam I + D^T D (eq 25)
        u = cho_solve(cho_factor(inner), Dt @ v)
        g_inv_v = (v - Dt.T @ u) / lam                    # G^{-1} v (eq 25)
    else:
        G = Dt.T @ Dt
        G[np.diag_indices_from(G)] += lam                 # eq 22
        g_inv_v = cho_solve(cho_factor(G), v)
    return -g_inv_v, float(z @ g_inv_v - grad_b / total)  # eqs 23-24


@dataclass(frozen=True)
class LabelFit:
    """Outcome of :func:`fit_label_model`.

    Attributes
    ----------
    coef : ndarray of shape (d,)
        ``a``.
    intercept : float
        ``b``.
    objective : float
        Eq 14 at the solution.
    n_iter : int
        Newton steps taken.
    converged : bool
        The decrement criterion was met.
    """

    coef: np.ndarray
    intercept: float
    objective: float
    n_iter: int
    converged: bool


def fit_label_model(centres: np.ndarray, log_resp: np.ndarray, y: np.ndarray, lam: float, *,
                    start: tuple[np.ndarray, float] | None = None, max_iter: int = 100,
                    tol: float = 1e-12, max_halvings: int = 40,
                    tau_rtol: float = 1e-12, gram: np.ndarray | None = None) -> LabelFit:
    """Minimise eq 14 by damped Newton steps (see the module docstring).

    Parameters
    ----------
    centres : ndarray of shape (K, d)
    log_resp : ndarray of shape (m, K)
        ``log p(k|x_i)`` of the labeled rows.
    y : ndarray of shape (m,)
        Labels in {-1, +1}.
    lam : float
        Regularisation, > 0 (the paper: 80).
    start : (ndarray of shape (d,), float), optional
        Initial ``(a, b)``; default zeros.
    max_iter : int, default=100
    tol : float, default=1e-12
    max_halvings : int, default=40
    tau_rtol : float, default=1e-12
    gram : ndarray of shape (K, K), optional
        See :func:`newton_step`.

    Returns
    -------
    LabelFit
    """
    check_positive("fit_label_model", "lam", lam)
    check_int("fit_label_model", "max_iter", max_iter, 0)
    check_int("fit_label_model", "max_halvings", max_halvings, 0)
    check_real("fit_label_model", "tol", tol, 0.0)
    check_real("fit_label_model", "tau_rtol", tau_rtol, 0.0)
    y = np.asarray(y, dtype=float)
    if not np.all(np.abs(y) == 1):
        raise ValueError("fit_label_model: y must hold -1 or +1")
    centres = np.asarray(centres, dtype=float)
    if start is None:
        a, b = np.zeros(centres.shape[1]), 0.0
    else:
        a, b = np.array(start[0], dtype=float), float(start[1])
    terms = label_terms(a, b, centres, log_resp, y, lam)
    converged = False
    it = 0
    while it < max_iter:
        da, db = newton_step(centres, terms.tau, terms.grad_a, terms.grad_b, lam, tau_rtol,
                             gram)
        slope = float(terms.grad_a @ da + terms.grad_b * db)   # < 0: a descent direction
        if -slope / 2 <= tol * max(1.0, abs(terms.objective)):
            converged = True
            break
        step = 1.0
        for _ in range(max_halvings + 1):
            new = label_terms(a + step * da, b + step * db, centres, log_resp, y, lam)
            if new.objective <= terms.objective + ARMIJO * step * slope:
                break
            step /= 2
        else:
            break                  # no acceptable step: stop at the current point
        a, b, terms = a + step * da, b + step * db, new
        it += 1
    return LabelFit(coef=a, intercept=b, objective=terms.objective, n_iter=it,
                    converged=converged)


def log_label_posteriors(a: np.ndarray, b: float, centres: np.ndarray,
                         log_resp: np.ndarray | None = None, *, resp: np.ndarray | None = None,
                         log_resp_rows: Callable[[np.ndarray], np.ndarray] | None = None,
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``log p(y = +1|x)`` and ``log p(y = -1|x)`` by eq 5.

    The sum over clusters is a matrix-vector product of ``p(k|x)`` with ``p(y|k)`` scaled by its
    largest value; rows where that product falls below ``1e-250`` (where memberships that
    underflow could matter) are summed in log space instead.

    Parameters
    ----------
    a : ndarray of shape (d,)
    b : float
    centres : ndarray of shape (K, d)
    log_resp : ndarray of shape (n, K), optional
        ``log p(k|x)``; or give both of:
    resp : ndarray of shape (n, K), optional
        ``p(k|x)``.
    log_resp_rows : callable, optional
        ``rows -> log p(k|x)`` of those rows (for the rows summed in log space).

    Returns
    -------
    log_pos, log_neg : ndarray of shape (n,)
    """
    if log_resp is not None:
        resp = np.exp(log_resp)

        def log_resp_rows(rows):
            return log_resp[rows]
    t = centres @ a + b
    out = []
    for log_s in (log_sigmoid(t), log_sigmoid(-t)):
        top = log_s.max()
        v = resp @ np.exp(log_s - top)
        low = np.flatnonzero(v < 1e-250)
        with np.errstate(divide="ignore"):
            log_v = np.log(v) + top
        if len(low):
            log_v[low] = logsumexp(log_resp_rows(low) + log_s[None, :], axis=1)
        out.append(log_v)
    return out[0], out[1]
