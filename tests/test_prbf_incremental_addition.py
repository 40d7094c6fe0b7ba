"""Node addition of the incremental PRBF (001 eqs 16-26, 000 eqs 34-37): pure-function oracles."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from alprbf.prbf._gaussian import compute_precision_cholesky
from alprbf.prbf._incremental import (
    Candidates,
    class_loglik_change,
    component_partition,
    initial_candidates,
    insert_component,
    one_component_params,
    partial_em,
    propose_component,
    select_candidate,
)
from alprbf.prbf._params import PRBFParams
from tests.prbf_data import overlap_blobs


def _blobs(seed=0, n=60):
    """Three classes; classes 0 and 1 overlap around the origin, class 2 is far away."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal([0, 0], 1.0, (n, 2)), rng.normal([1.5, 0.5], 1.0, (n, 2)),
                   rng.normal([8, 8], 0.7, (n, 2))])
    y = np.repeat([0, 1, 2], n)
    return X, y


def _two_component(X, y, cov_type="full"):
    p = one_component_params(X, y, 3, cov_type)
    means = np.array([[0.7, 0.2], [8.0, 8.0]])
    covs = {"full": np.array([np.eye(2) * 1.5, np.eye(2) * 0.5]),
            "diag": np.array([[1.5, 1.5], [0.5, 0.5]]), "spherical": np.array([1.5, 0.5])}[cov_type]
    w = np.array([[0.5, 0.5, 0.01], [0.5, 0.5, 0.99]])
    return PRBFParams(means, covs, compute_precision_cholesky(covs, cov_type), w,
                      p.class_priors, cov_type)


def _own(log_f, y, weights):
    """log p(x | y) by the plain formula (no log-sum-exp)."""
    return np.log((np.exp(log_f) * weights.T[y]).sum(1))


def _logpdf(X, mean, cov, cov_type):
    C = {"full": cov, "diag": np.diag(cov), "spherical": cov * np.eye(X.shape[1])}[cov_type]
    return multivariate_normal(mean, C).logpdf(X)


@pytest.mark.parametrize("cov_type", ["full", "diag", "spherical"])
def test_one_component_model_eqs_18_20(cov_type):
    X, y = _blobs()
    p = one_component_params(X, y, 3, cov_type, reg_covar=1e-4)
    S = np.cov(X.T, bias=True) + 1e-4 * np.eye(2)
    expected = {"full": S, "diag": np.diag(S), "spherical": np.diag(S).mean()}[cov_type]
    assert np.allclose(p.means[0], X.mean(0))
    assert np.allclose(p.covariances[0], expected)
    assert np.array_equal(p.weights, np.ones((1, 3)))
    assert np.allclose(p.class_priors, [1 / 3] * 3)


def test_partition_matches_brute_force_eq_21():
    X, y = _blobs()
    p = _two_component(X, y)
    log_f = np.column_stack([_logpdf(X, p.means[j], p.covariances[j], "full") for j in range(2)])
    prior = np.array([0.2, 0.3, 0.5])
    f = np.exp(log_f)
    P = np.zeros((len(X), 2))
    for k in range(3):
        pjk = p.weights[:, k] * f
        P += prior[k] * pjk / pjk.sum(1, keepdims=True)
    assert np.array_equal(component_partition(log_f, p.weights, prior), P.argmax(1))


def test_fourteen_candidates_per_component():
    X, y = _blobs()
    p = _two_component(X, y)
    log_f = np.column_stack([_logpdf(X, p.means[j], p.covariances[j], "full") for j in range(2)])
    assign = component_partition(log_f, p.weights, np.full(3, 1 / 3))
    assert set(assign) == {0, 1}
    cand = initial_candidates(X, assign, p, kd_depth=3)
    assert cand.means.shape[0] == 28
    assert np.array_equal(np.bincount(cand.source), [14, 14])
    # alpha_k = pi_jk / 2 for candidates of partition j
    assert np.allclose(cand.alphas, p.weights[cand.source] / 2)
    _, info = propose_component(X, y, p, add_threshold=-np.inf, partial_max_iter=0)
    assert info.n_candidates == 28


@pytest.mark.parametrize("cov_type", ["full", "diag"])
def test_partial_em_step_matches_naive_formulas(cov_type):
    X, y = _blobs(1)
    p = _two_component(X, y, cov_type)
    log_f = np.column_stack([_logpdf(X, p.means[j], p.covariances[j], cov_type)
                             for j in range(2)])
    log_p_old = _own(log_f, y, p.weights)
    mu0 = np.array([0.5, 0.0])
    cov0 = np.eye(2) if cov_type == "full" else np.ones(2)
    a0 = np.array([0.2, 0.3, 0.1])
    cand = Candidates(mu0[None], cov0[None], a0[None], np.zeros(1, dtype=int))
    res = partial_em(X, y, log_p_old, cand, cov_type, reg_covar=0.0, max_iter=1)
    # naive eq 22-25 (covariance about the new mean)
    fn = np.exp(_logpdf(X, mu0, cov0, cov_type))
    po = np.exp(log_p_old)
    r = a0[y] * fn / ((1 - a0[y]) * po + a0[y] * fn)
    mu = (r[:, None] * X).sum(0) / r.sum()
    D = X - mu
    S = (r[:, None, None] * D[:, :, None] * D[:, None, :]).sum(0) / r.sum()
    alpha = np.array([r[y == k].mean() for k in range(3)])
    c = res.candidates
    assert np.allclose(c.means[0], mu)
    assert np.allclose(c.covariances[0], S if cov_type == "full" else np.diag(S))
    assert np.allclose(c.alphas[0], alpha)


def test_partial_em_is_monotone_and_only_new_component_moves():
    X, y = _blobs(2)
    p = _two_component(X, y)
    new, info = propose_component(X, y, p, add_threshold=-np.inf, partial_max_iter=0)
    log_f = np.column_stack([_logpdf(X, p.means[j], p.covariances[j], "full") for j in range(2)])
    log_p_old = _own(log_f, y, p.weights)
    assign = component_partition(log_f, p.weights, np.full(3, 1 / 3))
    cand = initial_candidates(X, assign, p)
    res = partial_em(X, y, log_p_old, cand, "full", max_iter=15, tol=0.0)
    H = np.array(res.history)
    assert np.all(np.diff(H, axis=0) >= -1e-8 * np.abs(H[:-1]).max())
    assert np.all(H[-1] > H[0] - 1e-9)

    new, info = propose_component(X, y, p, add_threshold=-np.inf)
    assert new is not None and new.n_components == 3
    # the old components are untouched; their weights are scaled by (1 - alpha) (eq 16)
    assert np.array_equal(new.means[:2], p.means)
    assert np.array_equal(new.covariances[:2], p.covariances)
    alpha = new.weights[2]
    assert np.allclose(new.weights[:2], p.weights * (1 - alpha))
    assert np.allclose(new.weights.sum(0), 1)
    assert np.array_equal(new.class_priors, p.class_priors)


def test_class_loglik_change_matches_direct_difference():
    X, y = _blobs(3)
    p = _two_component(X, y)
    log_f = np.column_stack([_logpdf(X, p.means[j], p.covariances[j], "full") for j in range(2)])
    log_p_old = _own(log_f, y, p.weights)
    mean, cov, alpha = np.array([0.8, 0.3]), np.eye(2) * 0.7, np.array([0.2, 0.25, 0.005])
    lf_new = _logpdf(X, mean, cov, "full")
    delta = class_loglik_change(y, log_p_old, lf_new[:, None], alpha[None])
    grown = insert_component(p, mean, cov, compute_precision_cholesky(cov[None], "full")[0],
                             alpha)
    log_f3 = np.column_stack([log_f, lf_new])
    new_lp = np.log((np.exp(log_f3) * grown.weights.T[y]).sum(1))
    for k in range(3):
        direct = (new_lp[y == k] - log_p_old[y == k]).mean()  # (L_k(new) - L_k(old)) / N_k
        assert np.isclose(delta[0, k], direct)


def test_class_loglik_change_keeps_the_sign_of_tiny_changes():
    """A candidate with a ~1e-160 weight in a class changes that class by ~1e-160 * (r - 1);
    the sign must be the true one (checked against 400-digit decimal arithmetic), so that a
    rounding-sized change is never counted as an increase by the ">= 2 classes" rule."""
    from decimal import Decimal, getcontext

    getcontext().prec = 400
    y = np.array([0, 0, 1, 1])
    log_p_old = np.array([-1.0, -2.0, -1.5, -0.5])
    log_f = np.array([[-3.0, 5.0], [-4.0, 6.0], [-2.0, -1.0], [-9.0, 0.5]])
    alphas = np.array([[0.3, 1e-160], [1e-160, 1e-300]])
    got = class_loglik_change(y, log_p_old, log_f, alphas)
    for c in range(2):
        for k in range(2):
            a = Decimal(alphas[c, k])
            rows = np.flatnonzero(y == k)
            exact = sum(((1 - a) + a * (Decimal(log_f[i, c]) - Decimal(log_p_old[i])).exp()).ln()
                        for i in rows) / len(rows)
            assert np.sign(got[c, k]) == np.sign(float(exact))
            assert np.isclose(got[c, k], float(exact), rtol=1e-9, atol=0)
    # candidate 0 lowers class 1's likelihood by ~1e-160: only one class gains
    assert got[0, 1] < 0 and select_candidate(got[:1], 0.01)[0] is None


def test_selection_rule():
    delta = np.array([[0.5, -0.1, -0.2],    # one class only: discarded despite the largest gain
                      [0.02, 0.03, -1.0],   # two classes: total 0.05
                      [0.004, 0.004, 0.0],  # kept, total 0.008 < threshold
                      [0.01, 0.02, 0.03]])  # three classes: total 0.06 -> best
    best, kept, total = select_candidate(delta, add_threshold=0.01)
    assert best == 3
    assert kept.tolist() == [False, True, True, True]
    assert np.allclose(total[1:], [0.05, 0.008, 0.06])
    best, _, _ = select_candidate(delta[:3], add_threshold=0.01)
    assert best == 1
    best, _, _ = select_candidate(delta[[0, 2]], add_threshold=0.01)
    assert best is None


def test_unlabeled_rows_are_ignored_by_the_proposal():
    X, y = _blobs(4)
    p = _two_component(X, y)
    yn = y.astype(float)
    rng = np.random.default_rng(0)
    extra = rng.normal(size=(40, 2)) * 5
    Xa = np.vstack([X, extra])
    ya = np.concatenate([yn, np.full(40, np.nan)])
    a, ia = propose_component(X, y, p)
    b, ib = propose_component(Xa, ya, p)
    assert ia.n_candidates == ib.n_candidates and ia.added == ib.added
    if a is not None:
        assert np.allclose(a.means, b.means) and np.allclose(a.weights, b.weights)


def test_try_add_component_supervised_em_does_not_lose_likelihood():
    from alprbf.prbf._data import prepare_data
    from alprbf.prbf._estep import e_step
    from alprbf.prbf._incremental import try_add_component

    X, y = overlap_blobs()
    data = prepare_data(X, y, 3, "full")
    p = one_component_params(X, y, 3, "full")
    for _ in range(3):
        before = e_step(data, p).loglik_labeled
        new, info = try_add_component(X, y, p)
        if new is None:
            break
        assert info.added and new.n_components == p.n_components + 1
        hist = info.em_info.loglik_history
        assert np.all(np.diff(hist) >= -1e-8 * abs(hist[0]))  # EM is monotone
        # inserted network: L_before + sum_k N_k dL_k (eq 26 summed over rows)
        counts = np.bincount(y, minlength=3)
        inserted = e_step(data, propose_only(X, y, p)).loglik_labeled
        assert np.isclose(inserted, before + counts @ info.best_delta)
        after = e_step(data, new).loglik_labeled
        assert after >= before
        p = new
    assert p.n_components >= 3


def propose_only(X, y, p):
    new, _ = propose_component(X, y, p)
    return new


def test_try_add_component_semi_supervised():
    from alprbf.prbf._incremental import try_add_component

    X, y = _blobs(6)
    yn = y.astype(float)
    yn[np.random.default_rng(1).random(len(y)) < 0.7] = np.nan
    p = one_component_params(X, yn, 3, "diag")
    lab = ~np.isnan(yn)
    assert np.allclose(p.class_priors, np.bincount(y[lab], minlength=3) / lab.sum())
    raw, info0 = try_add_component(X, yn, p, em=False)
    new, info = try_add_component(X, yn, p)
    assert info.n_candidates == 14 and info0.em_info is None
    assert raw is not None and new is not None
    assert np.array_equal(raw.class_priors, p.class_priors)  # eq 16 keeps the priors
    # semi-supervised EM ran on all rows: priors re-estimated, joint likelihood monotone
    assert not np.allclose(new.class_priors, p.class_priors)
    h = info.em_info.loglik_history
    assert np.all(np.diff(h) >= -1e-8 * abs(h[0]))
    assert np.all(np.isfinite(new.means)) and np.allclose(new.weights.sum(0), 1)


def test_degenerate_candidates_generalised_eigenvalue():
    from scipy.linalg import eigh

    from alprbf.prbf._incremental import degenerate_candidates

    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3)) @ np.array([[1.0, 0.9, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 2.0]])
    S = np.cov(X.T, bias=True)
    good = S * 0.5
    v = eigh(S)[1][:, 0]  # the data's thinnest direction: a small absolute variance is normal
    thin_but_ok = 0.4 * S
    flat = S - 0.999 * np.outer(S @ v, S @ v) / (v @ S @ v)  # variance 0.1 % of S along v
    covs = np.array([good, thin_but_ok, flat])
    lam = [eigh(c, S, eigvals_only=True)[0] for c in covs]
    assert np.allclose(lam[:2], [0.5, 0.4]) and lam[2] < 1e-2
    assert degenerate_candidates(covs, "full", X, 1e-2).tolist() == [False, False, True]
    var = X.var(0)
    dg = np.array([var * 0.5, var * [1, 1e-4, 1]])
    assert degenerate_candidates(dg, "diag", X, 1e-3).tolist() == [False, True]
    assert degenerate_candidates(np.array([1e-5, 1.0]), "spherical", X, 1e-3).tolist() == \
        [True, False]


@pytest.mark.parametrize("scale", [1.0, 50.0, 800.0])
def test_partition_matches_exact_log_space_formula_under_underflow(scale):
    # the fast path (two matrix products) must agree with the exact (n, M, K) log-sum-exp of
    # eq 21 also where exp(log f) underflows (scale 800) and where weights are exactly zero
    rng = np.random.default_rng(int(scale))
    for _ in range(20):
        n, M, K = 300, int(rng.integers(2, 25)), int(rng.integers(2, 8))
        log_f = rng.normal(-20.0, scale, (n, M))
        W = rng.dirichlet(np.full(M, 0.3), K).T
        W[W < 0.02] = 0.0
        W /= W.sum(0, keepdims=True)
        prior = rng.dirichlet(np.ones(K))
        joint = log_f[:, :, None] + np.log(np.where(W > 0, W, 1.0))[None] + \
            np.where(W > 0, 0.0, -np.inf)[None]
        post = joint - logsumexp(joint, axis=1, keepdims=True)
        score = logsumexp(post + np.log(prior)[None, None, :], axis=2)
        top2 = np.sort(score, axis=1)[:, -2:]
        clear = (top2[:, 1] - top2[:, 0]) > 1e-9          # ignore numerical ties
        got = component_partition(log_f, W, prior)
        assert np.array_equal(got[clear], score.argmax(1)[clear])

