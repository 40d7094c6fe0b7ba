"""Constantinopoulos & Likas 2008's node gate under the supported-candidate reading
(``candidate_min_rows="d+1"``, docs/decisions/0005-constantinopoulos2008-node-gate.md) and the
literal one (the default, 2 rows)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from alprbf.models import MODELS
from alprbf.prbf._data import prepare_data
from alprbf.prbf._estep import e_step
from alprbf.prbf._incremental import try_add_component
from alprbf.prbf.active import StepOptions, initial_network, propose_node

FLOOR = 1e-3      # the covariance floor of configs/table_000.yaml


def _needle_and_cloud():
    """Two labeled rows of classes 0 and 1 on one point far left (the needle's support), six
    labeled rows of both classes in a cloud on the right, and 20 unlabeled rows near the cloud.
    With one node, the labeled set is one partition; the kd-tree's first cut separates the two
    far rows (a 2-row subset) from the cloud (6 rows, then halves of 3)."""
    XA = np.array([[-10.0, 0.0], [-10.0, 0.0]])
    XB = np.array([[1.0, -1.0], [1.5, 1.0], [2.0, 0.0], [2.5, -0.5], [3.0, 1.0], [2.0, 0.5]])
    XU = np.random.default_rng(0).normal([2.0, 0.0], 1.5, size=(20, 2))
    y = np.concatenate([[0, 1], [0, 1, 0, 1, 0, 1], np.full(20, np.nan)])
    return np.vstack([XA, XB, XU]), y, XA, XB


def _eq37(X_lab, y_lab, net, mean, var, alpha):
    """Eq 37 by hand for a one-node diagonal network: per class, the mean over its labeled rows
    of log(1 - a_k + a_k f(x) / p(x|k)), with p(x|k) the node's density (pi_1k = 1)."""
    p = norm.pdf(X_lab, net.means[0], np.sqrt(net.covariances[0])).prod(axis=1)
    f = norm.pdf(X_lab, mean, np.sqrt(var)).prod(axis=1)
    return np.array([np.mean(np.log(1 - alpha[k] + alpha[k] * f[y_lab == k] / p[y_lab == k]))
                     for k in range(2)])


def _propose(X, y, net, **opts):
    data = prepare_data(X, y, 2, "diag")
    return propose_node(data, e_step(data, net), net, StepOptions(reg_covar=FLOOR, **opts))


def test_needle_passes_the_literal_gate_and_the_supported_reading_takes_the_cloud():
    X, y, XA, XB = _needle_and_cloud()
    lab = ~np.isnan(y)
    X_lab, y_lab = X[lab], y[lab].astype(int)
    net = initial_network(X, y, 2, "diag", FLOOR)
    alpha = net.weights[0] / 2                                     # pi_jk / 2 = 0.5

    # literal gate (subsets of 2 rows allowed): the winner is the needle on the two far rows,
    # variance = the floor in both features; it raises both classes' likelihood by a lot,
    # all of it on its own two rows (the six cloud rows each lose log 2)
    lit = _propose(X, y, net)
    assert lit is not None and lit.n_components == 2
    np.testing.assert_array_equal(lit.means[-1], XA.mean(axis=0))
    np.testing.assert_allclose(lit.covariances[-1], [FLOOR, FLOOR])
    gain = _eq37(X_lab, y_lab, net, XA[0], np.full(2, FLOOR), alpha)
    assert np.all(gain > 0) and gain.sum() > 100 * 0.01
    own = np.array([np.log(1 - alpha[k] + alpha[k]
                           * norm.pdf(XA[k], XA[0], np.sqrt(FLOOR)).prod()
                           / norm.pdf(XA[k], net.means[0], np.sqrt(net.covariances[0])).prod())
                    for k in range(2)]) / 4                       # each class: 1 of its 4 rows
    np.testing.assert_allclose(gain, own + 3 * np.log(0.5) / 4, rtol=1e-9)

    # supported reading (d + 1 = 3 rows): the 2-row subset is no candidate; the winner is the
    # cloud (6 rows of both classes, its sample moments plus the floor), which still passes
    sup = _propose(X, y, net, candidate_min_rows="d+1")
    assert sup is not None and sup.n_components == 2
    np.testing.assert_allclose(sup.means[-1], XB.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sup.covariances[-1], XB.var(axis=0) + FLOOR, rtol=1e-12)
    gain_sup = _eq37(X_lab, y_lab, net, XB.mean(axis=0), XB.var(axis=0) + FLOOR, alpha)
    assert np.all(gain_sup > 0) and gain_sup.sum() > 0.01
    np.testing.assert_allclose(sup.weights[-1], alpha)


def test_supported_reading_adds_nothing_when_no_subset_has_d_plus_one_rows():
    # the same data with one cloud row labeled: three labeled rows, so every kd-tree subset
    # below the root (the far pair, the single cloud row) has fewer than d + 1 = 3 rows
    X, y, _, _ = _needle_and_cloud()
    y = y.copy()
    y[3:8] = np.nan
    net = initial_network(X, y, 2, "diag", FLOOR)
    assert _propose(X, y, net) is not None                            # the literal gate: needle
    assert _propose(X, y, net, candidate_min_rows="d+1") is None
    assert _propose(X, y, net, candidate_min_rows=3) is None


@pytest.mark.parametrize("rows", ["labeled", "all"])
def test_option_off_is_todays_gate(rows):
    # candidate_min_rows = 2 (the default) is the procedure as it was: the same proposal as the
    # addition routine's own default subset size
    X, y, _, _ = _needle_and_cloud()
    net = initial_network(X, y, 2, "diag", FLOOR)
    a = _propose(X, y, net, candidate_rows=rows)
    b = _propose(X, y, net, candidate_rows=rows, candidate_min_rows=2)
    np.testing.assert_array_equal(a.means, b.means)
    np.testing.assert_array_equal(a.weights, b.weights)
    if rows == "labeled":
        ref, _ = try_add_component(X, y, net, reg_covar=FLOOR, partial_max_iter=0, em=False)
        np.testing.assert_array_equal(a.means, ref.means)
        np.testing.assert_array_equal(a.covariances, ref.covariances)


def test_learner_with_the_option_off_equals_the_default_learner():
    from tests.prbf_data import overlap_blobs

    X, y = overlap_blobs()
    runs = []
    for params in ({}, {"candidate_min_rows": 2}):
        m = MODELS["active_prbf"](n_classes=3, random_state=0, reg_covar=FLOOR, **params)
        yo = np.full(len(y), np.nan)
        rng = np.random.default_rng(2)
        first = rng.choice(len(y), 40, replace=False)
        yo[first] = y[first]
        sizes = []
        for _ in range(6):
            m.fit(X, yo)
            sizes.append(m.model_size())
            q = rng.choice(np.flatnonzero(np.isnan(yo)))
            yo[q] = y[q]
        runs.append((sizes, m.predict_log_proba(X)))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("bad", [1, 0, "d", "d+2", 2.0, True, None])
def test_candidate_min_rows_is_validated(bad):
    with pytest.raises(ValueError, match="candidate_min_rows"):
        StepOptions(candidate_min_rows=bad)


def test_min_rows_resolves_d_plus_one():
    assert StepOptions(candidate_min_rows="d+1").min_rows(62) == 63
    assert StepOptions().min_rows(62) == 2
    assert StepOptions(candidate_min_rows=5).min_rows(62) == 5
