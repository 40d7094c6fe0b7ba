"""Hierarchical component split: shared components -> class-specific subcomponents (pure).

Supervised (001 eqs 11-15, 000 eqs 11-14): after EM, component ``j`` is responsible for class
``k`` when ``m_jk = sum_{x in X_k} p(j|x, k) > 0``.  A component responsible for more than one
class is replaced by one subcomponent per such class with

    pi_jk = m_jk / N_k,                                      (eq 11; eq 12: zero for other classes)
    mu_jk = sum_{X_k} p(j|x,k) x / m_jk,                      (eq 13)
    Sigma_jk = sum_{X_k} p(j|x,k) (x-mu_jk)(x-mu_jk)^T / m_jk (eq 14, plus ``reg_covar``).

Semi-supervised (000 eqs 30-33): the same with the joint posteriors over labeled *and*
unlabeled rows, ``m_jk = sum_{x in Omega} p(j, k|x)`` and
``pi_jk = m_jk / (N_k + sum_j sum_{X_U} p(j, k|x))``; with no unlabeled rows this is the
supervised split.  Both use :attr:`EStep.counts` and the (n, M) responsibilities (see the
factorisation in :mod:`alprbf.prbf._estep`), so one code path serves both.

Choices where the papers are silent:

* Components responsible for a single class keep their mean and covariance (the paper splits
  only shared components); their weight is still ``m_jk / N_k`` (eq 11 applies to every
  component).  For each class this is a (generalised) EM step of that class's own mixture, so
  the class-conditional likelihood cannot decrease in the supervised case (the bound of 001
  §II.B / [10]) apart from the effect of ``reg_covar``.
* "Responsible" means ``m_jk > min_mass``; ``min_mass = 0`` is the papers' literal test.  A
  positive ``min_mass`` drops negligible subcomponents (fitted to a tiny responsibility mass,
  they are nearly degenerate and can create spikes on duplicated points); the weights of each
  class are then renormalised, which can lower that class's likelihood by at most
  ``-log(1 - dropped mass / N_k)``.
* No EM is run after the split (001 step 7 computes PRBFsplit directly from eqs 11-15).
* Class priors are kept.  A class with no mass at all (no labeled row, prior 0) gets uniform
  weights over the subcomponents (irrelevant because its prior is 0; keeps columns summing to 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._data import PRBFData
from ._estep import EStep, mixture_weights
from ._gaussian import gaussian_parameters_and_precisions
from ._params import PRBFParams


@dataclass(frozen=True, eq=False)
class SplitResult:
    """Result of :func:`split_params`.

    Attributes
    ----------
    params : PRBFParams
        ``M'`` class-specific components (each row of ``weights`` has one non-zero entry,
        except for classes with no mass, which get uniform weights).
    parent : ndarray (M',), int
        Index of the component of the unsplit network that each new component came from.
    component_class : ndarray (M',), int
        The class each new component describes.
    """

    params: PRBFParams
    parent: np.ndarray
    component_class: np.ndarray


def split_params(data: PRBFData, params: PRBFParams, estep: EStep, *, reg_covar: float = 1e-6,
                 min_mass: float = 0.0) -> SplitResult:
    """Split every shared component into class-specific subcomponents.

    Parameters
    ----------
    data : PRBFData
        Training rows (unlabeled rows make it the semi-supervised split, 000 eqs 30-33).
    params : PRBFParams
        The trained (unsplit) network.
    estep : EStep
        ``e_step(data, params)``.
    reg_covar : float
        Covariance floor for the new covariances.
    min_mass : float
        A component is responsible for class ``k`` when ``m_jk > min_mass``.

    Returns
    -------
    SplitResult
    """
    counts = estep.counts                              # (M, K)  m_jk
    M, K = counts.shape
    ct = params.covariance_type
    resp_mask = counts > min_mass
    n_resp = resp_mask.sum(axis=1)
    shared = n_resp >= 2

    # subcomponent weight columns W[:, s] for every (j, k) with j shared and k responsible:
    # labeled rows of class k: p(j|x,k); unlabeled rows: p(j,k|x) = c_jk r_j(x).
    pairs = [(j, k) for j in range(M) if shared[j] for k in range(K) if resp_mask[j, k]]
    new_means, new_covs, new_prec, parent, klass = [], [], [], [], []
    sub_stats = {}
    if pairs:
        js = np.array([p[0] for p in pairs])
        ks = np.array([p[1] for p in pairs])
        W = np.zeros((data.n_samples, len(pairs)))
        lab, unl = data.labeled, data.unlabeled
        if len(lab):
            W[lab] = estep.resp[lab][:, js] * data.onehot[:, ks]
        if len(unl):
            w = mixture_weights(params)
            with np.errstate(divide="ignore", invalid="ignore"):
                c = params.weights * params.class_priors / w[:, None]
            c[~np.isfinite(c)] = 0.0
            W[unl] = estep.resp[unl][:, js] * c[js, ks]
        _, mu, cov, prec = gaussian_parameters_and_precisions(data.features, W, reg_covar)
        sub_stats = {p: (mu[s], cov[s], prec[s]) for s, p in enumerate(pairs)}

    for j in range(M):
        if n_resp[j] == 0:
            continue
        for k in range(K):
            if not resp_mask[j, k]:
                continue
            if shared[j]:
                mu, cov, prec = sub_stats[(j, k)]
            else:
                mu, cov, prec = (params.means[j], params.covariances[j],
                                 params.precisions_cholesky[j])
            new_means.append(mu)
            new_covs.append(cov)
            new_prec.append(prec)
            parent.append(j)
            klass.append(k)

    parent_a = np.asarray(parent, dtype=np.int64)
    klass_a = np.asarray(klass, dtype=np.int64)
    Mn = len(parent_a)
    if Mn == 0:  # nothing is responsible for anything (no labeled row): keep the network
        return SplitResult(params, np.arange(M), np.argmax(params.weights, axis=1))
    weights = np.zeros((Mn, K))
    weights[np.arange(Mn), klass_a] = counts[parent_a, klass_a]
    colsum = weights.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = np.where(colsum > 0, weights / colsum, 1.0 / Mn)
    new = PRBFParams(np.array(new_means), np.array(new_covs), np.array(new_prec), weights,
                     params.class_priors.copy(), ct)
    return SplitResult(new, parent_a, klass_a)
