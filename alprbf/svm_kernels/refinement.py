"""Transductive refinement of the density model with the labels known so far (Reitmaier et al. 2016,
§4.2).

This module owns the revision ``M_i = refine(M, L_i)`` of Algorithm 1, line 14.  The paper
describes the transductive learner in words only (its formulas are in the paper's ref. [49],
not at hand); :func:`refine_density` is our reconstruction of the five steps it names:

1. **Members.**  Every row is a member of its most responsible component
   (``argmax_j rho_j(x)``, eq 2).
2. **Disputed components.**  The paper flags them by an interestingness measure it calls
   uniqueness and defines only in its ref. [49].  Two readings (``dispute``):

   * ``"two_classes"``: a component is disputed when its labeled members carry two or more
     classes;
   * ``"no_majority"`` (docs/decisions/0311): the component's *uniqueness* is the largest of its
     class weights ``p(c|j)``, estimated by eq 9 from the labeled rows' responsibilities
     (``S_jc / N_j``, no smoothing); the component is disputed when its labeled members carry
     two or more classes *and* no class holds more than half of its class mass
     (uniqueness ``<= 1/2``).  A component that models one class's cluster, with rows of an
     overlapping class at its edge, keeps its class (§5.2: Clouds' four components, which
     model the four generating Gaussians, are never disputed up to 120 labels); one that
     models rows of several classes about equally has no class to keep.

   A component whose labeled members all share one class, or that has none, is undisputed
   under both.
3. **Transductive labels.**  Each unlabeled member of a disputed component gets the majority
   class of its ``n_neighbors`` nearest labeled members *of the same component* (fewer if the
   component has fewer), with the distance of that component: the squared Mahalanobis
   distance of eq 5 under ``Sigma_j`` plus the number of mismatching categorical values.
   A tie between classes goes to the class of the nearest neighbour among the tied ones.
4. **Local CMM_sep.**  The members of the disputed components, now all labeled, are split by
   class and one mixture per class is fitted by VI (:func:`~.density.fit_density` with the
   hyper-parameters of the base model, no grid search; the prior covariance is the one of the
   base model's rows, passed by the caller).  A class's VI starts from as many components
   as there are disputed components among which its rows lie (at most ``n_components``), so
   the local model replaces each disputed component by at most one component per class
   before pruning.
5. **Fusion.**  The undisputed components keep their parameters and weights ``pi_j``; the
   mass ``W = sum_{j disputed} pi_j`` of the disputed ones is handed to the local components:
   a local component ``l`` of class ``c`` gets ``W * (n_c / n_D) * pi_{c,l}``, with
   ``n_c / n_D`` the share of class ``c`` among the disputed members (eq 11 applied locally)
   and ``pi_{c,l}`` its weight in its class's mixture.  The local components are assigned to
   their class (``p(c|l) = 1``, as in CMM_sep); the undisputed ones keep the CMM_sha
   treatment (class weights from eq 9).

The base model is always the unsupervised model ``M0`` and the labels the whole labeled set
``L_i``, rather than ``M_{i-1}`` revised with the newest labels: the refined model is then a
pure function of ``(M0, L_i)``, the same whatever the order of the queries (deterministic
under a seed, and a warm refit equals a cold one).  Switch the refinement off by not calling
this function (the CMM estimators' ``refine=False``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.utils import check_random_state

from .density import (
    DensityOptions,
    MixtureDensity,
    fit_density,
    log_responsibilities,
    merge_mixtures,
    split_columns,
    subset_components,
)

DISPUTE_RULES = ("two_classes", "no_majority")
"""Readings of the paper's "disputed" (module docstring, step 2)."""


@dataclass(frozen=True, eq=False)
class RefinedDensity:
    """Result of :func:`refine_density`.

    Attributes
    ----------
    density : MixtureDensity
        The fused mixture: the undisputed components of the base model first (in their
        order), then the local components class by class.
    component_classes : ndarray of int64, shape (J',)
        Class code of each local component; ``-1`` for a component kept from the base model.
    disputed : ndarray of int64
        Indices (in the base model) of the disputed components.
    labels : ndarray of int64, shape (n,)
        Class codes the local models were fitted on (given and transductive labels of the
        members of disputed components); ``-1`` for every other row.
    """

    density: MixtureDensity
    component_classes: np.ndarray
    disputed: np.ndarray
    labels: np.ndarray


def component_uniqueness(resp: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Uniqueness of every component: its largest class weight ``p(c|j)`` by eq 9.

    Parameters
    ----------
    resp : ndarray of shape (n, J)
        Responsibilities ``rho_j(x)`` (eq 2) of the rows.
    codes : ndarray of int, shape (n,)
        Class codes, ``-1`` for unlabeled rows (ignored).

    Returns
    -------
    ndarray of shape (J,)
        ``max_c S_jc / N_j`` with ``S_jc`` the responsibilities of component ``j`` summed over
        the labeled rows of class ``c`` and ``N_j = sum_c S_jc``; ``nan`` where ``N_j = 0``.
    """
    lab = codes >= 0
    classes = np.unique(codes[lab])
    S = resp[lab].T @ (codes[lab][:, None] == classes).astype(np.float64)      # (J, C')
    N = S.sum(axis=1)
    top = S.max(axis=1) if S.shape[1] else np.zeros(len(S))
    return np.divide(top, N, out=np.full(len(S), np.nan), where=N > 0)


def disputed_components(members: np.ndarray, codes: np.ndarray, n_components: int, *,
                        rule: str = "two_classes", resp: np.ndarray | None = None
                        ) -> np.ndarray:
    """Disputed components under the reading ``rule`` (step 2, module docstring).

    Parameters
    ----------
    members : ndarray of int, shape (n,)
        Component of every row (step 1).
    codes : ndarray of int, shape (n,)
        Class codes, ``-1`` for unlabeled rows.
    n_components : int
    rule : {"two_classes", "no_majority"}, default="two_classes"
    resp : ndarray of shape (n, n_components) or None
        Responsibilities of the rows; required by ``"no_majority"``.

    Returns
    -------
    ndarray of int64
        Sorted component indices.
    """
    lab = codes >= 0
    pairs = np.unique(np.stack([members[lab], codes[lab]]), axis=1)
    n_classes = np.bincount(pairs[0], minlength=n_components) if pairs.size else np.zeros(
        n_components, dtype=np.int64)
    disputed = n_classes >= 2
    if rule == "no_majority":
        if resp is None:
            raise ValueError("disputed_components: rule='no_majority' needs resp")
        disputed &= ~(component_uniqueness(resp, codes) > 0.5)
    elif rule != "two_classes":
        raise ValueError(f"disputed_components: invalid rule={rule!r}; valid: "
                         f"{', '.join(DISPUTE_RULES)}")
    return np.flatnonzero(disputed).astype(np.int64)


def nearest_labeled_vote(dist: np.ndarray, labels: np.ndarray, n_neighbors: int) -> np.ndarray:
    """Majority class of the ``n_neighbors`` nearest labeled rows (step 3).

    Parameters
    ----------
    dist : ndarray of shape (m, l)
        Distances from the ``m`` rows to label to the ``l >= 1`` labeled rows.
    labels : ndarray of int, shape (l,)
    n_neighbors : int
        Capped at ``l``.

    Returns
    -------
    ndarray of int64, shape (m,)
        Ties go to the class of the nearest neighbour among the tied classes.
    """
    k = min(n_neighbors, dist.shape[1])
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    near = labels[order]                                           # (m, k), nearest first
    votes = (near[:, :, None] == near[:, None, :]).sum(axis=2)     # votes of each one's class
    first_best = np.argmax(votes == votes.max(axis=1, keepdims=True), axis=1)
    return near[np.arange(len(near)), first_best].astype(np.int64)


def _component_distances(density: MixtureDensity, j: int, X_from: np.ndarray,
                         X_to: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distance under ``Sigma_j`` plus categorical mismatches, (m, l)."""
    (a, ca), (b, cb) = split_columns(X_from, density.categorical), split_columns(
        X_to, density.categorical)
    U = density.precisions_cholesky[j]
    d = cdist(a @ U, b @ U, "sqeuclidean") if a.shape[1] else np.zeros((len(a), len(b)))
    if ca.shape[1]:
        d += cdist(ca, cb, "hamming") * ca.shape[1]
    return d


def refine_density(density: MixtureDensity, X: np.ndarray, codes: np.ndarray, n_classes: int,
                   *, n_neighbors: int = 5, options: DensityOptions | None = None,
                   covariance_prior: np.ndarray | None = None, dispute: str = "two_classes",
                   random_state=None) -> RefinedDensity:
    """Revise ``density`` with the labeled rows of ``X`` (module docstring, steps 1-5).

    Parameters
    ----------
    density : MixtureDensity
        The base (unsupervised) model of the rows ``X``.
    X : ndarray of shape (n, n_features)
        Every row the base model describes (labeled and unlabeled).
    codes : ndarray of int, shape (n,)
        Class codes ``0 .. n_classes-1``; ``-1`` for unlabeled rows.
    n_classes : int
    n_neighbors : int, default=5
        Neighbours of the transductive labelling.
    options : DensityOptions or None
        VI settings of the local fits (the grid is replaced by the base model's point).
    covariance_prior : ndarray of shape (D, D) or None
        Prior covariance ``C`` of the local fits (the base model's; None: each class's rows).
    dispute : {"two_classes", "no_majority"}, default="two_classes"
        Which components are disputed (module docstring, step 2).
    random_state : int, RandomState or None
        Seeds of the local fits (one per class, drawn in class order).

    Returns
    -------
    RefinedDensity
    """
    X = np.asarray(X, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.int64)
    J = density.n_components
    log_resp = log_responsibilities(density, X)
    members = np.argmax(log_resp, axis=1)
    disputed = disputed_components(members, codes, J, rule=dispute,
                                   resp=np.exp(log_resp) if dispute == "no_majority" else None)
    if not len(disputed):
        return RefinedDensity(density, np.full(J, -1, dtype=np.int64), disputed,
                              np.full(len(X), -1, dtype=np.int64))
    labels = np.full(len(X), -1, dtype=np.int64)
    for j in disputed:
        rows = np.flatnonzero(members == j)
        lab, unl = rows[codes[rows] >= 0], rows[codes[rows] < 0]
        labels[lab] = codes[lab]
        if len(unl):
            dist = _component_distances(density, j, X[unl], X[lab])
            labels[unl] = nearest_labeled_vote(dist, codes[lab], n_neighbors)
    options = (options or DensityOptions()).at(density.weight_concentration_prior,
                                               density.covariance_prior_scale)
    seeds = check_random_state(random_state).randint(2**31 - 1, size=n_classes)
    local, shares, classes = [], [], []
    for c in range(n_classes):
        rows = labels == c
        if not np.any(rows):
            continue
        start = min(options.n_components, len(np.unique(members[rows])))
        local.append(fit_density(X[rows], density.categorical,
                                 replace(options, n_components=start),
                                 covariance_prior=covariance_prior,
                                 n_categories=density.n_categories, random_state=seeds[c]))
        shares.append(np.mean(labels[labels >= 0] == c))
        classes.append(np.full(local[-1].n_components, c, dtype=np.int64))
    kept = np.setdiff1d(np.arange(J), disputed)
    mass = density.weights[disputed].sum()
    parts = ([subset_components(density, kept)] if len(kept) else []) + local
    part_shares = ([1.0 - mass] if len(kept) else []) + [mass * s for s in shares]
    fused = replace(merge_mixtures(parts, part_shares), **{
        name: getattr(density, name) for name in (
            "weight_concentration_prior", "covariance_prior_scale", "representativity",
            "grid_scores", "converged", "n_iter")})
    component_classes = np.concatenate([np.full(len(kept), -1, dtype=np.int64)] + classes)
    return RefinedDensity(fused, component_classes, disputed, labels)
