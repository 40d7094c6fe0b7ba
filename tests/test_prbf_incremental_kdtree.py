"""kd-tree candidate generator of Constantinopoulos & Likas 2006, §III.B."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alprbf.prbf._kdtree import (
    kdtree_candidates,
    kdtree_subsets,
    n_tree_subsets,
    principal_direction,
    split_node,
)


def test_fourteen_subsets_at_depth_three():
    X = np.random.default_rng(0).normal(size=(200, 3))
    subs = kdtree_subsets(X, kd_depth=3)
    assert n_tree_subsets(3) == 14
    assert len(subs) == 14
    # level sizes 2, 4, 8; each level partitions the data
    for lo, hi in ((0, 2), (2, 6), (6, 14)):
        level = np.concatenate(subs[lo:hi])
        assert np.array_equal(np.sort(level), np.arange(200))


def test_hand_checked_2d_mean_split():
    # the set is symmetric under x <-> y with positive x-y covariance, so the principal
    # direction is (1, 1)/sqrt(2); projections (times sqrt 2): -6, -2, 2, 6, -1, -1, whose
    # mean -1/3 puts rows 0, 1, 4, 5 on the left and rows 2, 3 on the right
    X = np.array([[-3, -3], [-1, -1], [1, 1], [3, 3], [1, -2], [-2, 1]], dtype=float)
    v = principal_direction(X)
    assert np.allclose(v, np.array([1, 1]) / np.sqrt(2))
    left, right = split_node(X, np.arange(6), "mean")
    assert sorted(left.tolist()) == [0, 1, 4, 5]
    assert sorted(right.tolist()) == [2, 3]


def test_mean_and_median_cut_differ_on_skewed_data():
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    left, right = split_node(X, np.arange(4), "mean")  # cut at 3.25
    assert left.tolist() == [0, 1, 2] and right.tolist() == [3]
    left, right = split_node(X, np.arange(4), "median")  # cut at 1.5
    assert left.tolist() == [0, 1] and right.tolist() == [2, 3]


def test_unsplittable_nodes_yield_fewer_candidates():
    X = np.ones((5, 2))
    assert kdtree_subsets(X, kd_depth=3) == []
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    subs = kdtree_subsets(X, kd_depth=3, min_size=2)
    # root -> {0,1} | {2}; {2} is too small; {0,1} -> {0} | {1}, both too small
    assert [s.tolist() for s in subs] == [[0, 1]]


@pytest.mark.parametrize("cov_type", ["full", "diag", "spherical"])
def test_candidate_moments_match_numpy(cov_type):
    X = np.random.default_rng(1).normal(size=(120, 3)) * [1.0, 2.0, 0.5]
    reg = 1e-3
    means, covs = kdtree_candidates(X, cov_type, reg_covar=reg, kd_depth=3)
    subs = kdtree_subsets(X, kd_depth=3)
    assert means.shape == (14, 3)
    for m, c, idx in zip(means, covs, subs, strict=True):
        S = np.cov(X[idx].T, bias=True) + reg * np.eye(3)
        assert np.allclose(m, X[idx].mean(0))
        expected = {"full": S, "diag": np.diag(S), "spherical": np.diag(S).mean()}[cov_type]
        assert np.allclose(c, expected)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 60), d=st.integers(1, 4), seed=st.integers(0, 10_000),
       split=st.sampled_from(["mean", "median"]))
def test_children_partition_their_parent(n, d, seed, split):
    X = np.random.default_rng(seed).normal(size=(n, d))
    out = split_node(X, np.arange(n), split)
    if out is None:
        return
    left, right = out
    assert left.size and right.size
    assert np.array_equal(np.sort(np.concatenate([left, right])), np.arange(n))
    v = principal_direction(X)
    # every left point projects at or below every right point
    assert (X[left] @ v).max() <= (X[right] @ v).min() + 1e-12
