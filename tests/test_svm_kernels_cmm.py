"""CMM_sha / CMM_sep (Reitmaier et al. 2016, eqs 8-11) and the transductive refinement (§4.2).

Oracles: eqs 8-11 evaluated by brute force (loops over rows, components and classes with
``scipy.stats.multivariate_normal``), independent refits for the refinement's local models,
hand-worked cases for its steps, and sklearn's estimator checks.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.utils.estimator_checks import parametrize_with_checks

from alprbf.models.cmm_learners import CMMSeparateLearner, CMMSharedLearner
from alprbf.svm_kernels.cmm import CMMSeparate, CMMShared, class_given_component
from alprbf.svm_kernels.density import (
    DensityOptions,
    MixtureDensity,
    covariance_of,
    fit_density,
    log_density,
    responsibilities,
)
from alprbf.svm_kernels.refinement import (
    component_uniqueness,
    disputed_components,
    nearest_labeled_vote,
    refine_density,
)

SMALL = {"n_components": 4, "weight_concentration_priors": (0.1,),
         "covariance_prior_scales": (0.5, 1.0), "n_mc": 200}


def overlapping(seed=0, n=40):
    """Three overlapping 2-d classes; about a quarter of the rows labeled (codes, nan)."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [1.8, 0.0], [0.0, 1.8]])
    X = np.concatenate([rng.normal(c, 1.0, (n, 2)) for c in centers])
    y = np.repeat(np.arange(3), n).astype(float)
    y_obs = np.where(rng.random(len(y)) < 0.25, y, np.nan)
    return X, y, y_obs


def gaussian_pdfs(m: MixtureDensity, x: np.ndarray) -> np.ndarray:
    return np.array([m.weights[j] * multivariate_normal(m.means[j], m.covariances[j]).pdf(x)
                     for j in range(m.n_components)])


def brute_shared(est: CMMShared, X_fit, y_fit, X, alpha):
    """Eqs 8-9 by loops (with the smoothing of the module docstring)."""
    m, K = est.mixture_, len(est.classes_)
    rho = lambda x: gaussian_pdfs(m, x) / gaussian_pdfs(m, x).sum()   # noqa: E731 (eq 2)
    lab = np.flatnonzero(~np.isnan(y_fit))
    shares = np.array([np.mean(y_fit[lab] == c) for c in range(K)])
    xi = np.zeros((m.n_components, K))
    for j in range(m.n_components):
        if est.component_classes_[j] >= 0:
            xi[j, est.component_classes_[j]] = 1.0
            continue
        n_j = sum(rho(X_fit[i])[j] for i in lab)
        for c in range(K):
            s_jc = sum(rho(X_fit[i])[j] for i in lab if y_fit[i] == c)
            xi[j, c] = (s_jc + alpha * shares[c]) / (n_j + alpha)
    post = np.array([[sum(xi[j, c] * rho(x)[j] for j in range(m.n_components))
                      for c in range(K)] for x in X])
    return xi, post


def brute_separate(est: CMMSeparate, y_fit, X):
    """Eqs 10-11 by loops."""
    lab = ~np.isnan(y_fit)
    out = []
    for x in X:
        joint = []
        for c, dens in enumerate(est.class_densities_):
            prior = np.mean(y_fit[lab] == c)
            joint.append(0.0 if dens is None else prior * gaussian_pdfs(dens, x).sum())
        out.append(np.array(joint) / np.sum(joint))
    return np.array(out)


# ----------------------------------------------------------------------- eqs 8-11

@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_shared_posteriors_are_eqs_8_and_9(alpha):
    X, _, y_obs = overlapping()
    est = CMMShared(**SMALL, smoothing=alpha, classes=[0, 1, 2, 3], random_state=0).fit(X, y_obs)
    xi, post = brute_shared(est, X, y_obs, X[::7], alpha)
    np.testing.assert_allclose(est.class_given_component_, xi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X[::7]), post, rtol=1e-8, atol=1e-12)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P.shape == (len(X), 4) and np.all(P[:, 3] == 0.0)          # class 3: no label
    assert np.all(est.predict_log_proba(X)[:, 3] == -np.inf)
    np.testing.assert_allclose(est.class_given_component_.sum(axis=1), 1.0)


def test_separate_posteriors_are_eqs_10_and_11():
    X, _, y_obs = overlapping(1)
    est = CMMSeparate(**SMALL, classes=[0, 1, 2, 3], random_state=0).fit(X, y_obs)
    np.testing.assert_allclose(est.predict_proba(X[::5]), brute_separate(est, y_obs, X[::5]),
                               rtol=1e-8, atol=1e-12)
    lab = ~np.isnan(y_obs)
    np.testing.assert_allclose(est.class_priors_[:3],
                               np.bincount(y_obs[lab].astype(int)) / lab.sum())
    assert est.class_densities_[3] is None and est.class_priors_[3] == 0.0
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all(P[:, 3] == 0.0)


def test_shared_mixture_is_fitted_on_all_rows_and_separate_on_each_class():
    X, _, y_obs = overlapping(2)
    sha = CMMShared(**SMALL, random_state=4).fit(X, y_obs)
    seed = np.random.RandomState(4).randint(2**31 - 1, size=2)[0]
    alone = fit_density(X, None, DensityOptions(**SMALL), random_state=seed)
    np.testing.assert_array_equal(sha.density_.means, alone.means)
    sep = CMMSeparate(**SMALL, random_state=4).fit(X, y_obs)
    seeds = np.random.RandomState(4).randint(2**31 - 1, size=3)
    rows = y_obs == 1
    mine = fit_density(X[rows], None, DensityOptions(**SMALL), covariance_prior=covariance_of(X),
                       n_categories=(), random_state=seeds[1])
    np.testing.assert_allclose(log_density(sep.class_densities_[1], X), log_density(mine, X))


def test_class_given_component_smoothing_and_fixed_components():
    resp = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.8, 0.2, 0.0], [0.1, 0.1, 0.8]])
    codes = np.array([0, 1, 0, -1])                     # the last row is unlabeled
    # alpha = 1, shares (2/3, 1/3, 0): xi_jc = (S_jc + s_c) / (N_j + 1)
    xi = class_given_component(resp, codes, 3, smoothing=1.0)
    np.testing.assert_allclose(xi, [[(1.8 + 2 / 3) / 3.3, (0.5 + 1 / 3) / 3.3, 0.0],
                                    [(0.2 + 2 / 3) / 1.7, (0.5 + 1 / 3) / 1.7, 0.0],
                                    [2 / 3, 1 / 3, 0.0]])
    # eq 9 exactly (alpha = 0); a component no labeled row reaches gets the class shares
    xi0 = class_given_component(resp, codes, 3, smoothing=0.0)
    np.testing.assert_allclose(xi0, [[1.8 / 2.3, 0.5 / 2.3, 0], [0.2 / 0.7, 0.5 / 0.7, 0],
                                     [2 / 3, 1 / 3, 0]])
    fixed = class_given_component(resp, codes, 3, component_classes=np.array([-1, 2, -1]))
    np.testing.assert_allclose(fixed[1], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(fixed[[0, 2]], xi[[0, 2]])
    np.testing.assert_allclose(class_given_component(resp, np.full(4, -1), 3), 1 / 3)


# ----------------------------------------------------------------------- refinement

def test_disputed_components_hand_worked():
    members = np.array([0, 0, 1, 1, 2, 2, 3])
    codes = np.array([0, 1, -1, 1, 0, 0, -1])
    np.testing.assert_array_equal(disputed_components(members, codes, 5), [0])
    np.testing.assert_array_equal(disputed_components(members, np.full(7, -1), 5), [])


def test_uniqueness_is_the_largest_eq_9_class_weight_hand_worked():
    resp = np.array([[1.0, 0.0], [0.5, 0.5], [0.25, 0.75], [0.0, 1.0], [0.3, 0.7]])
    codes = np.array([0, 1, 1, 2, -1])
    # component 0: S = (1, 0.5 + 0.25, 0) -> 1 / 1.75
    # component 1: S = (0, 0.5 + 0.75, 1) -> 1.25 / 2.25
    np.testing.assert_allclose(component_uniqueness(resp, codes), [1 / 1.75, 1.25 / 2.25])
    # brute force: eq 9 without smoothing is class_given_component with alpha = 0
    xi = class_given_component(resp, codes, 3, smoothing=0.0)
    np.testing.assert_allclose(component_uniqueness(resp, codes), xi.max(axis=1))
    # a component no labeled row reaches has no uniqueness
    assert np.isnan(component_uniqueness(np.array([[1.0, 0.0]]), np.array([0]))[1])


def test_no_majority_disputes_only_components_without_a_majority_class():
    # hard members: component 0 holds labeled rows of classes 0, 0, 1 (a 2/3 majority),
    # component 1 of classes 0 and 1 (no majority), component 2 of one class only
    members = np.array([0, 0, 0, 1, 1, 2, 2])
    codes = np.array([0, 0, 1, 0, 1, 1, -1])
    resp = np.eye(3)[members]
    np.testing.assert_array_equal(disputed_components(members, codes, 3), [0, 1])
    np.testing.assert_array_equal(
        disputed_components(members, codes, 3, rule="no_majority", resp=resp), [1])
    # soft responsibilities decide the share: a labeled class-0 row half in component 1 tips it
    soft = resp.copy()
    soft[5] = [0.0, 0.5, 0.5]
    codes_soft = codes.copy()
    codes_soft[5] = 0
    np.testing.assert_array_equal(
        disputed_components(members, codes_soft, 3, rule="no_majority", resp=soft), [])
    with pytest.raises(ValueError, match="needs resp"):
        disputed_components(members, codes, 3, rule="no_majority")
    with pytest.raises(ValueError, match="valid: two_classes, no_majority"):
        disputed_components(members, codes, 3, rule="majority")


def test_no_majority_keeps_a_component_overlapped_at_its_edge():
    """§5.2's case: two well-modelled Gaussians whose classes overlap at their edge."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1.0, 1.0, (300, 2)), rng.normal(1.0, 1.0, (300, 2))])
    y = np.repeat([0, 1], 300)
    opts = DensityOptions(**{**SMALL, "n_components": 2, "covariance_prior_scales": (1.0,)})
    base = fit_density(X, None, opts, random_state=0)
    assert base.n_components == 2
    codes = np.full(len(X), -1)
    chosen = rng.choice(len(X), 120, replace=False)
    codes[chosen] = y[chosen]
    two = refine_density(base, X, codes, 2, options=opts, covariance_prior=covariance_of(X),
                         random_state=0)
    one = refine_density(base, X, codes, 2, options=opts, covariance_prior=covariance_of(X),
                         dispute="no_majority", random_state=0)
    assert len(two.disputed) == 2          # a few overlap rows suffice for the former reading
    assert len(one.disputed) == 0 and one.density is base
    # labels of three classes spread evenly over the rows: no class holds a majority anywhere
    codes_mixed = np.where(codes >= 0, np.arange(len(X)) % 3, -1)
    mixed = refine_density(base, X, codes_mixed, 3, options=opts,
                           covariance_prior=covariance_of(X), dispute="no_majority",
                           random_state=0)
    np.testing.assert_array_equal(mixed.disputed, [0, 1])


def test_nearest_labeled_vote_hand_worked():
    dist = np.array([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [2.0, 1.0, 3.0, 9.0]])
    labels = np.array([0, 1, 1, 0])
    np.testing.assert_array_equal(nearest_labeled_vote(dist, labels, 3), [1, 1, 1])
    # k = 2: one vote each -> the nearest neighbour's class
    np.testing.assert_array_equal(nearest_labeled_vote(dist, labels, 2), [0, 0, 1])
    np.testing.assert_array_equal(nearest_labeled_vote(dist, labels, 99), [0, 0, 1])   # 2-2 ties


def test_refinement_replaces_disputed_components_by_local_class_mixtures():
    X, _, y_obs = overlapping(3)
    codes = np.where(np.isnan(y_obs), -1, y_obs).astype(int)
    opts = DensityOptions(**SMALL)
    base = fit_density(X, None, opts, random_state=0)
    ref = refine_density(base, X, codes, 3, n_neighbors=3, options=opts,
                         covariance_prior=covariance_of(X), random_state=1)
    assert len(ref.disputed) >= 1
    kept = np.setdiff1d(np.arange(base.n_components), ref.disputed)
    shared = ref.component_classes < 0
    np.testing.assert_allclose(ref.density.means[shared], base.means[kept])
    np.testing.assert_allclose(ref.density.weights[shared], base.weights[kept])
    np.testing.assert_allclose(ref.density.weights[~shared].sum(), base.weights[ref.disputed].sum())
    np.testing.assert_allclose(ref.density.weights.sum(), 1.0)
    # transductive labels: the given ones kept, only members of disputed components labeled
    members = np.argmax(responsibilities(base, X), axis=1)
    in_disputed = np.isin(members, ref.disputed)
    np.testing.assert_array_equal(ref.labels >= 0, in_disputed)
    np.testing.assert_array_equal(ref.labels[(codes >= 0) & in_disputed],
                                  codes[(codes >= 0) & in_disputed])
    # the local components are an independent CMM_sep fit of those rows (same seeds)
    seeds = np.random.RandomState(1).randint(2**31 - 1, size=3)
    local_opts = opts.at(base.weight_concentration_prior, base.covariance_prior_scale)
    for c in np.unique(ref.labels[ref.labels >= 0]):
        start = len(np.unique(members[ref.labels == c]))
        alone = fit_density(X[ref.labels == c], None, replace(local_opts, n_components=start),
                            covariance_prior=covariance_of(X), n_categories=(),
                            random_state=seeds[c])
        np.testing.assert_allclose(ref.density.means[ref.component_classes == c], alone.means)
    again = refine_density(base, X, codes, 3, n_neighbors=3, options=opts,
                           covariance_prior=covariance_of(X), random_state=1)
    np.testing.assert_array_equal(again.density.means, ref.density.means)


def test_refinement_without_disputed_components_keeps_the_model():
    X, y, _ = overlapping(4)
    codes = np.full(len(X), -1)
    codes[0] = 0
    base = fit_density(X, None, DensityOptions(**SMALL), random_state=0)
    ref = refine_density(base, X, codes, 3)
    assert ref.density is base and len(ref.disputed) == 0
    assert np.all(ref.component_classes == -1) and np.all(ref.labels == -1)


def test_shared_with_refinement_follows_eqs_8_and_9_on_the_refined_mixture():
    X, y, y_obs = overlapping(5)
    plain = CMMShared(**SMALL, random_state=0).fit(X, y_obs)
    est = CMMShared(**SMALL, refine=True, n_neighbors=3, random_state=0).fit(X, y_obs)
    assert est.refinement_ is not None and np.any(est.component_classes_ >= 0)
    xi, post = brute_shared(est, X, y_obs, X[::9], 1.0)
    np.testing.assert_allclose(est.class_given_component_, xi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X[::9]), post, rtol=1e-8, atol=1e-12)
    assert np.mean(est.predict(X) == y) >= np.mean(plain.predict(X) == y) - 0.1


# ----------------------------------------------------------------- determinism, warm start

@pytest.mark.parametrize("cls", [CMMShared, CMMSeparate])
def test_deterministic_and_warm_refit_equals_cold(cls):
    X, y, y_obs = overlapping(6)
    a = cls(**SMALL, random_state=3).fit(X, y_obs)
    b = cls(**SMALL, random_state=3).fit(X, y_obs)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    y_next = y_obs.copy()
    new = np.flatnonzero(np.isnan(y_obs) & (y == 2))[:2]
    y_next[new] = 2
    warm = cls(**SMALL, random_state=3).fit(X, y_next, previous=a)
    cold = cls(**SMALL, random_state=3).fit(X, y_next)
    np.testing.assert_array_equal(warm.predict_proba(X), cold.predict_proba(X))
    if cls is CMMShared:
        assert warm.density_ is a.density_
    else:
        assert warm.class_densities_[0] is a.class_densities_[0]
        assert warm.class_densities_[2] is not a.class_densities_[2]


def test_learners_warm_start_and_predict_uniform_without_labels():
    X, y, y_obs = overlapping(7)
    sha = CMMSharedLearner(n_classes=4, random_state=0, **SMALL)
    P = sha.fit(X, np.full(len(X), np.nan)).predict_proba(X)
    np.testing.assert_allclose(P, 0.25)
    assert sha.model_size() is None
    first = sha.fit(X, y_obs).estimator_.density_
    assert sha.fit(X, y).estimator_.density_ is first
    assert sha.model_size() == first.n_components
    sep = CMMSeparateLearner(n_classes=4, random_state=0, **SMALL).fit(X, y_obs)
    assert sep.predict_proba(X).shape == (len(X), 4)
    with pytest.raises(ValueError, match="smoothing"):
        CMMSharedLearner(n_classes=2, smoothing=-1.0)
    with pytest.raises(ValueError, match="n_components"):
        CMMSeparateLearner(n_classes=2, n_components=0)


# -------------------------------------------------------------------------- edge cases

def edge_case(name):
    rng = np.random.default_rng(11)
    if name == "one_label_per_class":
        X, y, _ = overlapping(8)
        y_obs = np.full(len(y), np.nan)
        y_obs[[0, 40, 80]] = [0, 1, 2]
        return X, y_obs, None
    if name == "duplicates":
        X = np.repeat(rng.normal(size=(6, 2)), 5, axis=0)
        return X, np.repeat([0, 1, 0, 1, 2, 2], 5).astype(float), None
    if name == "constant_feature":
        X, y, y_obs = overlapping(9)
        return np.column_stack([X, np.full(len(X), 3.0)]), y_obs, None
    if name == "d_above_n_labeled":
        X = rng.normal(size=(60, 15))
        y_obs = np.full(60, np.nan)
        y_obs[:6] = [0, 1, 2, 0, 1, 2]
        return X, y_obs, None
    if name == "categorical_only":
        X = rng.integers(0, 3, size=(30, 4)).astype(float)
        return X, (X[:, 0] > 0).astype(float), np.ones(4, bool)
    X, y, y_obs = overlapping(10)                                        # mixed
    X = np.column_stack([X, rng.integers(0, 4, len(X)), y])
    return X, y_obs, np.array([False, False, True, True])


@pytest.mark.parametrize("cls", [CMMShared, CMMSeparate])
@pytest.mark.parametrize("name", ["one_label_per_class", "duplicates", "constant_feature",
                                  "d_above_n_labeled", "categorical_only", "mixed"])
def test_edge_cases_give_finite_posteriors(cls, name):
    X, y_obs, mask = edge_case(name)
    extra = {"refine": True} if cls is CMMShared else {}
    est = cls(**SMALL, **extra, categorical=mask, classes=[0, 1, 2], random_state=0)
    P = est.fit(X, y_obs).predict_proba(X)
    assert np.all(np.isfinite(P)) and not np.any(np.isnan(est.predict_log_proba(X)))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    if name == "mixed":   # the categorical class-coloured column is picked up
        lab = ~np.isnan(y_obs)
        assert np.mean(est.predict(X)[~lab] == X[~lab, 3]) > 0.8


def test_no_label_at_all_is_refused():
    with pytest.raises(ValueError, match="labeled row"):
        CMMShared(**SMALL).fit(np.zeros((3, 2)), np.full(3, np.nan))


# ------------------------------------------------------------------------ sklearn checks

# CMMShared and CMMSeparate with their defaults are checked in tests/test_sklearn_checks.py
# with every other estimator; the refinement path is checked here only.
CHECKED = [CMMShared(**SMALL, refine=True)]


@pytest.mark.slow   # sklearn's estimator checks, about 15 s: make test and CI run them
@parametrize_with_checks(CHECKED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        check(estimator)
