"""Selection score (eqs 26-31) and the coarse-to-fine rule (eqs 32-33).

The score of an unlabeled row is its expected error times its density,
``(1 - |f(x)|) p(x)`` with ``f(x) = p(y=+1|x) - p(y=-1|x)`` (eq 28) and ``p(x)`` of eq 31; the
query is its argmax over the pool (eq 30).  When that maximum is below ``t_e`` (eq 32), the
scale shrinks, ``sigma <- eta sigma`` (eq 33), and the data are re-clustered.

Choices where the paper is silent:

* ``1 - |f(x)| = 2 min(p(+1|x), p(-1|x))`` is computed in that form (no cancellation when one
  posterior is tiny).  With more than two classes (the paper has two) it is generalised to
  ``1 - (p_1 - p_2)`` with ``p_1 >= p_2`` the two largest class posteriors, which is the same
  thing for two classes.
* At most one shrink per check; the caller decides when to check (the learner checks after
  each fit, before the query).
"""

from __future__ import annotations

import numpy as np

from ..validation import check_real


def expected_error(proba: np.ndarray) -> np.ndarray:
    """``1 - |f(x)|`` (half of eq 29) from class posteriors.

    Parameters
    ----------
    proba : ndarray of shape (n, K)
        Class posteriors (rows sum to 1), ``K >= 1``.

    Returns
    -------
    ndarray of shape (n,)
        ``1 - (p_1 - p_2)``: for two classes ``2 min(p_0, p_1)``; 0 with one class.
    """
    proba = np.asarray(proba, dtype=float)
    if proba.shape[1] == 1:
        return np.zeros(proba.shape[0])
    top2 = np.partition(proba, -2, axis=1)
    rest = top2[:, :-1].sum(axis=1)          # 1 - p_1 as a sum (no cancellation)
    return rest + top2[:, -2]


def selection_score(proba: np.ndarray, log_px: np.ndarray) -> np.ndarray:
    """Eq 30's criterion ``(1 - |f(x)|) p(x)``.

    Parameters
    ----------
    proba : ndarray of shape (n, K)
        Class posteriors.
    log_px : ndarray of shape (n,)
        ``log p(x)`` (eq 31).

    Returns
    -------
    ndarray of shape (n,)
    """
    return expected_error(proba) * np.exp(log_px)


def next_sigma(max_score: float, sigma: float, threshold: float = 0.2,
               eta: float = 0.9) -> float:
    """The scale after the check of eq 32: ``eta * sigma`` if ``max_score < threshold``, else
    ``sigma`` (eq 33).

    Parameters
    ----------
    max_score : float
        Largest selection score over the pool.
    sigma : float
    threshold : float, default=0.2
        ``t_e``.
    eta : float, default=0.9
        In (0, 1).

    Returns
    -------
    float
    """
    check_real("next_sigma", "threshold", threshold)
    check_real("next_sigma", "eta", eta, 0.0)
    if not 0 < eta < 1:
        raise ValueError(f"next_sigma: invalid eta={eta!r}; valid: 0 < eta < 1")
    return eta * sigma if max_score < threshold else sigma
