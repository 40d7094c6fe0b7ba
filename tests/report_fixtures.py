"""Synthetic result files for the report tests (written with pyarrow from alprbf.results)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from alprbf import results
from alprbf.results import SCHEMA


def curve_rows(experiment, dataset, model, strategy, fold, repetition, accuracies, n0=10,
               batch=2, train_accuracies=None, model_size=None, fit_seconds=0.01):
    """Rows of one learning curve with the given test accuracies (one per evaluated iteration)."""
    rows = []
    task = f"{dataset}-{model}-{strategy}-r{repetition}-f{fold}"
    for it, acc in enumerate(accuracies):
        tr = acc if train_accuracies is None else train_accuracies[it]
        rows.append({
            "experiment": experiment, "dataset": dataset, "model": model, "strategy": strategy,
            "fold": fold, "repetition": repetition, "iteration": it, "n_labeled": n0 + batch * it,
            "test_error": 1.0 - acc, "test_accuracy": acc, "train_accuracy": tr,
            "labeled_accuracy": 1.0, "model_size": model_size, "fit_seconds": fit_seconds,
            "query_seconds": 0.0 if it == 0 else 0.002,
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


def write_run_json(exp_dir: Path, name: str, budget: int) -> None:
    meta = {"experiment": name,
            "config": {"name": name, "protocol": {"folds": 2, "budget": budget}}}
    (exp_dir / "run.json").write_text(json.dumps(meta))


def synthetic_experiment(root: Path, name="demo", datasets=("alpha", "beta", "gamma"),
                         methods=(("svm", "random"), ("svm", "uncertainty"),
                                  ("nb", "uncertainty")),
                         folds=2, n_iter=6, seed=0) -> Path:
    """A small experiment: increasing accuracy curves with method-dependent speed."""
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
                                               model_size=3 + m_i))
    write_run_json(exp_dir, name, budget=2 * (n_iter - 1))
    return exp_dir
