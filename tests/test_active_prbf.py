"""Active PRBF (Constantinopoulos & Likas 2008, §4.2), its QBC classifier (§4.3) and the qbc_prbf
strategy."""

from __future__ import annotations

import numpy as np
import pytest

from alprbf.models import MODELS
from alprbf.prbf._data import label_codes, prepare_data
from alprbf.prbf._em import run_em
from alprbf.prbf._estep import e_step
from alprbf.prbf._predict import predict_log_proba
from alprbf.prbf._split import split_params
from alprbf.prbf.active import StepOptions, active_step, initial_network
from alprbf.prbf.qbc import CommitteeOptions, network_statistics, train_committee
from alprbf.strategies import STRATEGIES

# The all-rows candidate reading (table_000's active_prbf row).  On these well-separated blobs
# a labeled-row candidate raises only its own class's likelihood, so the literal default adds
# no node; tests of the step's selection logic use this reading, which grows.
ALL_ROWS = {"covariance_type": "full", "candidate_rows": "all"}


def _blobs(seed=0, n_per=60, K=3, d=2):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [3.0, 0.5], [1.0, 3.0]])[:K, :d]
    X = np.concatenate([rng.normal(c, 0.8, size=(n_per, d)) for c in centers])
    y = np.repeat(np.arange(K), n_per)
    return X, y


def _partial(y, n_lab, rng):
    yo = np.full(len(y), np.nan)
    idx = rng.choice(len(y), n_lab, replace=False)
    yo[idx] = y[idx]
    return yo


def test_initial_network_is_the_fixed_point_of_ssl_em():
    X, y = _blobs()
    yo = _partial(y, 20, np.random.default_rng(0))
    net = initial_network(X, yo, 3)
    res = run_em(prepare_data(X, yo, 3), net, max_iter=3, tol=0.0)
    np.testing.assert_allclose(res.params.means, net.means, atol=1e-10)
    np.testing.assert_allclose(res.params.covariances, net.covariances, atol=1e-10)
    np.testing.assert_allclose(res.params.class_priors, net.class_priors, atol=1e-12)
    counts = np.bincount(y[~np.isnan(yo)], minlength=3)
    np.testing.assert_allclose(net.class_priors, counts / counts.sum())


@pytest.mark.parametrize("selection", ["split_likelihood", "always_add"])
def test_step_keeps_the_split_network_with_larger_joint_likelihood(selection):
    X, y = _blobs(1)
    yo = _partial(y, 30, np.random.default_rng(1))
    net = initial_network(X, yo, 3)
    opts = StepOptions(candidate_rows="all")
    step = active_step(X, yo, net, opts, selection)
    assert step.attempted and step.added  # the 1-node net is clearly too small here
    data = prepare_data(X, yo, 3)
    # independent recomputation of both split networks' eq-17 values
    ll_one = e_step(data, split_params(data, net, e_step(data, net)).params).loglik
    assert step.joint_loglik == pytest.approx(
        e_step(data, step.split).loglik, rel=1e-12)
    if selection == "split_likelihood":
        assert step.joint_loglik >= ll_one
        assert step.rejected_loglik == pytest.approx(ll_one, rel=1e-12)
    # the split network is the split of the kept network
    again = split_params(data, step.network, e_step(data, step.network)).params
    np.testing.assert_allclose(again.means, step.split.means)
    np.testing.assert_allclose(again.weights, step.split.weights)


def test_rejects_grown_network_when_its_split_is_worse(monkeypatch):
    """Force the grown network to be bad: split_likelihood must keep PRBF_J."""
    import alprbf.prbf.active as A

    X, y = _blobs(2)
    yo = _partial(y, 30, np.random.default_rng(2))
    net = initial_network(X, yo, 3)
    bad = A.insert_component(net, np.array([40.0, 40.0]), np.eye(2) * 1e-3,
                             np.eye(2) * np.sqrt(1e3), np.full(3, 0.5))
    monkeypatch.setattr(A, "propose_from_all_rows", lambda *a, **k: bad)
    monkeypatch.setattr(A, "run_em", lambda data, p, **k: type("R", (), {
        "params": p, "estep": e_step(data, p), "n_iter": 0})())
    kept = active_step(X, yo, net, StepOptions(candidate_rows="all"))
    assert kept.attempted and not kept.added
    assert kept.network.n_components == 1
    forced = active_step(X, yo, net, StepOptions(candidate_rows="all"), "always_add")
    assert forced.added and forced.network.n_components == 2


def _run_loop(model_name, strategy, X, y, n_queries, seed, params=None):
    rng = np.random.default_rng(seed)
    yo = _partial(y, 15, rng)
    model = MODELS[model_name](n_classes=3, random_state=seed, **(params or {}))
    strat = STRATEGIES[strategy[0]](**strategy[1])
    picked, sizes = [], []
    for _ in range(n_queries):
        model.fit(X, yo)
        lp = model.predict_log_proba(X)
        assert not np.any(np.isnan(lp))
        np.testing.assert_allclose(np.exp(lp).sum(1), 1.0, atol=1e-10)
        sizes.append(model.model_size())
        q = strat.query(X, yo.copy(), model, 1, rng)
        assert np.isnan(yo[q]).all()
        picked.append(int(q[0]))
        yo[q] = y[q]
    model.fit(X, yo)
    return model, picked, sizes


@pytest.mark.parametrize("model_name,strategy", [
    ("active_prbf", ("posterior_ratio", {})),
    ("incremental_ssl_prbf", ("qbc_prbf", {"max_iter": 20})),
])
def test_smoke_loop_is_finite_deterministic_and_warm_started(model_name, strategy):
    X, y = _blobs(3, n_per=40)
    m1, p1, s1 = _run_loop(model_name, strategy, X, y, 6, seed=11, params=ALL_ROWS)
    m2, p2, s2 = _run_loop(model_name, strategy, X, y, 6, seed=11, params=ALL_ROWS)
    assert p1 == p2 and s1 == s2
    np.testing.assert_array_equal(m1.predict_log_proba(X), m2.predict_log_proba(X))
    # warm start: one step per fit, the node count never resets, history carries over
    assert m1.n_steps_ == 7 and len(m1.history_) == 7
    assert all(b >= a for a, b in zip(s1, s1[1:], strict=False))
    assert [h["n_labeled"] for h in m1.history_] == list(range(15, 22))
    assert np.all(np.isfinite([h["joint_loglik"] for h in m1.history_]))
    assert np.mean(m1.predict(X) == y) > 0.8  # well separated blobs


def test_refit_restarts_from_one_node_when_data_change():
    X, y = _blobs(4)
    yo = _partial(y, 20, np.random.default_rng(0))
    m = MODELS["active_prbf"](n_classes=3, random_state=0)
    m.fit(X, yo)
    m.fit(X, yo)
    assert m.n_steps_ == 2
    prev_nodes = m.network_.n_components
    yo2 = yo.copy()
    yo2[np.flatnonzero(~np.isnan(yo))[0]] = np.nan  # a label disappeared: restart
    m.fit(X, yo2)
    assert m.n_steps_ == 1 and m.network_.n_components <= 2 <= prev_nodes + 1
    m.fit(X[:-1], yo2[:-1])  # other rows: restart
    assert m.n_steps_ == 1


def test_warm_start_continues_from_previous_network(monkeypatch):
    """The second fit starts from the first fit's network, not from one node."""
    import alprbf.models.active_prbf as AP

    X, y = _blobs(5)
    yo = _partial(y, 20, np.random.default_rng(0))
    m = MODELS["active_prbf"](n_classes=3, random_state=0)
    m.fit(X, yo)
    seen = []
    real = AP.active_step
    monkeypatch.setattr(AP, "active_step", lambda X_, y_, net, *a, **k: (
        seen.append(net), real(X_, y_, net, *a, **k))[1])
    monkeypatch.setattr(AP, "initial_network", lambda *a, **k: pytest.fail("restarted"))
    first = m.network_
    yo[np.flatnonzero(np.isnan(yo))[0]] = 0
    m.fit(X, yo)
    assert seen[0] is first


def test_posterior_ratio_query_equals_brute_force():
    X, y = _blobs(6, n_per=30)
    yo = _partial(y, 12, np.random.default_rng(6))
    m = MODELS["active_prbf"](n_classes=3, random_state=0).fit(X, yo)
    pool = np.flatnonzero(np.isnan(yo))
    P = m.predict_proba(X[pool])
    ratios = []
    for row in P:  # eqs 38-39 literally: largest over second largest
        k1 = int(np.argmax(row))
        k2 = max((k for k in range(3) if k != k1), key=lambda k: row[k])
        ratios.append(row[k1] / row[k2])
    expected = pool[int(np.argmin(ratios))]
    got = STRATEGIES["posterior_ratio"]().query(X, yo, m, 1, np.random.default_rng(0))
    assert got.tolist() == [expected]


def test_predict_log_proba_is_exact_in_log_space():
    X, y = _blobs(7)
    yo = _partial(y, 30, np.random.default_rng(7))
    m = MODELS["active_prbf"](n_classes=3, random_state=0).fit(X, yo)
    far = np.array([[60.0, -50.0], [1e3, 1e3]])  # every density underflows in linear space
    lp = m.predict_log_proba(far)
    assert np.all(np.isfinite(lp) | np.isneginf(lp)) and not np.any(np.isnan(lp))
    np.testing.assert_allclose(np.logaddexp.reduce(lp, axis=1), 0.0, atol=1e-10)
    np.testing.assert_allclose(lp, predict_log_proba(far, m.split_))


def test_committee_members_are_diagonal_trained_and_deterministic():
    X, y = _blobs(8)
    yo = _partial(y, 25, np.random.default_rng(8))
    m = MODELS["incremental_ssl_prbf"](n_classes=3, random_state=0)
    for _ in range(3):
        m.fit(X, yo)
        yo[np.flatnonzero(np.isnan(yo))[0]] = y[np.flatnonzero(np.isnan(yo))[0]]
    m.fit(X, yo)
    opts = CommitteeOptions(n_members=4, max_iter=30)
    a = m.committee(opts, np.random.default_rng(3))
    b = m.committee(opts, np.random.default_rng(3))
    assert len(a) == 4
    for pa, pb in zip(a, b, strict=True):
        assert pa.covariance_type == "diag"
        assert pa.n_components == m.network_.n_components
        np.testing.assert_array_equal(pa.means, pb.means)
    assert not np.allclose(a[0].means, a[1].means)  # members differ
    lp = m.committee_log_proba(X[:10], opts, np.random.default_rng(3))
    assert lp.shape == (4, 10, 3) and not np.any(np.isnan(lp))
    # members trained in parallel threads are the sequential members, bit for bit
    c = m.committee(opts, np.random.default_rng(3), n_threads=3)
    for pa, pc in zip(a, c, strict=True):
        for field in ("means", "covariances", "weights", "class_priors"):
            np.testing.assert_array_equal(getattr(pa, field), getattr(pc, field))
    np.testing.assert_array_equal(
        m.committee_log_proba(X[:10], opts, np.random.default_rng(3), n_threads=2), lp)


def test_labeled_statistics_use_labeled_rows_only():
    X, y = _blobs(9)
    yo = _partial(y, 20, np.random.default_rng(9))
    data = prepare_data(X, yo, 3, "full")
    net = initial_network(X, yo, 3)
    est = e_step(data, net)
    lab = network_statistics(data, est, "labeled")
    allst = network_statistics(data, est, "all")
    # one node: p(j|x,k) = 1, so rho_1k = N_k and the moments are the labeled rows' moments
    np.testing.assert_allclose(lab.counts[0], data.class_counts)
    np.testing.assert_allclose(lab.means[0], X[data.labeled].mean(0))
    np.testing.assert_allclose(lab.variances[0], X[data.labeled].var(0) + 1e-6)
    np.testing.assert_allclose(allst.eta, [len(X)])
    np.testing.assert_allclose(allst.means[0], X.mean(0))
    members = train_committee(data, net, est, CommitteeOptions(n_members=2, max_iter=0),
                              np.random.default_rng(0))
    assert all(p.covariance_type == "diag" for p in members)


def test_qbc_strategy_queries_the_max_disagreement_and_validates():
    X, y = _blobs(10, n_per=30)
    yo = _partial(y, 12, np.random.default_rng(10))
    m = MODELS["incremental_ssl_prbf"](n_classes=3, random_state=0, **ALL_ROWS).fit(X, yo)
    strat = STRATEGIES["qbc_prbf"](n_members=3, max_iter=10)
    from alprbf.prbf.qbc import kl_to_mean

    pool = np.flatnonzero(np.isnan(yo))
    lp = m.committee_log_proba(X[pool], strat.options, np.random.default_rng(4))
    expected = pool[int(np.argmax(kl_to_mean(lp)))]
    assert strat.query(X, yo, m, 1, np.random.default_rng(4)).tolist() == [expected]
    with pytest.raises(ValueError, match="statistics"):
        STRATEGIES["qbc_prbf"](statistics="everything")
    with pytest.raises(TypeError, match="needs a PRBF learner"):
        strat.query(X, yo, MODELS["gaussian_nb"](n_classes=3).fit(X, yo), 1,
                    np.random.default_rng(0))
    with pytest.raises(ValueError, match="covariance_type"):
        MODELS["active_prbf"](n_classes=3, covariance_type="fulll")


def test_table_000_configs_parse_with_the_intended_methods():
    from pathlib import Path

    import pandas as pd

    from alprbf.engine.config import load_config

    root = Path(__file__).resolve().parents[1] / "configs"
    cfg = load_config(root / "table_000.yaml")
    methods = {f"{m.label} / {s.label}" for m, s in cfg.methods}
    assert {"active_prbf / posterior_ratio", "incremental_ssl_prbf / qbc_prbf"} <= methods
    assert cfg.protocol.initial.size == 50 and cfg.protocol.budget == 300
    assert cfg.protocol.folds == 5 and cfg.protocol.batch_size == 1
    smoke = cfg.with_scale("smoke")
    assert smoke.protocol.budget < 20 and smoke.protocol.max_rows > 0
    ref = pd.read_csv(cfg.reference)
    labels = {d.label for d in cfg.datasets}
    assert set(ref["dataset"]) == labels
    assert set(ref["method"]) <= methods
    assert load_config(root / "pen_digits_qbc.yaml").protocol.budget == 300


def test_posteriors_of_the_training_rows_reuse_the_step_and_equal_a_fresh_prediction():
    # predict on the fit's X (and on its pool rows) takes the split network's Gaussians from
    # the step; they must equal a prediction computed from scratch, and a different X must not
    # hit the cache
    X, y = _blobs(8, n_per=40)
    yo = _partial(y, 15, np.random.default_rng(8))
    m = MODELS["active_prbf"](n_classes=3, random_state=0)
    for _ in range(3):
        m.fit(X, yo)
        fresh = predict_log_proba(X, m.split_)
        np.testing.assert_allclose(m.predict_log_proba(X), fresh, rtol=1e-9, atol=1e-9)
        pool = np.flatnonzero(np.isnan(yo))
        np.testing.assert_allclose(m.predict_log_proba_rows(X, pool), fresh[pool],
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(m.predict_proba_rows(X, pool), np.exp(fresh[pool]))
        X2 = X + 0.5
        np.testing.assert_allclose(m.predict_log_proba(X2), predict_log_proba(X2, m.split_))
        yo[pool[0]] = y[pool[0]]


def test_step_reusing_the_previous_gaussians_equals_a_fresh_step():
    # after a query only the labels change, so the learner hands the previous E-step's
    # log N_j(x) to the next step; the step must equal one that evaluates them again
    X, y = _blobs(9, n_per=40)
    yo = _partial(y, 15, np.random.default_rng(9))
    m = MODELS["active_prbf"](n_classes=3, random_state=0).fit(X, yo)
    m.fit(X, yo)
    pool = np.flatnonzero(np.isnan(yo))
    yo[pool[0]] = y[pool[0]]
    codes = np.where(np.isnan(yo), -1, yo).astype(int)
    opts = m.options
    a = active_step(X, codes, m.network_, opts, log_prob=m.estep_.log_prob)
    b = active_step(X, codes, m.network_, opts)
    assert a.joint_loglik == pytest.approx(b.joint_loglik, rel=1e-12)
    np.testing.assert_allclose(a.split.means, b.split.means, rtol=1e-10, atol=1e-12)


def _candidate_proposals(X, yo, net, rows):
    """The grown network (before EM) proposed by each candidate mode, or None."""
    from alprbf.prbf.active import propose_node

    data = prepare_data(X, yo, net.n_classes, net.covariance_type)
    return propose_node(data, e_step(data, net), net,
                        StepOptions(candidate_rows=rows, reg_covar=1e-3))


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_labeled_candidate_mode_ignores_the_pool_and_all_rows_mode_does_not(covariance_type):
    # eq 36 partitions the labeled set: moving the unlabeled rows (same network) must not
    # change the proposed node in the literal mode, and must change it in the all-rows mode
    from tests.prbf_data import overlap_blobs

    X, y = overlap_blobs()
    yo = _partial(y, 90, np.random.default_rng(5))
    pool = np.isnan(yo)
    net = initial_network(X, yo, 3, covariance_type, reg_covar=1e-3)
    X_moved = X.copy()
    X_moved[pool] = X[pool] * 0.5 + 0.3
    lit, lit_moved = (_candidate_proposals(Z, yo, net, "labeled") for Z in (X, X_moved))
    assert lit is not None and lit.n_components == 2
    np.testing.assert_array_equal(lit.means, lit_moved.means)
    np.testing.assert_array_equal(lit.covariances, lit_moved.covariances)
    np.testing.assert_array_equal(lit.weights, lit_moved.weights)
    # the new node's mean is the mean of a subset of the labeled rows: inside their bounding box
    new = lit.means[-1]
    assert np.all(new >= X[~pool].min(axis=0)) and np.all(new <= X[~pool].max(axis=0))
    every, every_moved = (_candidate_proposals(Z, yo, net, "all") for Z in (X, X_moved))
    assert every is not None and every_moved is not None
    assert not np.allclose(every.means[-1], every_moved.means[-1])



def test_literal_reading_learner_grows_deterministically_with_finite_posteriors():
    # table_000's active_prbf_literal row: diag covariances, candidates from labeled rows
    from tests.prbf_data import overlap_blobs

    X, y = overlap_blobs()
    runs = []
    for _ in range(2):
        model = MODELS["active_prbf"](n_classes=3, random_state=0)   # defaults: the literal reading
        yo = _partial(y, 40, np.random.default_rng(2))
        rng = np.random.default_rng(3)
        for _ in range(6):
            model.fit(X, yo)
            q = rng.choice(np.flatnonzero(np.isnan(yo)))
            yo[q] = y[q]
        model.fit(X, yo)
        runs.append(model.predict_log_proba(X))
    assert model.n_steps_ == 7
    assert model.network_.covariance_type == "diag" and model.network_.n_components >= 3
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.all(np.isfinite(runs[0]))
    np.testing.assert_allclose(np.exp(runs[0]).sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("model_name", ["active_prbf", "incremental_ssl_prbf"])
def test_ignoring_unlabeled_rows_trains_on_the_labeled_rows_and_still_warm_starts(model_name):
    # unlabeled_rows="ignore" (an ablation): every step equals the same step on the labeled
    # rows alone, the network carries over between fits, and the pool's posteriors come from
    # the split network (no cached posteriors of other rows)
    X, y = _blobs(6)
    yo = _partial(y, 24, np.random.default_rng(1))
    params = dict(ALL_ROWS, unlabeled_rows="ignore")
    m = MODELS[model_name](n_classes=3, random_state=0, **params)
    m.fit(X, yo)
    lab = ~np.isnan(yo)
    ref = MODELS[model_name](n_classes=3, random_state=0, **ALL_ROWS)
    ref.fit(X[lab], yo[lab])                       # "use" on the labeled rows alone
    for name in ("means", "covariances", "weights", "class_priors"):
        np.testing.assert_array_equal(getattr(m.network_, name), getattr(ref.network_, name))
    np.testing.assert_array_equal(m.predict_log_proba(X), predict_log_proba(X, m.split_))
    # later fits continue from the previous network, each on the labeled rows of that fit
    for _ in range(4):
        prev = m.network_
        yo[np.flatnonzero(np.isnan(yo))[0]] = y[np.flatnonzero(np.isnan(yo))[0]]
        lab = ~np.isnan(yo)
        step = active_step(X[lab], label_codes(yo[lab]), prev, m.options, m.selection)
        m.fit(X, yo)
        np.testing.assert_array_equal(m.network_.means, step.network.means)
        assert m.data_.n_samples == lab.sum() and m.data_.n_unlabeled == 0
    assert m.n_steps_ == 5
    # the default uses the pool: the same first fit on all rows differs
    full = MODELS[model_name](n_classes=3, random_state=0, **ALL_ROWS).fit(X, yo)
    assert full.data_.n_unlabeled > 0


def test_unlabeled_rows_must_be_use_or_ignore():
    with pytest.raises(ValueError, match="unlabeled_rows"):
        StepOptions(unlabeled_rows="drop")
