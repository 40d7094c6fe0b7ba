"""Query strategies that read an SVM's decision values: US for SVMs and 4DS (Reitmaier et al. 2016,
§4.3.2).

``uncertainty_svm`` queries the pool rows closest to the decision boundary (smallest
``|f(x)|``, eq 17).  ``four_ds`` combines four criteria (eqs 17-20: distance to the boundary,
density, diversity of the query set, distribution over the mixture components) with weights
that adapt to the state of the learning process, and fills a batch greedily.  Both need a
learner with ``svm_decision_values(X)`` (``kernel_svm``); ``four_ds`` also needs
``density_model()``, the variational mixture of the training rows
(:mod:`alprbf.svm_kernels.density`).
For RWM and GMM this is the kernel's own model; for RBF and LAP the learner fits one with the
same options on first use (the paper's loop keeps a density model whatever the kernel).

The multi-class ``|f(x)|`` (the paper gives eq 17 for one binary SVM)
--------------------------------------------------------------------
``KernelSVC.scores`` is sklearn's ``decision_function_shape="ovr"`` output, which is *not* a
set of one-vs-rest SVMs: libsvm trains one SVM per pair of classes and sklearn turns their
votes into ``votes_k + c_k / (3 (|c_k| + 1))`` (``c_k`` the summed pairwise values of class
``k``).  The value of the winner is then a vote count, not a distance to a boundary, so
"smallest ``|f|`` of the one-vs-rest winner" has no meaning here.  The rule used
(``multiclass="pairwise"``, the default) is the one binary SVM the row actually sits between:
the winner ``a`` and the runner-up ``b`` of that ranking, ``|f(x)| = |f_ab(x)|``, the
one-vs-one decision value of the pair (:func:`svm_margin`).  It is in the units of eq 17
and equals ``|f(x)|`` with two classes.  ``multiclass="gap"`` is the alternative written in
:mod:`alprbf.svm_kernels.svm`: the gap between the two largest ``scores`` (vote difference plus a
squashed confidence difference).  With fewer than two labeled classes every row gets 0.

4DS: where the paper is silent
------------------------------
The paper describes the self-adaptive weights in words and cites Reitmaier & Sick 2013
(eqs 9-15 there) for the formulas; that paper is not at hand.  The reading used here:

* **Normalisation.**  The criteria live on different scales (``|f|`` and ``p(x)`` unbounded,
  eq 19 in ``[0, 1]`` but varying across candidates only by ``~1 / |L|``), and a weighted
  sum is meaningful only on a common scale, so every criterion is min-max normalised over
  the candidates to ``[0, 1]`` with 1 = preferred (a constant criterion becomes 0): distance
  and density once per query over the pool, distribution and diversity at each greedy step
  over the rows still available.
* **Distance (eq 17).**  ``1 - minmax(|f(x)|)`` with the multi-class rule above.
* **Density (eq 18).**  ``minmax(p(x))`` of the mixture, as printed (``density="likelihood"``);
  ``density="log"`` uses ``log p(x)`` instead (scikit-activeml's choice), which spreads the
  values of a heavy-tailed density.
* **Distribution (eq 19).**  As printed, for each candidate ``x``:
  ``1 - sum_j max(0, pi_j - mean_{x' in L u S u {x}} rho_j(x'))``.
* **Diversity (eq 20).**  As printed (``diversity="literal"``):
  ``-(1 / (|S| + 1)) sum_{x' in S u {x}} log p(x')`` with the pool's mixture ``p``.  This
  sum is separable, so the set ``S`` only adds a constant across candidates: after the
  normalisation the literal criterion is ``1 - minmax(log p(x))``, the same at every step,
  and the within-batch spread comes from eq 19, which *is* updated with ``S``.  Because the
  paper says the entropy estimate of its ref. [15] (a Parzen estimate *of the query set*)
  is replaced by a parametric one, ``diversity="set_mixture"`` offers that reading: the
  entropy of ``T = S u {x}`` under the mixture re-weighted by ``T``'s own mean
  responsibilities, ``-(1 / |T|) sum_{x' in T} log sum_j w_Tj p(x'|j)`` with
  ``w_T = mean_{x' in T} rho(x')`` (:func:`set_mixture_diversity`); it grows when ``T``
  spreads over components.  As the paper says, diversity is not used for the first row of
  a batch.
* **Weights** (:func:`four_ds_weights`), fixed for the query except that the first row of
  a batch has no diversity term:

  - distribution: ``w_distr = min(D, 1 - lambda)`` with ``D = sum_j max(0, pi_j -
    mean_{x in L} rho_j(x))``, the deviation of eq 19 for the labeled set alone (half the
    L1 distance, in ``[0, 1]``).  It is large while ``L`` does not yet cover the mixture
    (the first rounds) and shrinks as it does, which is how the paper describes it.
    (scikit-activeml reads eq 15 there as ``min(1, L1)``, i.e. twice this value, capped.)
  - distance and density share the rest ``r = 1 - lambda - w_distr`` by the classifier's
    state: ``w_dist = r (1 - e)``, ``w_dens = r e``, where ``e`` is the share of pool rows
    inside the SVM's margin band (``|f(x)| < 1``), our stand-in for "classification
    performance" for an SVM without held-out labels (with ``multiclass="gap"`` the band
    is a gap below 1, i.e. the two best classes tied in votes).  A classifier unsure over
    much of the pool favours density (representative rows; the paper: density matters
    early), a confident one favours the distance (fine-tuning the boundary; the paper: later).  The
    paper speaks of the performance *deteriorating*, i.e. a change between rounds; that would
    need state carried across queries, so the level is used (the strategy stays a pure
    function of the current state, as checkpoints need).  scikit-activeml uses ``1 - e``
    with ``e`` the mean ``1 - max posterior`` for the same split in its batch branch.
    ``performance="expected_error"`` takes that estimate for ``e`` instead (:func:`expected_error`:
    the mean over the pool of ``1 - max_k P(k | x)``, P the softmax of the SVM's scores, the
    posterior :meth:`~alprbf.svm_kernels.svm.KernelSVC.predict_proba` gives; Reitmaier & Sick
    2013's eq 14 as scikit-activeml reads it).  The margin band is in the kernel's own units:
    under the RWM kernel the soft-margin SVM leaves 79-98 % of clouds' pool inside it at every
    round up to 400 labels, so the distance weight stays at 0.01-0.20 and 4DS never leaves the
    density criterion; the expected error lies in ``[0, 1 - 1/K]`` whatever the kernel's scale
    (docs/decisions/0310).
  - diversity: ``lambda`` (0 for a batch's first row).  The four weights sum to 1.
* **lambda.**  The paper picks it from ``{0, 0.1, ..., 1}`` by 5-fold CV on the training data.
  Here it is a parameter, default 0.2 (scikit-activeml's default for a batch of 5:
  ``min(0.05 (batch - 1), 0.5)``).  The CV choice is not built into the strategy: scoring a
  value of lambda needs whole active-learning runs judged with labels the strategy never
  sees, so it belongs to the protocol: a strategy entry's ``select: {param: lmbda, values:
  [0, 0.1, ..., 1], folds: 5}`` (:func:`alprbf.engine.protocol.select_strategy_param`; 11 values x 5
  inner folds = 55 inner runs of 4DS per outer fold, each on 4/5 of the training part, i.e.
  about 44x the cost of one run).
* **Ties** are broken at random by :func:`~.base.select_top`, one row per greedy step.
* **No label yet** (no SVM, no decision values): every pool row is tied (random rows); the
  loop's initial set (Alg. 2) normally covers that round.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import log_softmax, logsumexp

from ..models.base import labeled_mask
from ..svm_kernels.density import log_component_densities
from ..validation import check_choice, check_real
from .base import QueryStrategy, select_top

MULTICLASS_RULES = ("pairwise", "gap")
DENSITY_SCALES = ("likelihood", "log")
DIVERSITY_READINGS = ("literal", "set_mixture")
PERFORMANCE_READINGS = ("margin_band", "expected_error")


# ------------------------------------------------------------------------ pure functions

def svm_margin(scores: np.ndarray, pairwise: np.ndarray, rule: str = "pairwise") -> np.ndarray:
    """Multi-class ``|f(x)|`` (module docstring), shape (n,).

    Parameters
    ----------
    scores : ndarray of shape (n, K)
        sklearn's one-vs-rest-shaped values (``-inf`` for a class without a label).
    pairwise : ndarray of shape (n, K, K)
        One-vs-one values, ``pairwise[i, a, b] = f_ab(x_i)``.
    rule : {"pairwise", "gap"}
        ``|f_ab(x)|`` of the two best-ranked classes ``a``, ``b``, or the gap between the two
        largest ``scores``.

    Returns
    -------
    ndarray of shape (n,)
        Non-negative; 0 everywhere with fewer than two labeled classes.
    """
    n = scores.shape[0]
    present = np.isfinite(scores[0]) if n else np.zeros(0, bool)
    if n == 0 or present.sum() < 2:
        return np.zeros(n)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :2]
    a, b = order[:, 0], order[:, 1]
    rows = np.arange(n)
    if rule == "gap":
        return scores[rows, a] - scores[rows, b]
    return np.abs(pairwise[rows, a, b])


def min_max(values: np.ndarray) -> np.ndarray:
    """``(v - min) / (max - min)``, shape as ``values``; zeros when all values are equal."""
    lo, hi = np.min(values), np.max(values)
    if not hi > lo:
        return np.zeros_like(values, dtype=np.float64)
    return (values - lo) / (hi - lo)


def distribution_deviation(resp_labeled: np.ndarray, weights: np.ndarray) -> float:
    """``sum_j max(0, pi_j - mean_x rho_j(x))`` over the labeled rows (1 with none).

    Parameters
    ----------
    resp_labeled : ndarray of shape (n_labeled, J)
    weights : ndarray of shape (J,)
        Mixing coefficients ``pi``.
    """
    if len(resp_labeled) == 0:
        return 1.0
    return float(np.maximum(0.0, weights - resp_labeled.mean(axis=0)).sum())


def distribution_scores(resp_candidates: np.ndarray, resp_sum: np.ndarray, n_chosen: int,
                        weights: np.ndarray) -> np.ndarray:
    """Eq 19 for each candidate ``x``: ``1 - sum_j max(0, pi_j - (R_j + rho_j(x)) / (n + 1))``.

    Parameters
    ----------
    resp_candidates : ndarray of shape (m, J)
        ``rho(x)`` of the candidates.
    resp_sum : ndarray of shape (J,)
        ``R``: summed responsibilities of ``L u S``.
    n_chosen : int
        ``n = |L| + |S|``.
    weights : ndarray of shape (J,)

    Returns
    -------
    ndarray of shape (m,)
        In ``[0, 1]``.
    """
    mean = (resp_sum[None, :] + resp_candidates) / (n_chosen + 1.0)
    return 1.0 - np.maximum(0.0, weights[None, :] - mean).sum(axis=1)


def literal_diversity(log_p_candidates: np.ndarray, log_p_chosen: np.ndarray) -> np.ndarray:
    """Eq 20: ``-(1 / (|S| + 1)) sum_{x' in S u {x}} log p(x')`` for each candidate.

    Parameters
    ----------
    log_p_candidates : ndarray of shape (m,)
        ``log p(x)`` of the candidates.
    log_p_chosen : ndarray of shape (|S|,)
        ``log p`` of the rows already in the batch.

    Returns
    -------
    ndarray of shape (m,)
    """
    return -(log_p_chosen.sum() + log_p_candidates) / (len(log_p_chosen) + 1.0)


def set_mixture_diversity(resp_candidates: np.ndarray, log_comp_candidates: np.ndarray,
                          resp_chosen: np.ndarray, log_comp_chosen: np.ndarray) -> np.ndarray:
    """Entropy of ``T = S u {x}`` under the mixture re-weighted by ``T`` (module docstring).

    ``-(1 / |T|) sum_{x' in T} log sum_j w_Tj p(x'|j)``, ``w_T = mean_{x' in T} rho(x')``.

    Parameters
    ----------
    resp_candidates : ndarray of shape (m, J)
    log_comp_candidates : ndarray of shape (m, J)
        ``log p(x|j)`` of the candidates.
    resp_chosen : ndarray of shape (s, J)
    log_comp_chosen : ndarray of shape (s, J)

    Returns
    -------
    ndarray of shape (m,)
    """
    size = len(resp_chosen) + 1.0
    w = (resp_chosen.sum(axis=0)[None, :] + resp_candidates) / size            # (m, J)
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    own = logsumexp(log_w + log_comp_candidates, axis=1)                        # (m,)
    members = logsumexp(log_w[:, None, :] + log_comp_chosen[None, :, :], axis=2)  # (m, s)
    return -(own + members.sum(axis=1)) / size


def expected_error(scores: np.ndarray) -> float:
    """Mean over the rows of ``1 - max_k P(k | x)``, ``P`` the softmax of ``scores`` (the SVM's
    uncalibrated posterior); 0 without rows.

    Parameters
    ----------
    scores : ndarray of shape (n, K)
        ``KernelSVC.scores`` (``-inf`` for a class without a label).
    """
    if len(scores) == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        top = np.exp(np.max(log_softmax(scores, axis=1), axis=1))
    return float(np.mean(1.0 - top))


class FourDSWeights(NamedTuple):
    """Weights of the four criteria (they sum to 1)."""

    distance: float
    density: float
    distribution: float
    diversity: float


def four_ds_weights(deviation: float, uncertain_share: float, lmbda: float) -> FourDSWeights:
    """The self-adaptive weights (module docstring).

    Parameters
    ----------
    deviation : float in [0, 1]
        :func:`distribution_deviation` of the labeled set.
    uncertain_share : float in [0, 1]
        ``e``: the share of pool rows inside the margin band, or the SVM's expected error
        (``FourDS.performance``).
    lmbda : float in [0, 1]
        Diversity weight (0 for a batch's first row).
    """
    distribution = min(deviation, 1.0 - lmbda)
    rest = 1.0 - lmbda - distribution
    return FourDSWeights(rest * (1.0 - uncertain_share), rest * uncertain_share,
                         distribution, lmbda)


# ------------------------------------------------------------------------------ strategies

def _density_and_responsibilities(log_comp: np.ndarray, weights: np.ndarray
                                  ) -> tuple[np.ndarray, np.ndarray]:
    """``log p(x)`` (eq 1), shape (n,), and ``rho(x)`` (eq 2), shape (n, J), from
    ``log p(x|j)`` (n, J): one pass over the components instead of one per quantity."""
    with np.errstate(divide="ignore"):
        log_joint = log_comp + np.log(weights)
    log_p = logsumexp(log_joint, axis=1)
    return log_p, np.exp(log_joint - log_p[:, None])


def _decision_values(model, X: np.ndarray, pool: np.ndarray):
    """``model.svm_decision_values(X[pool])``, through ``svm_decision_values_rows(X, pool)``
    when the learner has it (it may answer from what its fit keeps of its training rows)."""
    rows = getattr(model, "svm_decision_values_rows", None)
    return model.svm_decision_values(X[pool]) if rows is None else rows(X, pool)


def _no_model_methods(name: str, model, needs: tuple[str, ...]) -> None:
    missing = [m for m in needs if not hasattr(model, m)]
    if missing:
        raise TypeError(f"strategy '{name}' needs a learner with {', '.join(missing)} "
                        f"(kernel_svm); got {type(model).__name__}")


class SVMUncertaintySampling(QueryStrategy):
    """US for SVMs: the pool rows with the smallest ``|f(x)|`` (eq 17).

    Parameters
    ----------
    multiclass : {"pairwise", "gap"}, default="pairwise"
        The multi-class rule of :func:`svm_margin`.
    """

    required_model_methods = ("svm_decision_values",)

    def __init__(self, multiclass: str = "pairwise") -> None:
        check_choice("uncertainty_svm", "multiclass", multiclass, MULTICLASS_RULES)
        self.multiclass = multiclass

    def score(self, X, pool, model):
        _no_model_methods("uncertainty_svm", model, self.required_model_methods)
        scores, pairwise = _decision_values(model, X, pool)
        return -svm_margin(scores, pairwise, self.multiclass)


class FourDS(QueryStrategy):
    """4DS: distance, density, distribution and diversity with self-adaptive weights (eqs
    17-20); the batch is filled greedily, one row at a time (module docstring).

    Parameters
    ----------
    lmbda : float in [0, 1], default=0.2
        Weight of the diversity criterion for the second and later rows of a batch.
    multiclass : {"pairwise", "gap"}, default="pairwise"
        The multi-class ``|f|`` rule of :func:`svm_margin`.
    density : {"likelihood", "log"}, default="likelihood"
        Density criterion on ``p(x)`` (eq 18 as printed) or on ``log p(x)``.
    diversity : {"literal", "set_mixture"}, default="literal"
        Eq 20 with the pool's mixture, or the entropy of the query set under the mixture
        re-weighted by the set (:func:`set_mixture_diversity`).
    performance : {"margin_band", "expected_error"}, default="margin_band"
        The classifier's state ``e`` that splits distance and density: the share of pool rows
        with ``|f| < 1``, or :func:`expected_error` of the pool (module docstring).
    """

    required_model_methods = ("svm_decision_values", "density_model")

    def __init__(self, lmbda: float = 0.2, multiclass: str = "pairwise",
                 density: str = "likelihood", diversity: str = "literal",
                 performance: str = "margin_band") -> None:
        check_real("four_ds", "lmbda", lmbda, 0.0)
        if lmbda > 1:
            raise ValueError(f"four_ds: invalid lmbda={lmbda!r}; valid: a real number in [0, 1]")
        check_choice("four_ds", "multiclass", multiclass, MULTICLASS_RULES)
        check_choice("four_ds", "density", density, DENSITY_SCALES)
        check_choice("four_ds", "diversity", diversity, DIVERSITY_READINGS)
        check_choice("four_ds", "performance", performance, PERFORMANCE_READINGS)
        self.lmbda = float(lmbda)
        self.multiclass = multiclass
        self.density = density
        self.diversity = diversity
        self.performance = performance

    def query(self, X, y, model, batch_size, rng):
        _no_model_methods("four_ds", model, self.required_model_methods)
        lab_mask = labeled_mask(y)
        pool = np.flatnonzero(~lab_mask)
        if not lab_mask.any():
            return select_top(np.zeros(len(pool)), pool, batch_size, rng)
        picked = self.select(X, pool, np.flatnonzero(lab_mask), model, batch_size, rng)
        return pool[picked]

    def select(self, X: np.ndarray, pool: np.ndarray, labeled: np.ndarray, model,
               batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """Greedy batch: positions (into ``pool``) of the chosen rows, in selection order.

        Parameters
        ----------
        X : ndarray of shape (n, d)
        pool, labeled : ndarray of int
            Row indices of the pool and of the labeled set.
        model : learner with ``svm_decision_values`` and ``density_model``
        batch_size : int
        rng : numpy.random.Generator

        Returns
        -------
        ndarray of int, shape (min(batch_size, len(pool)),)
        """
        mixture = model.density_model()
        scores, pairwise = _decision_values(model, X, pool)
        margin = svm_margin(scores, pairwise, self.multiclass)
        log_comp = log_component_densities(mixture, X[pool])
        log_p, resp_pool = _density_and_responsibilities(log_comp, mixture.weights)
        resp_lab = _density_and_responsibilities(
            log_component_densities(mixture, X[labeled]), mixture.weights)[1]
        distance_term = 1.0 - min_max(margin)
        density_term = min_max(np.exp(log_p - log_p.max()) if self.density == "likelihood"
                               else log_p)
        deviation = distribution_deviation(resp_lab, mixture.weights)
        share = float(np.mean(margin < 1.0)) if self.performance == "margin_band" \
            else expected_error(scores)
        first = four_ds_weights(deviation, share, 0.0)
        later = four_ds_weights(deviation, share, self.lmbda)

        available = np.ones(len(pool), bool)
        resp_sum = resp_lab.sum(axis=0)
        chosen: list[int] = []
        for step in range(min(batch_size, len(pool))):
            cand = np.flatnonzero(available)
            w = first if step == 0 else later
            utility = (w.distance * distance_term[cand] + w.density * density_term[cand]
                       + w.distribution * min_max(distribution_scores(
                           resp_pool[cand], resp_sum, len(labeled) + step, mixture.weights)))
            if step > 0 and w.diversity > 0:
                utility = utility + w.diversity * min_max(self._diversity(
                    cand, np.asarray(chosen), resp_pool, log_comp, log_p))
            pick = int(select_top(utility, cand, 1, rng)[0])
            chosen.append(pick)
            available[pick] = False
            resp_sum = resp_sum + resp_pool[pick]
        return np.asarray(chosen, dtype=np.int64)

    def _diversity(self, cand, chosen, resp_pool, log_comp, log_p) -> np.ndarray:
        if self.diversity == "literal":
            return literal_diversity(log_p[cand], log_p[chosen])
        return set_mixture_diversity(resp_pool[cand], log_comp[cand], resp_pool[chosen],
                                     log_comp[chosen])
