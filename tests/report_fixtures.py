"""Synthetic result files for the report tests (written by alprbf.store.results.write_task, so that
they carry the checksum files the readers verify)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.store import results
from alprbf.store.results import SCHEMA


def invoke_report(*args):
    """``alprbf report ARGS`` through the command line."""
    return CliRunner().invoke(app, ["report", *map(str, args)])


def report_ok(*args):
    """``alprbf report ARGS``, which must succeed."""
    res = invoke_report(*args)
    assert res.exit_code == 0, res.output
    return res


def write_checksum(path: Path) -> None:
    """Record the checksum of a hand-made task file, as the runner would have."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    results.checksum_file(path).write_text(f"{digest}  {path.name}\n")


def curve_rows(experiment, dataset, model, strategy, fold, repetition, accuracies, n0=10,
               batch=2, train_accuracies=None, model_size=None, fit_seconds=0.01,
               eval_seconds=0.005, presplit=None):
    """Rows of one learning curve with the given test accuracies (one per evaluated iteration).

    ``eval_seconds=None`` leaves the evaluation time out (as in task files written before
    alprbf recorded it); ``presplit`` is the component count before the final split.
    """
    rows = []
    task = f"{dataset}-{model}-{strategy}-r{repetition}-f{fold}"
    for it, acc in enumerate(accuracies):
        tr = acc if train_accuracies is None else train_accuracies[it]
        rows.append({
            "experiment": experiment, "dataset": dataset, "model": model, "strategy": strategy,
            "fold": fold, "repetition": repetition, "iteration": it, "n_labeled": n0 + batch * it,
            "test_error": 1.0 - acc, "test_accuracy": acc, "train_accuracy": tr,
            "labeled_accuracy": 1.0, "model_size": model_size, "fit_seconds": fit_seconds,
            "query_seconds": 0.0 if it == 0 else 0.002, "eval_seconds": eval_seconds,
            "n_components_presplit": presplit,
            "queried": [] if it == 0 else [100 * it + j for j in range(batch)],
            "queried_labels": [] if it == 0 else [j % 2 for j in range(batch)],
            "task_id": task,
        })
    return rows


def write_task(exp_dir: Path, rows: list[dict]) -> Path:
    """Write one task file (and its checksum) as the runner does."""
    (exp_dir / "tasks").mkdir(parents=True, exist_ok=True)
    path = exp_dir / "tasks" / f"{rows[0]['task_id']}.parquet"
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    results.write_task(table.to_pandas(), path)
    return path


def write_run_json(exp_dir: Path, name: str, budget: int, methods=None, datasets=None,
                   folds: int = 2) -> None:
    """A minimal ``run.json``; ``methods`` ((model, strategy) labels) and ``datasets`` give
    the config's grid, as the runner records it."""
    config = {"name": name, "protocol": {"folds": folds, "budget": budget}}
    if methods is not None:
        config["methods"] = [[{"name": m, "label": m}, {"name": s, "label": s}]
                             for m, s in methods]
    if datasets is not None:
        config["datasets"] = [{"name": d, "label": d} for d in datasets]
    (exp_dir / "run.json").write_text(json.dumps({"experiment": name, "config": config}))


DATASETS = ("alpha", "beta", "gamma", "delta", "epsilon")


def synthetic_experiment(root: Path, name="demo", datasets=DATASETS,
                         methods=(("svm", "random"), ("svm", "uncertainty"),
                                  ("nb", "uncertainty")),
                         folds=2, n_iter=6, seed=0, eval_seconds=0.005) -> Path:
    """A small experiment: increasing accuracy curves with method-dependent speed (five
    datasets by default, the fewest on which the report runs its significance tests)."""
    rng = np.random.default_rng(seed)
    exp_dir = root / name
    for d_i, d in enumerate(datasets):
        for m_i, (model, strategy) in enumerate(methods):
            for f in range(folds):
                base = 0.55 + 0.05 * d_i
                speed = 0.05 + 0.03 * m_i
                acc = np.minimum(0.99, base + speed * np.arange(n_iter)
                                 + rng.normal(0, 0.005, n_iter))
                write_task(exp_dir, curve_rows(name, d, model, strategy, f, 0, acc.tolist(),
                                               model_size=3 + m_i, eval_seconds=eval_seconds))
    write_run_json(exp_dir, name, budget=2 * (n_iter - 1))
    return exp_dir
