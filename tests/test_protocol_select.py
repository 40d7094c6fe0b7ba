"""A strategy parameter chosen per task by inner cross-validation (``select``; Reitmaier et al.
2016's lambda of 4DS), against the same task run with the chosen value fixed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.engine.config import load_config
from alprbf.engine.protocol import run_task, select_strategy_param
from alprbf.engine.runner import load_datasets, plan, run_experiment
from alprbf.store.results import SELECTED_KEY, TIMING_COLUMNS, task_file

from .conftest import write_config

PROTO = {"folds": 2, "seed": 5, "initial": {"method": "per_class", "size": 2}, "budget": 6,
         "batch_size": 2}
SELECT = {"param": "measure", "values": ["margin", "entropy", "least_confident"], "folds": 3}


def _cfg(tmp_path, strategy, name="c.yaml"):
    return load_config(write_config(tmp_path / name, model="logistic_regression",
                                    strategy=strategy, protocol=PROTO))


def _rows(df):
    df = df.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)
    for col in ("queried", "queried_labels"):
        df[col] = df[col].map(lambda v: tuple(int(x) for x in v))
    return df


def test_the_chosen_value_is_the_best_inner_score_and_the_run_uses_it(tmp_path):
    cfg = _cfg(tmp_path, {"name": "uncertainty", "label": "u", "select": SELECT})
    ds = load_datasets(cfg)["iris"]
    for task in plan(cfg):
        df = run_task(task, ds, cfg.protocol)
        sel = df.attrs["selected"]
        assert sel["param"] == "measure" and set(sel["scores"]) == set(SELECT["values"])
        best = max(sel["scores"].values())
        assert sel["scores"][sel["value"]] == best
        first_best = next(v for v in SELECT["values"] if sel["scores"][v] == best)
        assert sel["value"] == first_best                       # ties: the first listed
        fixed = _cfg(tmp_path, {"name": "uncertainty", "label": "u",
                                "params": {"measure": sel["value"]}}, "f.yaml")
        twin = next(t for t in plan(fixed) if t.task_id == task.task_id)
        pd.testing.assert_frame_equal(_rows(df), _rows(run_task(twin, ds, fixed.protocol)))


def test_selection_is_deterministic_and_recorded_in_the_task_file(tmp_path):
    cfg = _cfg(tmp_path, {"name": "uncertainty", "select": SELECT})
    assert cfg.strategies[0].label == "uncertainty-cv-measure"
    run_experiment(cfg, tmp_path / "a", progress=False)
    run_experiment(cfg, tmp_path / "b", progress=False)
    for task in plan(cfg):
        a, b = (pq.ParquetFile(task_file(tmp_path / d, task.task_id)).schema_arrow.metadata
                for d in "ab")
        assert a[SELECTED_KEY] == b[SELECTED_KEY]
        assert json.loads(a[SELECTED_KEY])["value"] in SELECT["values"]


def test_inner_scores_are_mean_validation_accuracies(tmp_path):
    """One value, one inner fold count: the score is the mean accuracy over the rounds and
    folds (all in [0, 1]); a single value needs no comparison but is still scored."""
    cfg = _cfg(tmp_path, {"name": "uncertainty", "label": "u",
                          "select": {"param": "measure", "values": ["margin"], "folds": 2}})
    task = plan(cfg)[0]
    ds = load_datasets(cfg)["iris"]
    df = run_task(task, ds, cfg.protocol)
    score = df.attrs["selected"]["scores"]["margin"]
    assert 0.0 <= score <= 1.0 and np.isfinite(score)
    assert callable(select_strategy_param)


@pytest.mark.parametrize("select, message", [
    ({"param": "lmbda", "values": [0.1]}, "has no parameter 'lmbda'; valid: measure"),
    ({"param": "measure", "values": []}, "non-empty list"),
    ({"param": "measure", "values": ["margin", "bogus"]}, "measure"),
    ({"param": "measure", "values": ["margin"], "folds": 1}, "must be >= 2"),
    ({"param": "measure", "values": ["margin"], "grid": 3}, "grid"),
])
def test_bad_select_is_one_line(tmp_path, select, message):
    path = write_config(tmp_path / "c.yaml", model="logistic_regression",
                        strategy={"name": "uncertainty", "select": select}, protocol=PROTO)
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_value_scores_the_same_alone_or_beside_others(tmp_path):
    """The shared initial set and first fit (a copy of the fitted model per value) leak no
    state between values: each value's score equals the score it gets when selected alone."""
    cfg = _cfg(tmp_path, {"name": "uncertainty", "label": "u", "select": SELECT})
    task = plan(cfg)[0]
    ds = load_datasets(cfg)["iris"]
    together = run_task(task, ds, cfg.protocol).attrs["selected"]["scores"]
    for value in SELECT["values"]:
        alone_cfg = _cfg(tmp_path, {"name": "uncertainty", "label": "u", "select": {
            **SELECT, "values": [value]}}, f"{value}.yaml")
        alone = run_task(plan(alone_cfg)[0], ds, alone_cfg.protocol).attrs["selected"]
        assert alone["scores"][value] == together[value]
