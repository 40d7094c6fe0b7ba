"""US for SVMs and 4DS (alprbf.strategies.svm): scores against brute force, the multi-class
|f| rule, the weights, and the batches they select."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal
from sklearn.svm import SVC

from alprbf.engine.config import parse_config
from alprbf.errors import UserError
from alprbf.models import MODELS
from alprbf.strategies import STRATEGIES
from alprbf.strategies.svm import (
    FourDS,
    distribution_deviation,
    distribution_scores,
    expected_error,
    four_ds_weights,
    literal_diversity,
    set_mixture_diversity,
    svm_margin,
)
from alprbf.svm_kernels.density import MixtureDensity, precision_cholesky
from alprbf.svm_kernels.gram import rbf_gram
from alprbf.svm_kernels.svm import KernelSVC

# ------------------------------------------------------------------ hand-made mixture

WEIGHTS = np.array([0.5, 0.3, 0.2])
MEANS = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
COVS = np.array([np.eye(2), [[1.0, 0.3], [0.3, 0.5]], [[0.6, 0.0], [0.0, 1.5]]])


def mixture() -> MixtureDensity:
    return MixtureDensity(WEIGHTS, MEANS, COVS, precision_cholesky(COVS),
                          np.zeros(2, bool), (), np.zeros((3, 0)))


def component_pdfs(X):
    """p(x|j) by scipy, shape (n, J) (the oracle for the mixture quantities)."""
    return np.column_stack([multivariate_normal(m, c).pdf(X)
                            for m, c in zip(MEANS, COVS, strict=True)])


class FakeSVMLearner:
    """A learner with fixed decision values of the rows of ``X`` and the hand-made mixture."""

    def __init__(self, X, scores, pairwise):
        self.row_of = {tuple(x): i for i, x in enumerate(X)}
        self.scores, self.pairwise = scores, pairwise

    def svm_decision_values(self, X):
        rows = [self.row_of[tuple(x)] for x in X]
        return self.scores[rows], self.pairwise[rows]

    def density_model(self):
        return mixture()


def two_class_values(f):
    """scores / pairwise of a binary SVM with decision values f (f > 0 favours class 1)."""
    scores = np.column_stack([-f / 2, f / 2])
    pairwise = np.zeros((len(f), 2, 2))
    pairwise[:, 0, 1], pairwise[:, 1, 0] = -f, f
    return scores, pairwise


# ------------------------------------------------------------------ multi-class |f|

def test_margin_rule_on_a_hand_worked_case():
    # three classes; row 0: class 0 wins 2 votes, class 2 one; row 1: a three-way vote tie
    # broken by confidence, class 1 ahead of class 0
    pairwise = np.zeros((2, 3, 3))
    for i, (f01, f02, f12) in enumerate([(0.8, 1.5, -0.4), (-0.3, 0.5, 0.2)]):
        pairwise[i, 0, 1], pairwise[i, 0, 2], pairwise[i, 1, 2] = f01, f02, f12
    pairwise -= pairwise.transpose(0, 2, 1)
    # sklearn's ovr transform: votes + c / (3 (|c| + 1)), c the summed pairwise values
    votes = (pairwise > 0).sum(axis=2)
    c = pairwise.sum(axis=2)
    scores = votes + c / (3 * (np.abs(c) + 1))
    # row 0: votes (2, 0, 1): winner 0, runner-up 2 -> |f_02| = 1.5
    # row 1: votes (1, 1, 1); c = (0.2, 0.5, -0.7): winner 1, runner-up 0 -> |f_10| = 0.3
    np.testing.assert_allclose(svm_margin(scores, pairwise), [1.5, 0.3])
    gap = np.sort(scores, axis=1)
    np.testing.assert_allclose(svm_margin(scores, pairwise, "gap"), gap[:, 2] - gap[:, 1])


def test_margin_is_abs_f_for_two_classes_and_zero_for_one():
    f = np.array([-2.0, -0.1, 0.0, 0.7])
    np.testing.assert_allclose(svm_margin(*two_class_values(f)), np.abs(f))
    np.testing.assert_allclose(svm_margin(*two_class_values(f), "gap"), np.abs(f))
    one = np.full((4, 3), -np.inf)
    one[:, 1] = 0.0
    np.testing.assert_array_equal(svm_margin(one, np.zeros((4, 3, 3))), np.zeros(4))


def blobs(seed=0, k=4, n_per=25):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [3, 0], [0, 3], [3, 3]], float)[:k]
    X = np.concatenate([rng.normal(c, 0.9, size=(n_per, 2)) for c in centers])
    y = np.repeat(np.arange(k), n_per)
    y_obs = np.full(len(y), np.nan)
    show = np.flatnonzero(rng.random(len(y)) < 0.3)
    y_obs[show] = y[show]
    return X, y, y_obs


@pytest.mark.parametrize("kernel", ["rbf", "rwm"])
def test_pairwise_values_are_the_binary_svms_of_each_pair(kernel):
    """Oracle: libsvm's one-vs-one SVM of classes a < b is an SVC trained on those two
    classes' labeled rows alone, on the same Gram matrix."""
    X, _, y_obs = blobs()
    y_obs[y_obs == 3] = np.nan                       # class 3 never labeled
    est = KernelSVC(kernel=kernel, C=1.0, gamma=0.5, n_components=4, classes=np.arange(4),
                    random_state=0).fit(X, y_obs)
    scores, pairwise = est.decision_values(X)
    np.testing.assert_array_equal(scores, est.scores(X))
    lab = np.flatnonzero(~np.isnan(y_obs))
    gram = est._gram(None, lab, X_new=X)
    for a in range(3):
        for b in range(a + 1, 3):
            cols = np.flatnonzero(np.isin(y_obs[lab], [a, b]))
            pair = SVC(kernel="precomputed", C=1.0).fit(gram[np.ix_(lab[cols], cols)],
                                                         y_obs[lab][cols])
            f = pair.decision_function(gram[:, cols])   # > 0 favours b
            np.testing.assert_allclose(pairwise[:, a, b], -f, atol=1e-8)
            np.testing.assert_allclose(pairwise[:, b, a], f, atol=1e-8)
    assert np.all(pairwise[:, 3] == 0) and np.all(pairwise[:, :, 3] == 0)
    # the winner of the scores is the class with most pairwise wins
    votes = (pairwise[:, :3, :3] > 0).sum(axis=2)
    assert np.array_equal(np.argmax(votes, axis=1), np.argmax(scores, axis=1))


def test_uncertainty_svm_queries_the_smallest_margin():
    X, _, y_obs = blobs(1, k=3)
    learner = MODELS["kernel_svm"](n_classes=3, random_state=0, kernel="rbf", C=1.0, gamma=0.5)
    learner.fit(X, y_obs)
    pool = np.flatnonzero(np.isnan(y_obs))
    scores, pairwise = learner.svm_decision_values(X[pool])
    margins = {int(i): svm_margin(scores[[r]], pairwise[[r]])[0] for r, i in enumerate(pool)}
    picked = STRATEGIES["uncertainty_svm"]().query(X, y_obs, learner, 3,
                                                     np.random.default_rng(0))
    assert picked.tolist() == sorted(margins, key=margins.get)[:3]


# ------------------------------------------------------------------ 4DS criteria

def test_distribution_scores_against_a_loop():
    rng = np.random.default_rng(2)
    R_lab = rng.dirichlet(np.ones(3), size=6)
    R_cand = rng.dirichlet(np.ones(3), size=9)
    got = distribution_scores(R_cand, R_lab.sum(axis=0), len(R_lab), WEIGHTS)
    for c in range(len(R_cand)):
        members = list(R_lab) + [R_cand[c]]
        deficit = 0.0
        for j in range(3):
            mean_j = sum(r[j] for r in members) / len(members)
            deficit += max(0.0, WEIGHTS[j] - mean_j)
        assert math.isclose(got[c], 1 - deficit, rel_tol=1e-12)
    dev = sum(max(0.0, WEIGHTS[j] - R_lab[:, j].mean()) for j in range(3))
    assert math.isclose(distribution_deviation(R_lab, WEIGHTS), dev, rel_tol=1e-12)
    assert distribution_deviation(np.zeros((0, 3)), WEIGHTS) == 1.0


def test_diversities_against_loops():
    rng = np.random.default_rng(3)
    X = rng.normal(1.5, 2.0, size=(8, 2))
    comp = component_pdfs(X)
    p = comp @ WEIGHTS
    resp = comp * WEIGHTS / p[:, None]
    chosen, cand = [1, 4], [0, 2, 3, 5, 6, 7]
    lit = literal_diversity(np.log(p[cand]), np.log(p[chosen]))
    for k, c in enumerate(cand):
        T = chosen + [c]
        assert math.isclose(lit[k], -sum(math.log(p[t]) for t in T) / len(T), rel_tol=1e-12)
    got = set_mixture_diversity(resp[cand], np.log(comp[cand]), resp[chosen],
                                np.log(comp[chosen]))
    for k, c in enumerate(cand):
        T = chosen + [c]
        w = [sum(resp[t, j] for t in T) / len(T) for j in range(3)]
        ent = -sum(math.log(sum(w[j] * comp[t, j] for j in range(3))) for t in T) / len(T)
        assert math.isclose(got[k], ent, rel_tol=1e-10)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_weights_are_finite_non_negative_and_sum_to_one(deviation, share, lmbda):
    w = four_ds_weights(deviation, share, lmbda)
    assert all(math.isfinite(v) and v >= 0 for v in w)
    assert math.isclose(sum(w), 1.0, abs_tol=1e-12)
    assert w.diversity == lmbda and w.distribution == min(deviation, 1 - lmbda)
    assert math.isclose(w.density, (1 - lmbda - w.distribution) * share, abs_tol=1e-12)


def test_weights_follow_the_state_of_the_process():
    early = four_ds_weights(0.6, 0.9, 0.0)   # labels far from the mixture, unsure classifier
    late = four_ds_weights(0.05, 0.1, 0.0)
    assert early.distribution > late.distribution
    assert early.density > early.distance and late.distance > late.density


# ------------------------------------------------------------------ 4DS batches

def brute_force_four_ds(X, labeled, pool, f, lmbda, batch, diversity="literal",
                        performance="margin_band"):
    """The greedy 4DS batch written out with loops and scipy densities (binary SVM f)."""
    comp = component_pdfs(X)
    p = comp @ WEIGHTS
    resp = comp * WEIGHTS / p[:, None]

    def mm(values):
        lo, hi = min(values.values()), max(values.values())
        return {k: (v - lo) / (hi - lo) if hi > lo else 0.0 for k, v in values.items()}

    dist = mm({i: abs(f[i]) for i in pool})
    dens = mm({i: p[i] for i in pool})
    deviation = sum(max(0.0, WEIGHTS[j] - np.mean([resp[i, j] for i in labeled]))
                    for j in range(3))
    if performance == "margin_band":
        share = np.mean([abs(f[i]) < 1 for i in pool])
    else:          # binary scores (-f/2, f/2): max posterior 1 / (1 + exp(-|f|))
        share = np.mean([1 - 1 / (1 + math.exp(-abs(f[i]))) for i in pool])
    chosen = []
    for step in range(batch):
        lam = 0.0 if step == 0 else lmbda
        w_distr = min(deviation, 1 - lam)
        rest = 1 - lam - w_distr
        cand = [i for i in pool if i not in chosen]
        members = list(labeled) + chosen
        distr = mm({c: 1 - sum(max(0.0, WEIGHTS[j] - sum(resp[m, j] for m in members + [c])
                                   / (len(members) + 1)) for j in range(3)) for c in cand})
        if diversity == "literal":
            div = mm({c: -sum(math.log(p[t]) for t in chosen + [c]) / (len(chosen) + 1)
                      for c in cand})
        else:
            div = {}
            for c in cand:
                T = chosen + [c]
                wt = [sum(resp[t, j] for t in T) / len(T) for j in range(3)]
                div[c] = -sum(math.log(sum(wt[j] * comp[t, j] for j in range(3)))
                              for t in T) / len(T)
            div = mm(div)
        util = {c: rest * (1 - share) * (1 - dist[c]) + rest * share * dens[c]
                + w_distr * distr[c] + (lam * div[c] if step else 0.0) for c in cand}
        chosen.append(max(util, key=util.get))
    return chosen


@pytest.mark.parametrize("performance", ["margin_band", "expected_error"])
@pytest.mark.parametrize("diversity", ["literal", "set_mixture"])
@pytest.mark.parametrize("lmbda", [0.0, 0.2, 0.7])
def test_four_ds_batch_equals_brute_force(lmbda, diversity, performance):
    rng = np.random.default_rng(4)
    n = 40
    pts = np.concatenate([rng.multivariate_normal(m, c, size=n // 4 + 4)
                          for m, c in zip(MEANS, COVS, strict=True)])[:n]
    f = rng.normal(0, 1.5, size=n)
    y = np.full(n, np.nan)
    labeled = [0, 1, 2, 3, 30]                      # mostly from the first component
    y[labeled] = 0
    learner = FakeSVMLearner(pts, *two_class_values(f))
    strategy = FourDS(lmbda=lmbda, diversity=diversity, performance=performance)
    picked = strategy.query(pts, y, learner, 5, np.random.default_rng(0))
    pool = [i for i in range(n) if i not in labeled]
    expected = brute_force_four_ds(pts, labeled, pool, f, lmbda, 5, diversity, performance)
    assert picked.tolist() == expected


def test_distribution_spreads_the_batch_over_components():
    """With only the distribution criterion in play (|f| = 3 everywhere: the distance is
    constant and no row is in the margin band, so the density weight is 0; lambda 0), the
    batch goes to the components the labels leave uncovered."""
    rng = np.random.default_rng(5)
    pts = np.concatenate([rng.multivariate_normal(m, c * 0.05, size=10)
                          for m, c in zip(MEANS, COVS, strict=True)])
    y = np.full(30, np.nan)
    y[[0, 1, 2, 3]] = 0                             # four labels, all in component 0
    learner = FakeSVMLearner(pts, *two_class_values(np.full(30, 3.0)))
    strategy = FourDS(lmbda=0.0, density="log")
    strategy_picked = strategy.query(pts, y, learner, 3, np.random.default_rng(0))
    comps = np.argmax(component_pdfs(pts[strategy_picked]) * WEIGHTS, axis=1)
    assert set(comps.tolist()) == {1, 2}


@pytest.mark.parametrize("name", ["four_ds", "uncertainty_svm"])
@pytest.mark.parametrize("kernel", ["rbf", "rwm"])
def test_batches_on_kernel_svm_are_distinct_pool_rows_and_seeded(name, kernel):
    X, _, y_obs = blobs(6)
    learner = MODELS["kernel_svm"](n_classes=4, random_state=0, kernel=kernel,
                                   C_grid=[1.0], gamma_grid=[0.5], n_components=4)
    learner.fit(X, y_obs)
    strategy = STRATEGIES[name]()
    a = strategy.query(X, y_obs.copy(), learner, 5, np.random.default_rng(7))
    b = strategy.query(X, y_obs.copy(), learner, 5, np.random.default_rng(7))
    assert a.tolist() == b.tolist()
    assert len(set(a.tolist())) == 5 and np.all(np.isnan(y_obs[a]))


def test_rbf_learner_fits_its_density_model_once_per_task():
    X, _, y_obs = blobs(8)
    learner = MODELS["kernel_svm"](n_classes=4, random_state=0, kernel="rbf",
                                   C_grid=[1.0], gamma_grid=[0.5], n_components=4)
    learner.fit(X, y_obs)
    assert learner.estimator_.density_ is None       # the RBF kernel does not need one
    first = learner.density_model()
    y_next = y_obs.copy()
    y_next[np.flatnonzero(np.isnan(y_obs))[:3]] = 1
    learner.fit(X, y_next)
    assert learner.density_model() is first          # reused by the next fit of the rows
    rwm = MODELS["kernel_svm"](n_classes=4, random_state=0, kernel="rwm",
                               C_grid=[1.0], gamma_grid=[0.5], n_components=4).fit(X, y_obs)
    assert rwm.density_model() is rwm.estimator_.density_
    np.testing.assert_allclose(first.weights, rwm.density_model().weights)


def test_rbf_pairwise_oracle_uses_the_rbf_gram():
    X, _, y_obs = blobs(9, k=2)
    est = KernelSVC(kernel="rbf", C=1.0, gamma=0.3, classes=np.arange(2)).fit(X, y_obs)
    lab = np.flatnonzero(~np.isnan(y_obs))
    svc = SVC(kernel="precomputed", C=1.0).fit(rbf_gram(X[lab], X[lab], gamma=0.3),
                                               y_obs[lab])
    f = svc.decision_function(rbf_gram(X, X[lab], gamma=0.3))
    np.testing.assert_allclose(svm_margin(*est.decision_values(X)), np.abs(f), atol=1e-8)


# ------------------------------------------------------------------ parameters and pairing

def test_bad_parameters_are_refused():
    for params in ({"lmbda": 1.5}, {"lmbda": -0.1}, {"multiclass": "ovr"},
                   {"density": "p"}, {"diversity": "parzen"}, {"performance": "accuracy"}):
        with pytest.raises(ValueError, match="four_ds: invalid"):
            FourDS(**params)
    with pytest.raises(ValueError, match="uncertainty_svm: invalid multiclass"):
        STRATEGIES["uncertainty_svm"](multiclass="votes")


@pytest.mark.parametrize("name", ["four_ds", "uncertainty_svm"])
def test_a_model_without_decision_values_is_refused_at_parse_time(name):
    raw = {"name": "x", "dataset": "iris", "model": "random_forest", "strategy": name,
           "protocol": {"folds": 2, "initial": {"method": "random", "size": 6}, "budget": 4}}
    with pytest.raises(UserError, match=f"strategy '{name}' needs a model with"):
        parse_config(raw)
    raw["model"] = {"name": "kernel_svm", "params": {"kernel": "rbf"}}
    parse_config(raw)


def test_mixture_quantities_equal_the_density_module():
    from alprbf.strategies.svm import _density_and_responsibilities
    from alprbf.svm_kernels.density import log_component_densities, log_density, responsibilities
    X = np.random.default_rng(10).normal(1.0, 2.0, size=(15, 2))
    log_p, resp = _density_and_responsibilities(log_component_densities(mixture(), X), WEIGHTS)
    np.testing.assert_allclose(log_p, log_density(mixture(), X), rtol=1e-12)
    np.testing.assert_allclose(resp, responsibilities(mixture(), X), atol=1e-12)
    np.testing.assert_allclose(np.exp(log_p), component_pdfs(X) @ WEIGHTS, rtol=1e-10)


@pytest.mark.parametrize("name", ["four_ds", "uncertainty_svm"])
def test_edge_cases_give_distinct_pool_rows(name):
    """One labeled class (no SVM yet: every |f| is 0), and a categorical-only data set (the
    density model is a single component of multinomials)."""
    X, _, y_obs = blobs(11, k=3)
    one = np.full(len(y_obs), np.nan)
    one[:4] = 0
    learner = MODELS["kernel_svm"](n_classes=3, random_state=0, kernel="rwm", C_grid=[1.0],
                                   gamma_grid=[0.5], n_components=3).fit(X, one)
    picked = STRATEGIES[name]().query(X, one, learner, 5, np.random.default_rng(0))
    assert len(set(picked.tolist())) == 5 and np.all(np.isnan(one[picked]))

    rng = np.random.default_rng(12)
    Xc = rng.integers(0, 3, size=(60, 4)).astype(float)
    yc = np.full(60, np.nan)
    yc[:9] = np.arange(9) % 3
    cat = MODELS["kernel_svm"](n_classes=3, random_state=0, kernel="rwm", C_grid=[1.0],
                               gamma_grid=[0.5], categorical=[True] * 4).fit(Xc, yc)
    picked = STRATEGIES[name]().query(Xc, yc, cat, 5, np.random.default_rng(0))
    assert len(set(picked.tolist())) == 5 and np.all(np.isnan(yc[picked]))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(6, 40), st.integers(1, 5), st.integers(1, 8),
       st.floats(0, 1), st.sampled_from(["literal", "set_mixture"]),
       st.sampled_from(["likelihood", "log"]))
def test_four_ds_batches_are_distinct_seeded_pool_rows(seed, n, n_lab, batch, lmbda, div, dens):
    rng = np.random.default_rng(seed)
    pts = rng.normal(1.5, 2.5, size=(n, 2))
    y = np.full(n, np.nan)
    y[rng.choice(n, n_lab, replace=False)] = 0
    learner = FakeSVMLearner(pts, *two_class_values(rng.normal(0, 1, size=n)))
    strategy = FourDS(lmbda=lmbda, diversity=div, density=dens)
    a = strategy.query(pts, y, learner, batch, np.random.default_rng(seed))
    b = strategy.query(pts, y, learner, batch, np.random.default_rng(seed))
    assert a.tolist() == b.tolist()
    assert len(a) == min(batch, n - n_lab) == len(set(a.tolist()))
    assert np.all(np.isnan(y[a]))


@pytest.mark.parametrize("kernel", ["rwm", "rbf", "lap"])
def test_density_model_is_the_refined_model_with_refine(kernel):
    """refine=True: the strategies select with M_i, the pool's model revised with the labels
    of the last fit (Reitmaier et al. 2016, Alg. 1 lines 8 and 14), for every kernel."""
    from alprbf.svm_kernels.density import DensityOptions, covariance_of
    from alprbf.svm_kernels.refinement import refine_density

    X, _, y_obs = blobs(8)
    kw = dict(n_classes=4, random_state=0, kernel=kernel, C_grid=[1.0], gamma_grid=[0.5],
              gamma_I_grid=[1.0], gamma_A_grid=[1.0], n_components=4)
    plain = MODELS["kernel_svm"](**kw).fit(X, y_obs)
    refined = MODELS["kernel_svm"](**kw, refine=True).fit(X, y_obs)
    est = refined.estimator_
    codes = np.where(np.isnan(y_obs), -1, y_obs).astype(int)
    model = refined.density_model()
    expected = refine_density(est.density_, X, codes, 4, n_neighbors=5,
                              options=DensityOptions(n_components=4),
                              covariance_prior=covariance_of(X), random_state=0).density
    np.testing.assert_array_equal(model.weights, expected.weights)
    np.testing.assert_array_equal(model.means, expected.means)
    np.testing.assert_array_equal(plain.density_model().weights, est.density_.weights)
    if kernel == "rwm":
        assert model is est.kernel_density_
    else:
        assert est.kernel_density_ is None and est.resp_ is None   # the kernel needs neither
    assert refined.density_model() is model                        # once per fit


def test_expected_error_on_hand_worked_scores():
    """``1 - max softmax``: scores (-0.5, 0.5) give 1 - 1 / (1 + e^-1) = 0.268941...; a row
    with one labeled class gives 0; three classes with equal scores give 2/3."""
    assert expected_error(np.array([[-0.5, 0.5]])) == pytest.approx(0.2689414213699951)
    assert expected_error(np.array([[0.0, -np.inf]])) == 0.0
    assert expected_error(np.array([[-0.5, 0.5], [0.0, -np.inf]])) == \
        pytest.approx(0.2689414213699951 / 2)
    assert expected_error(np.zeros((1, 3))) == pytest.approx(2 / 3)
    assert expected_error(np.empty((0, 2))) == 0.0


def test_expected_error_does_not_stay_at_density_when_the_margin_band_does():
    """The case of decision 0310: a soft-margin SVM with small |f| everywhere (every pool row
    inside the margin band) gives the distance no weight under ``margin_band``; under
    ``expected_error`` the distance keeps at least half of what the distribution leaves
    (two classes: e <= 1/2)."""
    f = np.full(50, 0.3)
    scores, _ = two_class_values(f)
    band = four_ds_weights(0.1, float(np.mean(np.abs(f) < 1)), 0.0)
    expected = four_ds_weights(0.1, expected_error(scores), 0.0)
    assert band.distance == 0.0 and band.density == pytest.approx(0.9)
    assert expected.distance >= 0.45
    assert expected.distance + expected.density == pytest.approx(0.9)
