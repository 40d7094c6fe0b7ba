"""The density model of Reitmaier et al. 2016 (eqs 1-7, §5.1.1) against independent oracles.

Oracles: sklearn's ``GaussianMixture`` with the fitted parameters copied in (eqs 1-2 of the
plug-in mixture), ``BayesianGaussianMixture`` itself (the VI fit), ``scipy.stats``
(``multivariate_normal``, ``gaussian_kde``), ``scipy.spatial.distance.cdist`` (eq 5) and
brute-force products of multinomials on hand-worked cases.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import gaussian_kde, multivariate_normal
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import BayesianGaussianMixture, GaussianMixture

import alprbf.svm_kernels.density as density_module
from alprbf.svm_kernels.density import (
    DensityOptions,
    MixtureDensity,
    ParzenWindow,
    fit_density,
    fit_mixture,
    held_out_representativity,
    log_component_densities,
    log_density,
    log_responsibilities,
    merge_mixtures,
    pairwise_squared_mahalanobis,
    precision_cholesky,
    representativity,
    responsibilities,
    sample,
    silverman_bandwidth,
    squared_mahalanobis,
    subset_components,
    symmetric_kl,
)

from .session_cache import once_per_session

SMALL = DensityOptions(n_components=6, weight_concentration_priors=(0.01, 1.0),
                       covariance_prior_scales=(0.5, 1.0), n_mc=300)


def blobs(seed=0, n=60, dim=3):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0] * dim, [4.0] + [0.0] * (dim - 1), [0.0, 4.0] + [0.0] * (dim - 2)])
    return np.concatenate([rng.normal(c, [0.6 + 0.2 * k for k in range(dim)], (n, dim))
                           for c in centers])


def as_gaussian_mixture(m: MixtureDensity) -> GaussianMixture:
    gm = GaussianMixture(m.n_components, covariance_type="full")
    gm.weights_, gm.means_, gm.covariances_ = m.weights, m.means, m.covariances
    gm.precisions_cholesky_ = m.precisions_cholesky
    return gm


def hand_density() -> MixtureDensity:
    """J = 2, one continuous column (column 1), two categorical ones (columns 0 and 2)."""
    covs = np.array([[[1.0]], [[4.0]]])
    delta_a = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    delta_b = np.array([[0.5, 0.5], [0.9, 0.1]])
    return MixtureDensity(
        weights=np.array([0.3, 0.7]), means=np.array([[0.0], [2.0]]), covariances=covs,
        precisions_cholesky=precision_cholesky(covs),
        categorical=np.array([True, False, True]),
        category_log_probs=(np.log(delta_a), np.log(delta_b)),
        unseen_log_probs=np.log(np.array([[0.01, 0.02], [0.03, 0.04]])))


# ----------------------------------------------------------------- eqs 1, 2, 4, 5, 7

def test_density_and_responsibilities_equal_sklearn_and_scipy():
    X = blobs()
    m = fit_density(X, options=SMALL, random_state=0)
    gm = as_gaussian_mixture(m)
    np.testing.assert_allclose(log_density(m, X), gm.score_samples(X), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(responsibilities(m, X), gm.predict_proba(X), atol=1e-12)
    np.testing.assert_allclose(np.exp(log_responsibilities(m, X)).sum(axis=1), 1.0)
    brute = np.column_stack([multivariate_normal(mu, cov).logpdf(X)
                             for mu, cov in zip(m.means, m.covariances, strict=True)])
    np.testing.assert_allclose(log_component_densities(m, X), brute, rtol=1e-10)
    maha = np.column_stack([cdist(X, mu[None], "mahalanobis", VI=np.linalg.inv(cov))[:, 0] ** 2
                            for mu, cov in zip(m.means, m.covariances, strict=True)])
    np.testing.assert_allclose(squared_mahalanobis(m, X), maha, rtol=1e-9)
    pair = pairwise_squared_mahalanobis(m, X[:7], X[7:12])
    for j, cov in enumerate(m.covariances):
        np.testing.assert_allclose(
            pair[j], cdist(X[:7], X[7:12], "mahalanobis", VI=np.linalg.inv(cov)) ** 2, rtol=1e-9)
    assert pairwise_squared_mahalanobis(m, X[:4]).shape == (m.n_components, 4, 4)


def test_vi_fit_is_sklearns_bayesian_gaussian_mixture():
    X = blobs(1)
    opts = DensityOptions(n_components=5, min_component_rows=0.0)
    m = fit_mixture(X, weight_concentration_prior=0.5, covariance_prior_scale=0.3, options=opts,
                    random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        vi = BayesianGaussianMixture(
            n_components=5, weight_concentration_prior_type="dirichlet_distribution",
            weight_concentration_prior=0.5,
            covariance_prior=0.3 * np.cov(X, rowvar=False) + 1e-6 * np.eye(3),
            random_state=3).fit(X)
    np.testing.assert_allclose(m.weights, vi.weights_ / vi.weights_.sum(), rtol=1e-12)
    np.testing.assert_allclose(m.means, vi.means_)
    np.testing.assert_allclose(m.covariances, vi.covariances_)
    np.testing.assert_allclose(m.precisions_cholesky, vi.precisions_cholesky_)
    # the plug-in responsibilities differ from the VI E-step's only by the expectation terms
    assert np.mean(np.argmax(responsibilities(m, X), 1) == vi.predict(X)) > 0.97


@pytest.mark.parametrize("seed, wcp", [(1, 0.5), (4, 0.01), (5, 10.0)])
def test_variational_rule_equals_bayesian_gaussian_mixture_predict_proba(seed, wcp):
    """responsibility_rule="variational": eq 2 and the log-density are sklearn's own
    ``predict_proba`` / ``score_samples`` of the same VI fit (no pruning, no categorical)."""
    X = blobs(seed, n=50, dim=4)
    opts = DensityOptions(n_components=5, min_component_rows=0.0,
                          responsibility_rule="variational")
    m = fit_mixture(X, weight_concentration_prior=wcp, covariance_prior_scale=0.3,
                    options=opts, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        vi = BayesianGaussianMixture(
            n_components=5, weight_concentration_prior_type="dirichlet_distribution",
            weight_concentration_prior=wcp,
            covariance_prior=0.3 * np.cov(X, rowvar=False) + 1e-6 * np.eye(4),
            random_state=3).fit(X)
    Z = np.concatenate([X, blobs(seed + 10, n=5, dim=4) * 1.5])
    np.testing.assert_allclose(responsibilities(m, Z), vi.predict_proba(Z), atol=1e-12)
    np.testing.assert_allclose(log_density(m, Z) + m.score_offset, vi.score_samples(Z),
                               rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(m.weights.sum(), 1.0)
    # the same components and point estimates as the plug-in rule; only the weights differ
    plug = fit_mixture(X, weight_concentration_prior=wcp, covariance_prior_scale=0.3,
                       options=DensityOptions(n_components=5, min_component_rows=0.0),
                       random_state=3)
    np.testing.assert_array_equal(m.precisions_cholesky, plug.precisions_cholesky)
    assert plug.score_offset == 0.0


def test_variational_rule_with_pruning_renormalises_the_kept_components():
    X = blobs(2, n=40)
    kw = dict(weight_concentration_prior=1e-3, covariance_prior_scale=1.0, random_state=0)
    plug = fit_mixture(X, options=DensityOptions(n_components=12), **kw)
    var = fit_mixture(X, options=DensityOptions(n_components=12,
                                                responsibility_rule="variational"), **kw)
    np.testing.assert_array_equal(var.means, plug.means)     # the same components kept
    np.testing.assert_allclose(var.weights.sum(), 1.0)
    p = responsibilities(var, X)
    assert np.isfinite(p).all() and np.allclose(p.sum(axis=1), 1.0)


def test_unknown_responsibility_rule_is_refused():
    with pytest.raises(ValueError, match="responsibility_rule"):
        DensityOptions(responsibility_rule="map")


def test_pruning_drops_components_with_less_than_one_row():
    X = blobs(2, n=40)
    m = fit_mixture(X, weight_concentration_prior=1e-3, covariance_prior_scale=1.0,
                    options=DensityOptions(n_components=12), random_state=0)
    assert 1 <= m.n_components < 12
    assert np.all(m.weights * len(X) >= 1.0 - 1e-9)
    np.testing.assert_allclose(m.weights.sum(), 1.0)


def test_subset_and_merge_are_mixtures_of_the_parts():
    X = blobs(3)
    m = fit_density(X, options=SMALL.at(0.01, 1.0), random_state=1)
    a, b = subset_components(m, np.array([0])), subset_components(m, np.arange(1, m.n_components))
    merged = merge_mixtures([a, b], [m.weights[0], 1 - m.weights[0]])
    np.testing.assert_allclose(log_density(merged, X), log_density(m, X), rtol=1e-12)
    np.testing.assert_allclose(merged.weights, m.weights)


# ------------------------------------------------------------------------ eqs 6-7

def test_categorical_factors_are_the_brute_force_product_of_multinomials():
    m = hand_density()
    X = np.array([[0, 0.5, 1], [2, -1.0, 0], [1, 3.0, 1], [5, 0.0, 0], [0, 1.0, 7]], float)
    expected = np.empty((len(X), 2))
    for i, (a, x, b) in enumerate(X):
        for j in range(2):
            pa = np.exp(m.category_log_probs[0][j, int(a)]) if a < 3 else np.exp(
                m.unseen_log_probs[j, 0])
            pb = np.exp(m.category_log_probs[1][j, int(b)]) if b < 2 else np.exp(
                m.unseen_log_probs[j, 1])
            gauss = multivariate_normal(m.means[j, 0], m.covariances[j, 0, 0]).pdf(x)
            expected[i, j] = np.log(gauss * pa * pb)
    np.testing.assert_allclose(log_component_densities(m, X), expected, rtol=1e-12)
    joint = np.exp(expected) * m.weights
    np.testing.assert_allclose(responsibilities(m, X), joint / joint.sum(1, keepdims=True))
    np.testing.assert_allclose(log_density(m, X), np.log(joint.sum(1)))


def test_multinomials_are_smoothed_responsibility_counts():
    rng = np.random.default_rng(4)
    Xc = blobs(4, n=30, dim=2)
    codes = rng.integers(0, 3, size=len(Xc)).astype(float)
    X = np.column_stack([Xc[:, 0], codes, Xc[:, 1]])
    mask = np.array([False, True, False])
    m = fit_mixture(X, mask, weight_concentration_prior=0.1, covariance_prior_scale=1.0,
                    options=DensityOptions(n_components=4, category_pseudo_count=0.5),
                    random_state=0)
    gauss = subset_components(m, np.arange(m.n_components))
    gauss = MixtureDensity(gauss.weights, gauss.means, gauss.covariances,
                           gauss.precisions_cholesky, np.zeros(2, bool), (),
                           np.zeros((m.n_components, 0)))
    resp = responsibilities(gauss, Xc)
    for j in range(m.n_components):
        for k in range(3):
            delta = (resp[codes == k, j].sum() + 0.5) / (resp[:, j].sum() + 1.5)
            assert np.isclose(np.exp(m.category_log_probs[0][j, k]), delta)
    assert m.n_categories == (3,)


def test_categorical_only_data_is_one_component_of_independent_multinomials():
    X = np.array([[0, 1], [0, 0], [1, 1], [2, 1], [0, 1]], float)
    m = fit_density(X, np.array([True, True]), options=SMALL, random_state=0)
    assert m.n_components == 1 and m.means.shape == (1, 0)
    np.testing.assert_allclose(np.exp(m.category_log_probs[0][0]), np.array([4, 2, 2]) / 8)
    np.testing.assert_allclose(np.exp(m.category_log_probs[1][0]), np.array([2, 5]) / 7)
    np.testing.assert_allclose(responsibilities(m, X), 1.0)
    assert np.all(np.isfinite(log_density(m, X)))
    assert np.isnan(m.representativity)


def test_categorical_codes_must_be_non_negative_integers():
    mask = np.array([False, True])
    with pytest.raises(ValueError, match="integer codes"):
        fit_density(np.array([[0.0, 1.5], [1.0, 0.0]]), mask, options=SMALL)
    with pytest.raises(ValueError, match="boolean mask"):
        fit_density(np.zeros((3, 2)), [0, 1], options=SMALL)


# ------------------------------------------------------------------- representativity

def test_symmetric_kl_is_zero_for_identical_densities_and_the_closed_form_otherwise():
    rng = np.random.default_rng(0)
    p = multivariate_normal(0.0, 1.0)
    q = multivariate_normal(1.0, 1.0)
    zp, zq = rng.normal(0.0, 1.0, 200_000), rng.normal(1.0, 1.0, 200_000)
    assert symmetric_kl(p.logpdf(zp), p.logpdf(zp), p.logpdf(zq), p.logpdf(zq)) == 0.0
    # KL(N(0,1)||N(1,1)) = KL(N(1,1)||N(0,1)) = 1/2
    assert symmetric_kl(p.logpdf(zp), q.logpdf(zp), p.logpdf(zq), q.logpdf(zq)) == pytest.approx(
        1.0, abs=0.02)


def test_parzen_window_is_scipys_gaussian_kde():
    X = blobs(5, n=20)
    h = silverman_bandwidth(len(X), 3)
    assert h == pytest.approx((4 / (5 * len(X))) ** (1 / 7))
    pw = ParzenWindow(X, reg_covar=0.0)
    kde = gaussian_kde(X.T, bw_method=h)
    Z = blobs(6, n=4)
    np.testing.assert_allclose(pw.log_density(Z), kde.logpdf(Z.T), rtol=1e-10)
    # leave-one-out: the estimate built without the row, with the same kernel covariance
    loo = pw.log_density(X[[3, 17]], exclude=np.array([3, 17]))
    for value, i in zip(loo, [3, 17], strict=True):
        rest = np.delete(X, i, axis=0)
        dens = np.mean(multivariate_normal.pdf(rest, X[i], kde.covariance))
        assert value == pytest.approx(np.log(dens), rel=1e-10)


def test_parzen_categorical_kernel_hand_worked():
    X = np.array([[0.0, 0], [0.0, 1], [0.0, 1], [0.0, 2]])[:, 1:]   # one categorical column
    pw = ParzenWindow(X, np.array([True]))
    lam = 2 / (4 + 3)                       # (K - 1) / (n + K), K = 3
    same, other = 1 - lam, lam / 2
    # at code 1: two rows share it, two do not; marginal = add-one smoothing (2 + 1) / (4 + 3)
    assert np.exp(pw.log_density(np.array([[1.0]])))[0] == pytest.approx(
        (2 * same + 2 * other) / 4)
    assert (2 * same + 2 * other) / 4 == pytest.approx(3 / 7)
    assert np.exp(pw.log_density(np.array([[9.0]])))[0] == pytest.approx(other)


def test_representativity_prefers_the_generating_model():
    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(-3, 1, (300, 1)), rng.normal(3, 1, (300, 1))])
    covs = np.ones((2, 1, 1))
    true = MixtureDensity(np.array([0.5, 0.5]), np.array([[-3.0], [3.0]]), covs,
                          precision_cholesky(covs), np.zeros(1, bool), (), np.zeros((2, 0)))
    one = np.array([[[np.var(X)]]])
    broad = MixtureDensity(np.ones(1), np.zeros((1, 1)), one, precision_cholesky(one),
                           np.zeros(1, bool), (), np.zeros((1, 0)))
    r_true = representativity(true, X, n_mc=600, random_state=0)
    r_broad = representativity(broad, X, n_mc=600, random_state=0)
    assert abs(r_true) < 0.1 < r_broad


def test_grid_search_picks_the_most_representative_point_and_is_deterministic():
    X = blobs(8)
    m = fit_density(X, options=SMALL, random_state=5)
    assert len(m.grid_scores) == 4
    scores = [s for _, _, s in m.grid_scores]
    best = m.grid_scores[int(np.argmin(scores))]
    assert (m.weight_concentration_prior, m.covariance_prior_scale) == best[:2]
    assert m.representativity == min(scores)
    twin = fit_density(X, options=SMALL, random_state=5)
    for name in ("weights", "means", "covariances", "precisions_cholesky"):
        np.testing.assert_array_equal(getattr(twin, name), getattr(m, name))
    assert twin.grid_scores == m.grid_scores


def test_options_are_checked():
    with pytest.raises(ValueError, match="n_components"):
        DensityOptions(n_components=0)
    with pytest.raises(ValueError, match="covariance_prior_scales"):
        DensityOptions(covariance_prior_scales=())
    with pytest.raises(ValueError, match="weight_concentration_priors"):
        DensityOptions(weight_concentration_priors=(1.0, -1.0))
    assert DensityOptions(covariance_prior_scales=[1, 2]).covariance_prior_scales == (1.0, 2.0)


def test_sample_follows_the_mixture():
    m = hand_density()
    Z = sample(m, 40_000, np.random.default_rng(0))
    assert Z.shape == (40_000, 3)
    freq_a = np.bincount(Z[:, 0].astype(int), minlength=3) / len(Z)
    expected_a = m.weights @ np.exp(m.category_log_probs[0])
    np.testing.assert_allclose(freq_a, expected_a, atol=0.01)
    assert Z[:, 1].mean() == pytest.approx(m.weights @ m.means[:, 0], abs=0.05)


# -------------------------------------------------------------------------- edge cases

def test_one_row_uses_the_vi_update_in_closed_form():
    # sklearn's update for n identical rows: Sigma = (prior + n reg I) / (D + n); check it at
    # n = 2 with sklearn itself, then our n = 1 closed form
    x = np.array([[1.0, -2.0, 0.5]])
    C = np.diag([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        vi = BayesianGaussianMixture(n_components=1, covariance_prior=C,
                                     random_state=0).fit(np.repeat(x, 2, axis=0))
    np.testing.assert_allclose(vi.covariances_[0], (C + 2e-6 * np.eye(3)) / 5, atol=1e-15)
    m = fit_mixture(x, weight_concentration_prior=1.0, covariance_prior_scale=1.0,
                    covariance_prior=C - 1e-6 * np.eye(3), random_state=0)
    np.testing.assert_allclose(m.covariances[0], (C + 1e-6 * np.eye(3)) / 4)
    np.testing.assert_allclose(m.means, x)
    assert np.isfinite(log_density(m, x)).all()


@pytest.mark.parametrize("case", ["duplicates", "constant", "d_above_n", "tiny"])
def test_edge_cases_are_finite(case):
    rng = np.random.default_rng(9)
    X = {"duplicates": np.repeat(rng.normal(size=(3, 2)), 10, axis=0),
         "constant": np.column_stack([rng.normal(size=40), np.full(40, 2.0)]),
         "d_above_n": rng.normal(size=(5, 12)),
         "tiny": rng.normal(size=(2, 3))}[case]
    m = fit_density(X, options=SMALL, random_state=0)
    for values in (log_density(m, X), responsibilities(m, X), squared_mahalanobis(m, X)):
        assert np.all(np.isfinite(values))
    assert np.isfinite(m.representativity) or np.isnan(m.representativity)


def test_estimators_pass_the_responsibility_rule_to_their_density_model():
    from alprbf.svm_kernels.cmm import CMMShared
    from alprbf.svm_kernels.svm import KernelSVC

    X = blobs(6, n=30)
    y = np.full(len(X), np.nan)
    y[[0, 1, 2, 30, 31, 32, 60, 61, 62]] = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    svm = KernelSVC(kernel="rwm", C=1.0, gamma=0.5, n_components=4, random_state=0,
                    responsibility_rule="variational").fit(X, y)
    ref = fit_density(X, options=DensityOptions(n_components=4,
                                                responsibility_rule="variational"),
                      random_state=0)
    np.testing.assert_array_equal(svm.density_.weights, ref.weights)
    np.testing.assert_allclose(svm.resp_, responsibilities(ref, X), atol=1e-15)
    cmm = CMMShared(n_components=4, responsibility_rule="variational", random_state=0,
                    n_mc=100).fit(X, y)
    assert cmm.get_params()["responsibility_rule"] == "variational"
    assert cmm.density_.score_offset != 0.0
    np.testing.assert_allclose(cmm.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="responsibility_rule"):
        KernelSVC(responsibility_rule="hard").fit(X, y)


HELD_OUT = dict(initial_components=(1, 2, 3, 4, 6, 8, 12, 20), representativity="held_out",
                max_iter=300, tol=1e-3, search_rows=1000, selection="one_se", prune_by="data")


def _four_clouds(n, seed):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [4.0, 0.5], [1.0, 4.5], [5.0, 5.0]])
    scales = np.array([0.6, 1.0, 0.8, 0.5])
    comp = rng.integers(4, size=n)
    return centres[comp] + scales[comp, None] * rng.standard_normal((n, 2))


@pytest.fixture
def grid_fits_once(session_cache_dir, monkeypatch):
    """Each grid point's VI fit made once per session for both held-out readings.

    ``"held_out"`` and ``"held_out_rows"`` differ only in how a fit is judged (the window's
    draws, or the held-out rows): the same seed gives both the same fitting rows, so both fit
    the same 32 mixtures.  The first test to need a fit makes it, the other reads it back
    (``fit_mixture`` uses the VI settings of the options, not ``representativity``: its
    docstring).  The judging and the selection run in each test.
    """
    def key(X, categorical=None, *, options=None, covariance_prior=None, **kwargs):
        if options is None or not isinstance(kwargs.get("random_state"), int | np.integer):
            return None
        return (np.asarray(X), None if categorical is None else np.asarray(categorical),
                replace(options, representativity="in_sample"),
                None if covariance_prior is None else np.asarray(covariance_prior),
                sorted((k, int(v) if k == "random_state" else v) for k, v in kwargs.items()))

    monkeypatch.setattr(density_module, "fit_mixture",
                        once_per_session(session_cache_dir, "density-grid-fit", fit_mixture, key))


@pytest.mark.parametrize("representativity", [
    pytest.param("held_out", marks=pytest.mark.slow), "held_out_rows"])   # 0306's reading quick
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow),
                                  pytest.param(2, marks=pytest.mark.slow)])
def test_held_out_representativity_finds_four_generating_gaussians(seed, representativity,
                                                                   grid_fits_once):
    X = _four_clouds(900, seed)
    m = fit_density(X, options=DensityOptions(**dict(HELD_OUT, representativity=representativity)),
                    random_state=seed)
    assert 3 <= m.n_components <= 5
    assert m.converged
    assert len(m.grid_scores) == 4 * 8 and all(len(g) == 6 for g in m.grid_scores)


def _three_gaussians(n, seed):
    """Iris-like: three Gaussians in 4-d, one tight and far from two that overlap, z-scored."""
    rng = np.random.default_rng(seed)
    means = np.array([[-1.0, 0.9, -1.3, -1.25], [0.1, -0.65, 0.28, 0.17], [0.9, -0.2, 1.0, 1.1]])
    sds = np.array([[0.4, 0.8, 0.1, 0.15], [0.6, 0.7, 0.25, 0.25], [0.75, 0.7, 0.3, 0.35]])
    L = np.linalg.cholesky(np.full((4, 4), 0.5) + 0.5 * np.eye(4))
    comp = np.arange(n) % 3
    X = means[comp] + sds[comp] * (rng.standard_normal((n, 4)) @ L.T)
    return (X - X.mean(axis=0)) / X.std(axis=0), comp


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_held_out_rows_separates_a_far_cluster(seed):
    # decision 0306: on 120 rows the window's draws smear the far cluster over the gap and
    # "held_out" picks J = 1 (seeds 0-3); the held-out rows as the window's draws do not
    X, comp = _three_gaussians(120, seed)
    m = fit_density(X, options=DensityOptions(**dict(HELD_OUT, representativity="held_out_rows")),
                    random_state=seed)
    assert m.n_components >= 2
    owner = np.argmax(responsibilities(m, X), axis=1)
    far = np.unique(owner[comp == 0])
    assert len(far) == 1 and not np.any(owner[comp != 0] == far[0])


def test_held_out_rows_term_is_the_rows_average():
    X = _four_clouds(400, 5)
    judge = X[:150]
    parzen = ParzenWindow(judge)
    model = fit_mixture(X[150:], weight_concentration_prior=1.0, covariance_prior_scale=1.0,
                        options=DensityOptions(n_components=4), random_state=0)
    draws, _ = held_out_representativity(model, parzen, n_mc=500, random_state=7)
    on_rows, _ = held_out_representativity(model, parzen, n_mc=500, random_state=7, rows=judge)
    # the mixture's draws are the same: only KL(P||M) changes, to the leave-one-out average
    rng = np.random.default_rng(np.random.RandomState(7).randint(2**31 - 1))
    zp = parzen.sample(500, rng)
    loo = np.log(np.array([np.mean(multivariate_normal(judge[i], parzen.bandwidth**2 * (
        np.cov(judge, rowvar=False) + 1e-6 * np.eye(2))).pdf(np.delete(judge, i, axis=0)))
        for i in range(len(judge))]))
    np.testing.assert_allclose(
        on_rows - draws,
        np.mean(loo - log_density(model, judge))
        - np.mean(parzen.log_density(zp) - log_density(model, zp)), rtol=1e-9)


def test_held_out_divergence_is_non_negative_on_average():
    X = _four_clouds(600, 3)
    parzen = ParzenWindow(X[:200])
    model = fit_mixture(X[200:], weight_concentration_prior=1.0, covariance_prior_scale=1.0,
                        options=DensityOptions(n_components=4), random_state=0)
    values = [held_out_representativity(model, parzen, n_mc=300, random_state=s)[0]
              for s in range(10)]
    assert np.mean(values) > 0


def test_parzen_sample_follows_the_window():
    X = _four_clouds(300, 4)
    parzen = ParzenWindow(X)
    Z = parzen.sample(20000, np.random.default_rng(0))
    np.testing.assert_allclose(Z.mean(axis=0), X.mean(axis=0), atol=0.06)
    expected = np.cov(X, rowvar=False) * (1 + parzen.bandwidth**2)   # rows' + window's spread
    np.testing.assert_allclose(np.cov(Z, rowvar=False), expected, rtol=0.06, atol=0.05)


def test_full_rank_floor_prunes_components_a_covariance_cannot_rest_on():
    """Decision 0312: with ``component_floor="full_rank"`` no component counts fewer than D + 1
    rows of data (the least that determine a full covariance in D dimensions); the default
    floor keeps the same VI fit's small components.  Five far rows in 6-d form their own
    component, which only the full-rank floor (7 rows) prunes."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.standard_normal((150, 6)), rng.standard_normal((150, 6)) + 6.0,
                   0.1 * rng.standard_normal((5, 6)) - 8.0])
    common = dict(weight_concentration_prior=1.0, covariance_prior_scale=1.0)
    plain = fit_mixture(X, options=DensityOptions(n_components=6, prune_by="data",
                                                  max_iter=300), random_state=0, **common)
    floored = fit_mixture(X, options=DensityOptions(n_components=6, prune_by="data",
                                                    max_iter=300, component_floor="full_rank"),
                          random_state=0, **common)

    def rows(m):
        return np.bincount(np.argmax(responsibilities(m, X), axis=1), minlength=m.n_components)

    assert rows(plain).min() < 7 <= rows(floored).min()
    assert floored.n_components < plain.n_components
    np.testing.assert_allclose(floored.weights.sum(), 1.0)
    assert DensityOptions().floor(6) == 1.0
    assert DensityOptions(component_floor="full_rank").floor(6) == 7.0
    assert DensityOptions(component_floor="full_rank", min_component_rows=10.0).floor(6) == 10.0
    with pytest.raises(ValueError, match="component_floor"):
        DensityOptions(component_floor="rank")


def test_full_rank_floor_refits_instead_of_dropping_rows():
    """A VI started from many components on few rows in 9-d leaves much of the data in
    components below the full-rank floor (10 rows); dropping them and renormalising the rest
    would leave those rows unmodelled.  The floor refits from the components kept: every
    component then holds at least 10 rows, and the mixture fits the rows better than the
    pruned-and-renormalised one (mean log-density)."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((60, 9)), rng.standard_normal((54, 9)) + 3.0])
    common = dict(weight_concentration_prior=0.01, covariance_prior_scale=1.0, random_state=0)
    plain = fit_mixture(X, options=DensityOptions(n_components=20, prune_by="data",
                                                  max_iter=300), **common)
    floored = fit_mixture(X, options=DensityOptions(n_components=20, prune_by="data",
                                                    max_iter=300, component_floor="full_rank"),
                          **common)
    members = np.bincount(np.argmax(responsibilities(plain, X), axis=1),
                          minlength=plain.n_components)
    small = members < 10
    assert members[small].sum() >= 10          # rows that dropping would leave unmodelled
    dropped = density_module.subset_components(plain, ~small)
    rows = np.bincount(np.argmax(responsibilities(floored, X), axis=1),
                       minlength=floored.n_components)
    assert rows.min() >= 10
    assert log_density(floored, X).mean() > log_density(dropped, X).mean()
