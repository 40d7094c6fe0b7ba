"""Query strategies: ``query(X, y, model, batch_size, rng) -> indices``.

``X`` is the training part of the fold (labeled and pool rows), ``y`` is float with ``nan`` on
pool rows, ``model`` is the learner fitted on this very state, and ``rng`` a
:class:`numpy.random.Generator`.  The result holds ``batch_size`` distinct row indices of pool rows.
"""

from __future__ import annotations

import numpy as np

from ..models.base import Learner, labeled_mask


def select_top(scores: np.ndarray, candidates: np.ndarray, batch_size: int,
               rng: np.random.Generator) -> np.ndarray:
    """The ``batch_size`` candidates with the highest scores; ties broken at random.

    Parameters
    ----------
    scores : ndarray of shape (n_candidates,)
        Finite scores (``nan`` is treated as the lowest score).
    candidates : ndarray of shape (n_candidates,)
        The indices the scores belong to.
    """
    scores = np.where(np.isnan(scores), -np.inf, scores)
    tie_break = rng.random(len(scores))
    order = np.lexsort((tie_break, -scores))  # primary key: -scores
    return np.asarray(candidates)[order[:batch_size]]


class QueryStrategy:
    """Base class; subclasses implement :meth:`score` or override :meth:`query`.

    Attributes
    ----------
    threads : int
        Threads one query may use (the runner sets it from ``--task-threads``).  An
        execution resource, not a parameter of the method: a strategy that uses it must
        return the same rows for every value.
    """

    threads: int = 1
    #: Methods the model must have for this strategy (checked when a config is parsed).
    required_model_methods: tuple[str, ...] = ()

    def query(self, X: np.ndarray, y: np.ndarray, model: Learner, batch_size: int,
              rng: np.random.Generator) -> np.ndarray:
        pool = np.flatnonzero(~labeled_mask(y))
        scores = self.score(X, pool, model)
        return select_top(scores, pool, batch_size, rng)

    def score(self, X: np.ndarray, pool: np.ndarray, model: Learner) -> np.ndarray:
        """Scores (higher = query first) of the rows ``X[pool]``, shape (len(pool),)."""
        raise NotImplementedError

