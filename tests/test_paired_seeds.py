"""Paired starts: models given one ``seed_key`` draw the same model seed on a task (Titsias & Likas
2001's constrained and plain PRBF at one M start from the same k-means network); without a key the
seed follows the label as it always did, so the other tables' records keep their seeds."""

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification

from alprbf.engine.config import load_config, parse_config
from alprbf.engine.protocol import task_seeds
from alprbf.engine.runner import plan
from alprbf.errors import UserError
from alprbf.models import MODELS

ROOT = Path(__file__).resolve().parent.parent


def _config(models):
    return parse_config({"name": "t", "dataset": "iris", "model": models,
                         "protocol": {"folds": 3, "seed": 7, "initial": {"method": "all"},
                                      "budget": 0}})


def _seeds(cfg):
    return {(t.model.label, t.fold): task_seeds(t, cfg.protocol)["model_random_state"]
            for t in plan(cfg)}


def test_table_002_pairs_start_from_the_same_network():
    cfg = load_config(ROOT / "configs" / "table_002.yaml", "full")
    by_pair = defaultdict(dict)
    for t in plan(cfg):
        start = t.model.params.get("init_params", "kmeans")
        by_pair[(t.dataset.label, t.fold, t.model.seed_key, start)][t.model.name] = t
    assert by_pair and all(set(p) >= {"prbf", "constrained_prbf"} for p in by_pair.values())
    X, y = make_classification(120, 5, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=0)
    for key, pair in by_pair.items():
        states = {name: task_seeds(t, cfg.protocol)["model_random_state"]
                  for name, t in pair.items()}
        assert len(set(states.values())) == 1, key
    # the same random_state gives the same initial k-means network (max_iter = 0: the start)
    pair = by_pair[("satimage", 0, "M12", "kmeans")]
    starts = []
    for name in ("prbf", "constrained_prbf"):
        t = pair[name]
        params = {**t.model.params, "max_iter": 0}
        m = MODELS[name](n_classes=3, random_state=task_seeds(t, cfg.protocol)
                         ["model_random_state"], **params)
        m.fit(X, y.astype(float))
        starts.append(m.estimator_.params_)
    np.testing.assert_array_equal(starts[0].means, starts[1].means)
    np.testing.assert_array_equal(starts[0].covariances, starts[1].covariances)


def test_a_shared_key_shares_the_seed_and_no_key_keeps_the_label_derivation():
    plain = _seeds(_config([{"name": "prbf", "label": "a"}, {"name": "prbf", "label": "b"}]))
    keyed = _seeds(_config([{"name": "prbf", "label": "a", "seed_key": "a"},
                            {"name": "prbf", "label": "b", "seed_key": "a"}]))
    for f in range(3):
        assert plain[("a", f)] != plain[("b", f)]
        assert keyed[("a", f)] == keyed[("b", f)] == plain[("a", f)]


def test_fold_scope_shares_the_model_seed_across_strategies_and_not_the_strategy_stream():
    models = [{"name": "kernel_svm", "label": "rbf", "seed_key": "svm", "seed_scope": "fold"},
              {"name": "kernel_svm", "label": "rwm", "seed_key": "svm", "seed_scope": "fold"},
              {"name": "kernel_svm", "label": "lap"}]
    cfg = parse_config({"name": "t", "dataset": "iris", "model": models,
                        "strategy": ["random", "uncertainty"],
                        "protocol": {"folds": 3, "seed": 7, "initial": {"method": "all"},
                                     "budget": 0}})
    seeds = {(t.model.label, t.strategy.label, t.fold): task_seeds(t, cfg.protocol)
             for t in plan(cfg)}
    for f in range(3):
        shared = {seeds[(m, s, f)]["model_random_state"]
                  for m in ("rbf", "rwm") for s in ("random", "uncertainty")}
        assert len(shared) == 1                    # one model seed on the fold
        own = {seeds[("lap", s, f)]["model_random_state"] for s in ("random", "uncertainty")}
        assert len(own) == 2 and not own & shared  # the method scope: one per strategy
        streams = {seeds[("rbf", s, f)]["strategy_seed"].generate_state(1)[0]
                   for s in ("random", "uncertainty")}
        assert len(streams) == 2                   # the strategies keep their own streams
    assert len({seeds[("rbf", "random", f)]["model_random_state"] for f in range(3)}) == 3


def test_the_default_seed_scope_keeps_the_task_digest_and_an_unknown_one_is_refused():
    from alprbf.engine.protocol import task_digest
    plain = _config([{"name": "prbf", "label": "a"}])
    scoped = _config([{"name": "prbf", "label": "a", "seed_scope": "method"}])
    assert [task_digest(t, plain.protocol) for t in plan(plain)] == \
        [task_digest(t, scoped.protocol) for t in plan(scoped)]
    assert plain.digest() == scoped.digest()
    with pytest.raises(UserError, match="seed_scope.*valid: method, fold"):
        _config([{"name": "prbf", "seed_scope": "task"}])


def test_an_empty_seed_key_is_refused():
    with pytest.raises(UserError, match="seed_key"):
        _config([{"name": "prbf", "seed_key": ""}])


@pytest.mark.parametrize("run_json", sorted([*ROOT.glob("results/table-*-full/*/run.json"),
                                             *ROOT.glob("results/reading-*/run.json")]),
                         ids=lambda p: p.parent.name)
def test_recorded_configs_keep_their_digest_and_task_seeds(run_json):
    """A config without seed_key hashes and seeds as before the key existed; a record made
    with seed_key stores the seeds it derives.  A config that has since added data sets or
    methods to its record (:meth:`Config.extends`) still derives the recorded seeds of every
    task the record holds."""
    meta = json.loads(run_json.read_text())
    cfg = load_config(ROOT / meta["config_file"], "full")
    now = {t.task_id: {k: v for k, v in task_seeds(t, cfg.protocol).items()
                       if k != "strategy_seed"} for t in plan(cfg)}
    now = json.loads(json.dumps(now))
    if cfg.digest() == meta["config_digest"]:
        assert now == meta["task_seeds"]
        return
    if not cfg.extends(meta["config"], meta["config_digest"]):
        pytest.skip("the config has changed since its record (re-record pending)")
    assert set(meta["task_seeds"]) <= set(now)
    assert {k: now[k] for k in meta["task_seeds"]} == meta["task_seeds"]


@pytest.mark.parametrize("reading", sorted(ROOT.glob("results/reading-*/run.json")),
                         ids=lambda p: p.parent.name)
def test_a_reading_draws_the_seeds_of_its_record_twins(reading):
    """A reading run beside table 003's corrected record (docs/decisions 0312, 0313) is paired
    with it: every task derives the seeds of the record's task of the same id."""
    twin = ROOT / "results" / "table-003-full" / "table_003_corrected" / "run.json"
    ours = json.loads(reading.read_text())["task_seeds"]
    theirs = json.loads(twin.read_text())["task_seeds"]
    assert ours and set(ours) <= set(theirs)
    assert {k: theirs[k] for k in ours} == ours
