"""Runner: determinism across --jobs, resume after SIGKILL, dask LocalCluster, metadata."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from alprbf.engine.config import load_config
from alprbf.engine.execution import default_task_threads
from alprbf.engine.runner import run_experiment
from alprbf.errors import UserError
from alprbf.store.results import (
    COLUMNS,
    EXECUTION_KEY,
    KEY_COLUMNS,
    TIMING_COLUMNS,
    read_results,
)

from .conftest import write_config

SORT = [*KEY_COLUMNS, "iteration"]


def _comparable(df: pd.DataFrame) -> pd.DataFrame:
    df = df.drop(columns=list(TIMING_COLUMNS)).sort_values(SORT).reset_index(drop=True)
    for col in ("queried", "queried_labels"):
        df[col] = df[col].map(lambda v: tuple(int(x) for x in v))
    return df


def test_rows_follow_schema_and_protocol(tiny_config, tmp_path):
    cfg = load_config(tiny_config)
    summary = run_experiment(cfg, tmp_path / "r", progress=False)
    assert summary.n_tasks == 1 * 2 * 2 * 2 and summary.n_done == summary.n_tasks
    df = read_results(tmp_path / "r")
    assert tuple(df.columns) == COLUMNS
    # model_state is null where the model's choices did not change (results.SCHEMA)
    assert not df.drop(columns=["model_size", "n_components_presplit", "model_state"]
                   ).isna().any().any()
    for _, curve in df.groupby(list(KEY_COLUMNS)):
        curve = curve.sort_values("iteration")
        # per_class initial set: 2 per class x 3 classes; then batches of 2 up to budget 6
        assert curve.n_labeled.tolist() == [6, 8, 10, 12]
        queried = np.concatenate(curve.queried.to_list())
        assert len(queried) == len(np.unique(queried)) == 12  # no row labeled twice
        np.testing.assert_allclose(curve.test_error + curve.test_accuracy, 1.0)
    # every method starts from the same initial labels on the same fold
    first = df[df.iteration == 0].groupby(["fold"]).queried.apply(
        lambda s: {tuple(sorted(v)) for v in s})
    assert all(len(v) == 1 for v in first)
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["config_digest"] == cfg.digest() and meta["seed"] == 7
    # every task file says how it ran (explains its timing columns)
    for f in (tmp_path / "r" / "tasks").glob("*.parquet"):
        how = json.loads(pq.read_schema(f).metadata[EXECUTION_KEY])
        assert how == {"jobs": 1, "backend": "loky",
                       "task_threads": default_task_threads(1, "loky", None)}
    assert set(meta["task_seeds"]) == set(df.task_id)
    assert meta["datasets"]["iris"]["shape"] == [150, 4]


def test_run_json_names_the_commits_of_the_task_files(tiny_config, tmp_path, monkeypatch):
    """A finished directory resumed at another commit keeps its run.json (nothing was
    computed there); tasks computed at a new commit add it and keep the earlier ones."""
    import alprbf.engine.runner as runner

    cfg = load_config(tiny_config)
    out = tmp_path / "r"
    meta = lambda: json.loads((out / "run.json").read_text())  # noqa: E731
    monkeypatch.setattr(runner, "_git_commit", lambda: "aaa")
    run_experiment(cfg, out, progress=False, only=["*__f0"])
    assert meta()["git_commit"] == "aaa" and "earlier_commits" not in meta()
    before = (out / "run.json").read_bytes()
    monkeypatch.setattr(runner, "_git_commit", lambda: "bbb")
    summary = run_experiment(cfg, out, progress=False, only=["*__f0"])
    assert summary.n_done == 0 and (out / "run.json").read_bytes() == before
    summary = run_experiment(cfg, out, progress=False)           # fold 1 computed at bbb
    assert summary.n_done > 0
    assert meta()["git_commit"] == "bbb" and meta()["earlier_commits"] == ["aaa"]
    monkeypatch.setattr(runner, "_git_commit", lambda: "aaa")
    run_experiment(cfg, out, progress=False, force=True, only=["*__f1"])
    assert meta()["git_commit"] == "aaa" and meta()["earlier_commits"] == ["bbb"]


@pytest.mark.slow
def test_same_config_same_results_jobs1_vs_jobs2(tiny_config, tmp_path):
    cfg = load_config(tiny_config)
    run_experiment(cfg, tmp_path / "a", jobs=1, progress=False)
    run_experiment(cfg, tmp_path / "b", jobs=2, progress=False)
    a, b = _comparable(read_results(tmp_path / "a")), _comparable(read_results(tmp_path / "b"))
    pd.testing.assert_frame_equal(a, b)


def test_evaluate_every_keeps_every_query(tmp_path):
    cfg = load_config(write_config(
        tmp_path / "e.yaml", model="gaussian_nb", strategy="random",
        protocol={"folds": 2, "budget": 7, "batch_size": 1, "evaluate_every": 3,
                  "initial": {"method": "random", "size": 5}}))
    run_experiment(cfg, tmp_path / "r", progress=False)
    df = read_results(tmp_path / "r")
    for _, curve in df.groupby("fold"):
        assert curve.iteration.tolist() == [0, 3, 6, 7]
        assert curve.n_labeled.tolist() == [5, 8, 11, 12]
        assert sum(len(q) for q in curve.queried) == 12


SLOW_CONFIG = dict(
    dataset={"name": "waveform", "params": {"n_samples": 400}},
    model=[{"name": "svc", "params": {"C": 1.0}}, "logistic_regression"],
    strategy=["random", {"name": "uncertainty"}],
    protocol={"folds": 3, "seed": 3, "initial": {"method": "random", "size": 10},
              "budget": 40},
)


@pytest.mark.slow
def test_resume_after_sigkill_matches_uninterrupted_run(tmp_path):
    cfg_path = write_config(tmp_path / "slow.yaml", **SLOW_CONFIG)
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    cmd = [sys.executable, "-m", "alprbf.cli", "run", str(cfg_path), "-q", "--jobs", "1",
           "--out", str(killed)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((killed / "tasks").glob("*.parquet"))) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(list((killed / "tasks").glob("*.parquet")))
    assert 3 <= n_before < 12, "the run must be killed mid-way"
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{n_before} already done" in done.stdout
    run_experiment(load_config(cfg_path), clean, progress=False)
    a, b = _comparable(read_results(killed)), _comparable(read_results(clean))
    assert len(a) == len(b) > 0
    pd.testing.assert_frame_equal(a, b)
    assert not list((killed / "tasks").glob(".*.tmp"))  # no temp file is taken for a result


@pytest.mark.slow
def test_dask_local_cluster_gives_the_loky_results(tiny_config, tmp_path):
    pytest.importorskip("distributed")
    cfg = load_config(tiny_config)
    run_experiment(cfg, tmp_path / "loky", jobs=1, progress=False)
    run_experiment(cfg, tmp_path / "dask", jobs=2, backend="dask", progress=False)
    a = _comparable(read_results(tmp_path / "loky"))
    b = _comparable(read_results(tmp_path / "dask"))
    pd.testing.assert_frame_equal(a, b)


def test_force_reruns_everything(tiny_config, tmp_path):
    cfg = load_config(tiny_config)
    first = run_experiment(cfg, tmp_path / "r", progress=False)
    again = run_experiment(cfg, tmp_path / "r", progress=False)
    assert again.n_skipped == first.n_tasks and again.n_done == 0
    forced = run_experiment(cfg, tmp_path / "r", progress=False, force=True)
    assert forced.n_done == first.n_tasks


def test_seeds_do_not_depend_on_process(tmp_path):
    code = ("from alprbf.engine.seeding import derive_seed, seed_int;"
            "print(seed_int(derive_seed(5, 'folds', 'iris', 0)))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout for h in (1, 2)}
    assert len(outs) == 1 and outs.pop().strip().isdigit()


def test_only_runs_the_matching_tasks_and_a_full_run_fills_in_the_rest(tiny_config, tmp_path):
    cfg = load_config(tiny_config)
    part = run_experiment(cfg, tmp_path / "r", progress=False, only=["*__f0"])
    names = sorted(p.stem for p in (tmp_path / "r" / "tasks").glob("*.parquet"))
    assert part.n_tasks == part.n_done == len(names) == 4
    assert all(n.endswith("__f0") for n in names)
    rest = run_experiment(cfg, tmp_path / "r", progress=False)
    assert rest.n_skipped == 4 and rest.n_done == 4
    full = run_experiment(cfg, tmp_path / "full", progress=False)
    pd.testing.assert_frame_equal(_comparable(read_results(tmp_path / "r")),
                                  _comparable(read_results(tmp_path / "full")))
    with pytest.raises(UserError, match="matches none of the 8 task ids"):
        run_experiment(cfg, tmp_path / "r", progress=False, only=["nothing*"])
    assert full.n_done == 8


def test_default_task_threads_share_the_cpus_between_workers(monkeypatch):
    from alprbf.engine import execution

    monkeypatch.setattr(execution, "cpu_count", lambda: 8)
    assert default_task_threads(1, "loky", None) == 8
    assert default_task_threads(3, "loky", None) == 2
    assert default_task_threads(16, "loky", None) == 1
    assert default_task_threads(2, "dask", None) == 4
    assert default_task_threads(2, "dask", "tcp://host:8786") == 1
