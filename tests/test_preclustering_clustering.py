"""Nguyen & Smeulders 2004's pre-clustering (eqs 9-12): PAM against brute force, fission's stopping
rule, subsets, priors and mixture terms against direct computations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from alprbf.preclustering.clustering import (
    Partition,
    centre_distances,
    cluster_priors,
    cluster_sizes,
    fission,
    fit_mixture,
    initial_partition,
    mixture_terms,
    subsets,
)
from alprbf.preclustering.kmedoids import pairwise_distances, pam, sq_distances, swap_deltas


def brute_force_cost(D, k):
    return min(D[:, list(m)].min(axis=1).sum() for m in itertools.combinations(range(len(D)), k))


def test_distances_by_gemm_match_scipy():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(30, 7)) * 100, rng.normal(size=(11, 7)) * 100
    np.testing.assert_allclose(sq_distances(X, Y), cdist(X, Y, "sqeuclidean"), rtol=1e-9)
    D = pairwise_distances(X)
    np.testing.assert_allclose(D, cdist(X, X), rtol=1e-9, atol=1e-9)
    assert np.all(np.diag(D) == 0) and np.array_equal(D, D.T)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_pam_reaches_the_brute_force_optimum_on_tiny_clustered_data(seed, k):
    """Brute force over every set of k medoids, on k separated groups.  PAM is a local search:
    with overlapping groups, or k unlike the number of groups, it can stop above the optimum
    (e.g. 3 groups and k = 2), which the swap-optimality test above allows."""
    rng = np.random.default_rng(seed)
    centres = np.column_stack([20.0 * rng.permutation(k), rng.normal(size=k)])
    X = centres[rng.permutation(np.arange(12) % k)] + rng.normal(size=(12, 2))
    D = pairwise_distances(X)
    res = pam(D, k)
    assert res.cost == pytest.approx(brute_force_cost(D, k), rel=1e-12)
    assert len(np.unique(res.medoids)) == k
    np.testing.assert_array_equal(res.labels, np.argmin(D[:, res.medoids], axis=1))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 25), k=st.integers(1, 6))
def test_pam_ends_where_no_swap_lowers_the_cost(seed, n, k):
    """PAM's stopping rule, and the vectorised swap costs against recomputed costs."""
    k = min(k, n)
    X = np.random.default_rng(seed).normal(size=(n, 3))
    D = pairwise_distances(X)
    res = pam(D, k)
    delta = swap_deltas(D, res.medoids)
    assert np.all(delta >= -1e-9 * max(res.cost, 1.0))
    for i, h in [(i, h) for i in range(k) for h in range(n) if h not in res.medoids][:20]:
        swapped = res.medoids.copy()
        swapped[i] = h
        assert delta[i, h] == pytest.approx(D[:, swapped].min(axis=1).sum() - res.cost,
                                            abs=1e-9)


def test_pam_rejects_bad_parameters():
    D = pairwise_distances(np.arange(6.0)[:, None])
    with pytest.raises(ValueError, match="n_clusters"):
        pam(D, 7)
    with pytest.raises(ValueError, match="n_clusters"):
        pam(D, 0)
    with pytest.raises(ValueError, match="square"):
        pam(D[:3], 2)


def test_subsets_are_a_random_near_equal_partition():
    parts = subsets(5000, 1250, np.random.default_rng(0))
    assert [len(p) for p in parts] == [1250] * 4
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(5000))
    assert len(subsets(100, 1250, np.random.default_rng(0))) == 1
    assert [len(p) for p in subsets(3000, 1250, np.random.default_rng(0))] == [1500, 1500]


def blobs(seed=0, n=240, d=4):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, d)) * 6
    return centres[rng.integers(0, 6, n)] + rng.normal(size=(n, d))


def check_partition(X, part):
    """Labels are the nearest medoid's cluster (within their subsets) and radii are eq 9."""
    assert len(np.unique(part.medoids)) == part.n_clusters
    assert np.array_equal(part.labels[part.medoids], np.arange(part.n_clusters))
    for k, m in enumerate(part.medoids):
        members = part.labels == k
        r = np.linalg.norm(X[members] - X[m], axis=1).max()
        assert part.radii[k] == pytest.approx(r, rel=1e-9, abs=1e-9)


def test_initial_partition_runs_pam_per_subset():
    X = blobs()
    rng = np.random.default_rng(1)
    part = initial_partition(X, 5, 80, rng)
    assert part.n_clusters == 15 and part.n_splits == 0
    check_partition(X, part)
    parts = subsets(len(X), 80, np.random.default_rng(1))    # the same draw
    for j, rows in enumerate(parts):
        assert set(part.labels[rows]) == set(range(5 * j, 5 * j + 5))
        rows = np.sort(rows)
        ref = pam(pairwise_distances(X[rows]), 5)
        assert set(rows[ref.medoids]) == set(part.medoids[5 * j:5 * j + 5])


def test_fission_stops_exactly_below_kappa_sigma():
    X = blobs(2)
    start = initial_partition(X, 3, 1000, np.random.default_rng(0))
    radii = np.sort(start.radii)
    # a bound equal to the largest radius still splits that cluster (eq 10 is strict)
    at_max = fission(X, start, radii[-1])
    assert at_max.n_splits >= 1 and at_max.radii.max() < radii[-1]
    # just above the largest radius: nothing to do
    assert fission(X, start, radii[-1] * (1 + 1e-12)) is start
    for bound in [radii[-1] * 0.7, radii[-1] * 0.3, 1.0]:
        part = fission(X, start, bound)
        check_partition(X, part)
        assert part.radii.max() < bound
        assert part.n_clusters == start.n_clusters + part.n_splits
        # one split fewer (the same greedy sequence) still had a radius >= the bound
        before = fission(X, start, float(np.sort(part.radii)[-1]) * (1 + 1e-12))
        assert before.n_splits <= part.n_splits


def test_fission_continued_equals_fission_from_scratch():
    """Re-clustering after sigma shrinks continues fission (module docstring of clustering)."""
    X = blobs(3)
    start = initial_partition(X, 4, 1000, np.random.default_rng(0))
    coarse = fission(X, start, 8.0)
    fine_cont = fission(X, coarse, 4.0)
    fine_scratch = fission(X, start, 4.0)
    np.testing.assert_array_equal(fine_cont.medoids, fine_scratch.medoids)
    np.testing.assert_array_equal(fine_cont.labels, fine_scratch.labels)


def test_fission_rejects_a_non_positive_bound():
    X = blobs()
    start = initial_partition(X, 3, 1000, np.random.default_rng(0))
    with pytest.raises(ValueError, match="max_radius"):
        fission(X, start, 0.0)


def test_mixture_terms_against_a_loop():
    X = blobs(4, n=50)
    centres = X[[0, 5, 9]]
    alpha = np.array([0.5, 0.3, 0.2])
    sigma = 3.0
    log_resp, log_px = mixture_terms(X, centres, np.log(alpha), sigma)
    for i, x in enumerate(X):
        w = [a * np.exp(-np.sum((x - c) ** 2) / (2 * sigma ** 2))
             for a, c in zip(alpha, centres, strict=True)]
        assert np.exp(log_px[i]) == pytest.approx(sum(w), rel=1e-9)                # eq 31
        np.testing.assert_allclose(np.exp(log_resp[i]), np.array(w) / sum(w), rtol=1e-9)  # eq 11


def test_cluster_priors_reach_the_fixed_point_of_eqs_11_12():
    X = blobs(5, n=300)
    part = fission(X, initial_partition(X, 6, 1000, np.random.default_rng(0)), 100.0)
    centres = X[part.medoids]
    alpha, n_iter = cluster_priors(X, centres, 2.0, cluster_sizes(part), tol=1e-12,
                                   max_iter=100_000)
    assert n_iter < 100_000 and alpha.sum() == pytest.approx(1.0)
    log_resp, _ = mixture_terms(X, centres, np.log(alpha), 2.0)
    np.testing.assert_allclose(np.exp(log_resp).mean(axis=0), alpha, atol=1e-10)     # eq 12


def test_cluster_sizes():
    part = Partition(np.array([0, 1]), np.array([0, 1, 1, 1]), np.zeros(2))
    np.testing.assert_allclose(cluster_sizes(part), [0.25, 0.75])


def test_cluster_priors_with_hard_memberships_are_the_nearest_centre_shares():
    """Small sigma: most Gaussian factors underflow (the log-space step) and the priors are
    the shares of the rows nearest to each centre."""
    X = blobs(6, n=200)
    centres = X[[0, 1, 2, 3]]
    nearest = np.argmin(cdist(X, centres), axis=1)
    alpha, _ = cluster_priors(X, centres, 1e-3, np.full(4, 0.25))
    np.testing.assert_allclose(alpha, np.bincount(nearest, minlength=4) / len(X), atol=1e-12)


def test_centre_distances_reuse_the_unchanged_columns():
    X = blobs(7)
    start = initial_partition(X, 4, 1000, np.random.default_rng(0))
    coarse = fission(X, start, 10.0)
    sq = centre_distances(X, coarse)
    fine = fission(X, coarse, 4.0)
    assert fine.n_clusters > coarse.n_clusters
    np.testing.assert_allclose(centre_distances(X, fine, coarse, sq),
                               sq_distances(X, X[fine.medoids]), rtol=1e-12, atol=1e-9)
    log_resp, log_px = mixture_terms(X, X[fine.medoids], np.full(fine.n_clusters, -2.0), 3.0,
                                     sqdist=centre_distances(X, fine))
    ref = mixture_terms(X, X[fine.medoids], np.full(fine.n_clusters, -2.0), 3.0)
    np.testing.assert_allclose(log_resp, ref[0], atol=1e-12)
    np.testing.assert_allclose(log_px, ref[1], atol=1e-12)


@pytest.mark.parametrize("sigma", [1e-3, 0.5, 3.0, 50.0])
def test_fit_mixture_equals_priors_then_mixture_terms(sigma):
    X = blobs(8, n=150)
    part = fission(X, initial_partition(X, 6, 1000, np.random.default_rng(0)), 6.0)
    centres = X[part.medoids]
    mix = fit_mixture(centre_distances(X, part), sigma, cluster_sizes(part), tol=1e-10)
    alpha, n_iter = cluster_priors(X, centres, sigma, cluster_sizes(part), tol=1e-10)
    assert mix.n_iter == n_iter
    np.testing.assert_allclose(np.exp(mix.log_alpha), alpha, atol=1e-12)
    log_resp, log_px = mixture_terms(X, centres, mix.log_alpha, sigma)
    np.testing.assert_allclose(mix.log_px, log_px, rtol=1e-10, atol=1e-10)
    rows = np.arange(0, 150, 4)
    np.testing.assert_allclose(mix.log_resp(rows), log_resp[rows], rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(mix.resp, np.exp(log_resp), atol=1e-12)


@pytest.mark.parametrize("sigma", [1e-3, 0.5, 50.0])    # 1e-3: the log-space branch
def test_a_pickled_mixture_leaves_out_resp_and_restores_it_bit_for_bit(sigma):
    import pickle
    import warnings

    X = blobs(9, n=200)
    part = fission(X, initial_partition(X, 8, 1000, np.random.default_rng(1)), 6.0)
    mix = fit_mixture(centre_distances(X, part), sigma, cluster_sizes(part), tol=1e-10)
    data = pickle.dumps(mix)
    assert len(data) < mix.sqdist.nbytes + mix.resp.nbytes // 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no round-off warning on the same machine
        back = pickle.loads(data)
    np.testing.assert_array_equal(back.resp, mix.resp)
    np.testing.assert_array_equal(back.log_px, mix.log_px)
    np.testing.assert_array_equal(back.sqdist, mix.sqdist)
    assert back.n_iter == mix.n_iter and back.sigma == mix.sigma
