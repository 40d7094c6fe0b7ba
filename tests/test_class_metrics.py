"""Balanced accuracy, macro F1 and log-loss at every evaluation: the functions against
sklearn's, the columns in new task files, older files read with nulls and not compared."""

from __future__ import annotations

import dataclasses
import hashlib
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score, log_loss

from alprbf.engine.checkpoint import Checkpoint
from alprbf.engine.config import load_config
from alprbf.engine.protocol import (
    LOG_LOSS_CLIP,
    _test_log_loss,
    class_scores,
    clipped_log_loss,
    run_task,
)
from alprbf.engine.runner import load_datasets, plan, run_experiment
from alprbf.store.results import (
    DIAGNOSTIC_COLUMNS,
    METRIC_COLUMNS,
    TIMING_COLUMNS,
    checksum_file,
    compare_results,
    read_results,
    read_task,
    task_files,
    write_task,
)

from .conftest import write_config


@pytest.mark.parametrize("seed", range(6))
def test_class_scores_equal_sklearn(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    y = rng.integers(0, k, size=int(rng.integers(1, 40)))
    pred = rng.integers(0, k + 1, size=len(y)) % k   # may predict classes absent from y
    got = class_scores(pred, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # sklearn warns on classes absent from y
        ba = balanced_accuracy_score(y, pred)
        f1 = f1_score(y, pred, average="macro", zero_division=0)
    assert got["test_balanced_accuracy"] == pytest.approx(ba, abs=1e-12)
    assert got["test_macro_f1"] == pytest.approx(f1, abs=1e-12)


def test_class_scores_hand_worked_and_empty():
    # y = [0, 0, 1, 1], pred = [0, 1, 1, 1]: recalls 1/2, 1 -> 0.75; F1: 2/3, 4/5 -> 11/15
    got = class_scores(np.array([0, 1, 1, 1]), np.array([0, 0, 1, 1]))
    assert got == pytest.approx({"test_balanced_accuracy": 0.75, "test_macro_f1": 11 / 15})
    assert class_scores(np.array([], int), np.array([], int)) == {
        "test_balanced_accuracy": 0.0, "test_macro_f1": 0.0}


def test_log_loss_equals_sklearn_and_stays_finite():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4), size=30)
    y = rng.integers(0, 4, size=30)
    assert clipped_log_loss(p, y) == pytest.approx(log_loss(y, p, labels=range(4)), rel=1e-12)
    p[0] = [0.0, 0.0, 0.0, 1.0]
    y[0] = 0                                     # a certain wrong answer: clipped, finite
    assert np.isfinite(clipped_log_loss(p, y))
    assert clipped_log_loss(p, y) <= -np.log(LOG_LOSS_CLIP)
    assert clipped_log_loss(np.full((2, 2), np.nan), np.array([0, 1])) is None
    assert clipped_log_loss(np.empty((0, 3)), np.array([], int)) is None


def test_new_task_files_hold_the_metrics_at_every_evaluation(tmp_path):
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    out = tmp_path / "r"
    run_experiment(cfg, out, progress=False, only=["*__r0__f0"])
    df = read_results(out)
    for c in METRIC_COLUMNS:
        assert df[c].notna().all() and np.isfinite(df[c].astype(float)).all()
    assert ((df["test_balanced_accuracy"] >= 0) & (df["test_balanced_accuracy"] <= 1)).all()
    assert (df["test_log_loss"] >= 0).all()
    # balanced accuracy of a balanced test fold is close to the accuracy, never further
    # than the largest class-share difference allows; here iris' folds are stratified
    assert np.allclose(df["test_balanced_accuracy"], df["test_accuracy"], atol=0.1)


def test_a_model_without_probabilities_gets_a_null_log_loss():
    def none():
        raise NotImplementedError

    def sklearn_svc_without_probability():
        raise AttributeError("predict_proba is not available when probability=False")

    y = np.array([0, 1])
    assert _test_log_loss(none, y) is None
    assert _test_log_loss(sklearn_svc_without_probability, y) is None
    assert _test_log_loss(lambda: np.array([[0.5, 0.5], [0.5, 0.5]]), y) == pytest.approx(
        np.log(2))


def test_records_without_metrics_still_compare_equal(tmp_path):
    """A task file written before the metric columns existed (and before the diagnostics)
    reads them as nulls and compares equal to a new run of the same task."""
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    new = tmp_path / "new"
    run_experiment(cfg, new, progress=False, only=["*__r0__f0"])
    legacy = tmp_path / "legacy" / "tasks"
    legacy.mkdir(parents=True)
    for path in task_files(new):
        table = pq.read_table(path).drop_columns([*METRIC_COLUMNS, *DIAGNOSTIC_COLUMNS])
        pq.write_table(table, legacy / path.name)
        digest = hashlib.sha256((legacy / path.name).read_bytes()).hexdigest()
        checksum_file(legacy / path.name).write_text(f"{digest}  {path.name}\n")
        assert read_task(legacy / path.name)[list(METRIC_COLUMNS)].isna().all().all()
    assert compare_results(legacy.parent, new) == []


def test_a_metric_difference_between_two_new_files_is_found(tmp_path):
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    a, b = tmp_path / "a", tmp_path / "b"
    run_experiment(cfg, a, progress=False, only=["*__r0__f0"])
    run_experiment(cfg, b, progress=False, only=["*__r0__f0"])
    path = task_files(b)[0]
    df = read_task(path)
    df.loc[0, "test_macro_f1"] = df.loc[0, "test_macro_f1"] + 0.01
    write_task(df, path)
    [diff] = compare_results(a, b)
    assert "test_macro_f1" in diff.what


def test_a_task_resumed_from_a_checkpoint_without_the_metrics_writes_nulls(tmp_path):
    """A checkpoint saved by an alprbf before the metric columns holds rows without them:
    the resumed task finishes, those rows read null (never NaN), the later rows have values,
    and every other column equals the uninterrupted run's."""
    cfg = load_config(write_config(tmp_path / "tiny.yaml", strategy=["random"],
                                   model=["gaussian_nb"]))
    task = plan(cfg)[0]
    ds = load_datasets(cfg)[task.dataset.label]
    ref = run_task(task, ds, cfg.protocol)
    ck = Checkpoint(tmp_path / "c.pkl", "k", every_seconds=0.0)

    def stop(n, calls=[]):   # noqa: B006 - counts the calls of this one run
        calls.append(n)
        if len(calls) == 2:
            raise KeyError("stop")

    with pytest.raises(KeyError):
        run_task(task, ds, cfg.protocol, on_query=stop, checkpoint=ck)
    state = ck.load()
    old_rows = [{k: v for k, v in r.items() if k not in METRIC_COLUMNS} for r in state.rows]
    ck.save(dataclasses.replace(state, rows=old_rows))
    res = run_task(task, ds, cfg.protocol, checkpoint=ck)
    path = tmp_path / "t.parquet"
    write_task(res, path)
    back = read_task(path)
    n_old = len(old_rows)
    assert back[list(METRIC_COLUMNS)].iloc[:n_old].isna().all().all()
    assert back[list(METRIC_COLUMNS)].iloc[n_old:].notna().all().all()
    assert pq.read_table(path).column("test_macro_f1").null_count == n_old
    keep = [c for c in ref.columns if c not in (*METRIC_COLUMNS, *TIMING_COLUMNS)]
    assert back[keep].astype(str).equals(ref[keep].astype(str))
