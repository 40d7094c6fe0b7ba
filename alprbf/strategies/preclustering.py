"""Nguyen & Smeulders 2004's query strategies: pre-clustering selection and the linear-SVM
baselines.

* ``preclustering`` (eq 30): the pool rows with the largest ``(1 - |f(x)|) p(x)``, from a
  learner with ``selection_scores(X, rows)`` (``preclustering``).
* ``closest_boundary``: the pool rows with the smallest ``|f(x)|``, from a learner with
  ``margin(X)`` (``linear_svm``).
* ``representative`` (Xu et al. 2003, as Nguyen & Smeulders 2004, §4 runs it): among the pool rows
  inside the margin, ``|f(x)| <= 1``, the medoid: the row with the smallest sum of Euclidean
  distances to the other rows inside the margin.  Xu et al. cluster the margin rows by k-means
  (cosine, text) and label the rows nearest to the centres; Nguyen & Smeulders 2004 takes medoids
  and one query at a time, where that reduces to the medoid of the whole margin set.  Choices where
  both are silent: a batch of ``B > 1`` rows is the ``B`` medoids of PAM on the margin rows (in an
  order drawn from ``rng``, so ties are broken at random); with fewer than ``B`` rows inside the
  margin (none at all included), they are all taken and the rest are the closest to the boundary
  outside it.
"""

from __future__ import annotations

import numpy as np

from ..models.base import labeled_mask
from ..preclustering.kmedoids import pairwise_distances, pam, sq_distances
from .base import QueryStrategy, select_top

CHUNK = 1024   # rows per distance block of medoid_scores (memory CHUNK x n)


class PreclusteringSelection(QueryStrategy):
    """Largest ``(1 - |f(x)|) p(x)`` over the pool (Nguyen & Smeulders 2004, eq 30)."""

    required_model_methods = ("selection_scores",)

    def score(self, X, pool, model):
        return model.selection_scores(X, pool)


class ClosestToBoundary(QueryStrategy):
    """Smallest ``|f(x)|`` of a margin classifier (the closest-to-boundary criterion)."""

    required_model_methods = ("margin",)

    def score(self, X, pool, model):
        return -model.margin(X[pool])


def medoid_scores(X: np.ndarray) -> np.ndarray:
    """Minus the sum of Euclidean distances of each row to all rows (the medoid scores
    highest).

    Parameters
    ----------
    X : ndarray of shape (n, d)

    Returns
    -------
    ndarray of shape (n,)
    """
    out = np.empty(len(X))
    for start in range(0, len(X), CHUNK):
        block = np.sqrt(sq_distances(X[start:start + CHUNK], X))
        out[start:start + CHUNK] = -block.sum(axis=1)
    return out


class RepresentativeSampling(QueryStrategy):
    """Medoid(s) of the pool rows inside the margin ``|f(x)| <= 1`` (Xu et al. 2003; see the
    module docstring)."""

    required_model_methods = ("margin",)

    def query(self, X, y, model, batch_size, rng):
        pool = np.flatnonzero(~labeled_mask(y))
        m = model.margin(X[pool])
        inside = m <= 1.0
        n_in = int(inside.sum())
        if n_in <= batch_size:
            rest = select_top(-m[~inside], pool[~inside], batch_size - n_in, rng)
            return np.concatenate([pool[inside], rest])
        rows = pool[inside]
        if batch_size == 1:
            return select_top(medoid_scores(X[rows]), rows, 1, rng)
        order = rng.permutation(rows)
        return order[pam(pairwise_distances(X[order]), batch_size).medoids]
