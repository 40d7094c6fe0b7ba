"""Health checks: does a recorded learner learn?

A reproduction that records a constant one-class classifier has not run the paper's method,
whatever its number says.  This module reads task files only and answers, per task and per
cell (data set x method):

* **constant predictor** at an evaluation: the model predicts one class on every row of the
  training part.  New task files say so directly (``n_pred_classes_pool == 1``, the
  diagnostics columns of :data:`alprbf.store.results.DIAGNOSTIC_COLUMNS`).  Files written before
  the diagnostics existed are read by inference: a constant predictor of class ``c`` has
  labeled accuracy exactly equal to the share of ``c`` among the labeled rows (known from
  ``queried_labels``), and test and training-part accuracy both equal to ``c``'s share of
  those rows, so nearly equal to each other under stratified folds (within
  :data:`INFERRED_TEST_POOL_GAP`).  On the record this inference finds exactly the
  constant tasks that a check against the data finds (Reitmaier et al. 2016: RBF-US 13, RBF-4DS 19,
  ...).
* **degenerate task**: constant at its last evaluation, or constant at more than
  :data:`CONSTANT_SHARE` of its evaluations;
* **flat curve**: the test accuracy gains no more from the first to the last evaluation than
  the fold noise (the std of the cell's final test accuracies over its tasks); a task with one
  evaluation (no queries) has no curve and is never flat;
* **grid edge**: the model reports (``model_state``, key ``at_grid_edge``) a tuned
  hyper-parameter at an end of its grid at the last evaluation;
* **at chance**: the test balanced accuracy at the last evaluation is at most ``1/K`` (``K``
  the classes labeled in any task of the data set), what any constant predictor scores: a
  learner no better than a constant one, constant or not.  Files without the balanced
  accuracy (``test_balanced_accuracy``) are not judged.

Thresholds are fixed here, before any fix they judge, and documented in
``docs/health.md``.  Only degenerate tasks change a verdict ("degenerate in k of n tasks");
flat curves and grid edges are shown as flags (verdict text:
:func:`alprbf.report.reference.health_verdict`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..errors import UserError
from .io import METHOD_SEP, find_experiments, load_experiment

#: A task constant at more than this share of its evaluations is degenerate.
CONSTANT_SHARE = 0.25

#: Legacy inference: largest |test accuracy - training-part accuracy| of a constant predictor.
INFERRED_TEST_POOL_GAP = 0.05

#: Tolerance of "labeled accuracy equals a class share" (both are ratios of small integers).
_SHARE_TOL = 1e-12

#: Rounding tolerance of "balanced accuracy at most 1/K".
_CHANCE_TOL = 1e-9

#: Columns of :func:`task_health`.
TASK_COLUMNS = ("task_id", "dataset", "method", "n_evaluations", "final_constant",
                "constant_share", "degenerate", "first_accuracy", "last_accuracy",
                "grid_edge", "at_chance", "inferred")


def constant_rows(task: pd.DataFrame) -> tuple[np.ndarray, bool]:
    """Per evaluated row of one task (in iteration order): is the model a constant predictor?

    Returns the boolean array and whether it was inferred (a file without diagnostics).
    """
    pool = task["n_pred_classes_pool"] if "n_pred_classes_pool" in task else None
    if pool is not None and pool.notna().all():
        return pool.to_numpy(dtype=float) <= 1, False
    labels = [np.asarray(x if x is not None else [], np.int64) for x in task["queried_labels"]]
    flat = np.concatenate([np.zeros(0, np.int64), *labels])
    n_classes = int(flat.max()) + 1 if len(flat) else 1
    counts = np.zeros((len(task), n_classes))
    np.add.at(counts, (np.repeat(np.arange(len(task)), [len(x) for x in labels]), flat), 1.0)
    counts = np.cumsum(counts, axis=0)          # labels of L when each row's model was fitted
    n = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = counts / n
    lab_acc, test_acc, train_acc = (task[c].to_numpy(dtype=float) for c in (
        "labeled_accuracy", "test_accuracy", "train_accuracy"))
    is_share = np.any(np.abs(shares - lab_acc[:, None]) < _SHARE_TOL, axis=1)
    out = is_share & (np.abs(test_acc - train_acc) <= INFERRED_TEST_POOL_GAP) & (n[:, 0] > 0)
    return out, True


def _grid_edge(task: pd.DataFrame) -> bool | None:
    """Whether the last recorded model state names a tuned parameter at its grid's edge
    (None when the model records no tuning)."""
    if "model_state" not in task:
        return None
    states = [s for s in task["model_state"] if isinstance(s, str) and s]
    if not states:
        return None
    edge = json.loads(states[-1]).get("at_grid_edge")
    return None if edge is None else bool(edge)


def _at_chance(task: pd.DataFrame, n_classes: int) -> bool | None:
    """Whether the last evaluation's test balanced accuracy is at most ``1/n_classes``
    (None when the file has no balanced accuracy there)."""
    if "test_balanced_accuracy" not in task:
        return None
    last = task["test_balanced_accuracy"].iat[-1]
    if last is None or not np.isfinite(last):
        return None
    return bool(last <= 1.0 / n_classes + _CHANCE_TOL)


def _classes_per_dataset(rows: pd.DataFrame) -> dict[str, int]:
    """The number of classes labeled in any task of each data set of ``rows``."""
    out = {}
    for ds, g in rows.groupby("dataset", sort=False):
        labels = [np.asarray(x, np.int64) for x in g["queried_labels"] if x is not None]
        out[ds] = len(np.unique(np.concatenate([np.zeros(0, np.int64), *labels])))
    return out


def task_health(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per task of ``rows`` (task-file rows with a ``method`` column): the columns of
    :data:`TASK_COLUMNS`."""
    out = []
    n_classes = _classes_per_dataset(rows) if len(rows) else {}
    for task_id, task in rows.groupby("task_id", sort=True):
        task = task.sort_values("iteration")
        const, inferred = constant_rows(task)
        share = float(const.mean()) if len(const) else 0.0
        final = bool(const[-1]) if len(const) else False
        acc = task["test_accuracy"].to_numpy(dtype=float)
        out.append({
            "task_id": task_id, "dataset": task["dataset"].iat[0],
            "method": task["method"].iat[0], "n_evaluations": len(task),
            "final_constant": final, "constant_share": share,
            "degenerate": final or share > CONSTANT_SHARE,
            "first_accuracy": acc[0], "last_accuracy": acc[-1],
            "grid_edge": _grid_edge(task),
            "at_chance": _at_chance(task, max(n_classes[task["dataset"].iat[0]], 1)),
            "inferred": inferred})
    return pd.DataFrame(out, columns=list(TASK_COLUMNS))


def cell_health(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method): tasks, degenerate tasks (constant at the end, constant for more
    than :data:`CONSTANT_SHARE` of the curve), flat curves, grid-edge tasks, tasks at chance
    (None when no task has a balanced accuracy), and whether the constant predictors were
    inferred (files without diagnostics)."""
    rows = []
    for (ds, method), g in tasks.groupby(["dataset", "method"], sort=True):
        noise = float(np.std(g["last_accuracy"], ddof=1)) if len(g) > 1 else 0.0
        gain = g["last_accuracy"] - g["first_accuracy"]
        edge = g["grid_edge"].dropna()
        chance = g["at_chance"].dropna()
        rows.append({
            "dataset": ds, "method": method, "tasks": len(g),
            "final_constant": int(g["final_constant"].sum()),
            "mostly_constant": int((g["constant_share"] > CONSTANT_SHARE).sum()),
            "degenerate": int(g["degenerate"].sum()),
            "flat": int(((gain <= noise) & (g["n_evaluations"] > 1)).sum()),
            "grid_edge": int(edge.astype(bool).sum()) if len(edge) else None,
            "at_chance": int(chance.astype(bool).sum()) if len(chance) else None,
            "inferred": bool(g["inferred"].any())})
    return pd.DataFrame(rows, columns=["dataset", "method", "tasks", "final_constant",
                                       "mostly_constant", "degenerate", "flat", "grid_edge",
                                       "at_chance", "inferred"])


# --------------------------------------------------------------------------- allow-list


@dataclass(frozen=True)
class Allowed:
    """A degenerate cell kept on purpose (or until a named fix lands), with its reason.

    ``datasets`` holds one or more shell patterns (a cell matches if any does), so that an
    entry can name exactly the cells it excuses rather than every data set of a method.
    """

    experiment: str
    datasets: tuple[str, ...]
    method: str
    reason: str

    def matches(self, experiment: str, dataset: str, method: str) -> bool:
        return (fnmatchcase(experiment, self.experiment)
                and any(fnmatchcase(dataset, p) for p in self.datasets)
                and fnmatchcase(method, self.method))


def load_allow_list(path: str | Path) -> list[Allowed]:
    """The entries of an allow-list YAML file: a list of mappings with ``experiment``,
    ``dataset`` (a shell pattern or a list of them), ``method`` (shell pattern) and a
    non-empty ``reason``."""
    return load_cell_list(path, "allow", "health allow-list")


def load_sanity_failures(path: str | Path) -> list[Allowed]:
    """The cells whose model fails the sanity suite (docs/sanity.md), from a YAML file with
    the allow-list's entry format under the key ``fail``: their published values get no
    verdict in a report (``alprbf report --sanity``)."""
    return load_cell_list(path, "fail", "sanity list")


def load_cell_list(path: str | Path, key: str, what: str) -> list[Allowed]:
    """The entries under ``key`` of a YAML file naming cells (``experiment``, ``dataset``,
    ``method``, ``reason``: :func:`load_allow_list`); ``what`` names the file in errors."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or []
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read the {what} {path}: {exc}") from None
    entries = raw.get(key, []) if isinstance(raw, dict) else raw
    keys = ("experiment", "dataset", "method", "reason")
    out = []
    for i, e in enumerate(entries if isinstance(entries, list) else [None]):
        datasets = e.get("dataset") if isinstance(e, dict) else None
        datasets = datasets if isinstance(datasets, list) else [datasets]
        if (not isinstance(e, dict) or set(e) != set(keys) or not str(e["reason"]).strip()
                or not datasets or any(d is None or isinstance(d, (list, dict))
                                       for d in datasets)):
            raise UserError(f"{what} {path}: entry {i + 1} must have exactly the "
                            f"keys {', '.join(keys)} (dataset a pattern or a list of them, "
                            "reason non-empty)")
        out.append(Allowed(str(e["experiment"]), tuple(str(d) for d in datasets),
                           str(e["method"]), str(e["reason"])))
    return out


def stale_entries(cells: pd.DataFrame, allowed: Iterable[Allowed]) -> list[str]:
    """The allow-list's data-set patterns that excuse no degenerate cell of ``cells``.

    ``cells`` are :func:`check_health` rows.  Only entries whose experiment pattern matches an
    experiment present in ``cells`` are judged (an entry for results not checked is not
    stale).  A stale pattern is a fixed cell whose excuse outlived it: the allow-list is meant
    to shrink as fixes land.
    """
    bad = cells[cells["degenerate"] > 0]
    experiments = set(cells["experiment"])
    out = []
    for a in allowed:
        if not any(fnmatchcase(e, a.experiment) for e in experiments):
            continue
        for pattern in a.datasets:
            one = Allowed(a.experiment, (pattern,), a.method, a.reason)
            if not any(one.matches(r.experiment, r.dataset, r.method)
                       for r in bad.itertuples(index=False)):
                out.append(f"{a.experiment}: {pattern} / {a.method}")
    return out


# --------------------------------------------------------------------------- check-health


def check_health(results_root: str | Path, allowed: Iterable[Allowed] = ()
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The health of every cell of every experiment below ``results_root``.

    Returns
    -------
    cells : DataFrame
        :func:`cell_health` rows (methods as ``"model / strategy"``, whatever the report's
        display labels) with ``experiment`` and ``allowed`` (the allow-list reason,
        "" when none) columns.  Every method counts, the papers' and the baselines': a
        baseline that does not learn makes a comparison as hollow as a paper method that
        does not.
    tasks : DataFrame
        The degenerate tasks and the tasks at chance (:func:`task_health` rows) with an
        ``experiment`` column.
    """
    allowed = list(allowed)
    all_cells, all_tasks = [], []
    for exp in find_experiments(results_root):
        rows = load_experiment(exp)
        if rows.empty:
            continue
        tasks = task_health(rows.assign(method=rows["model"] + METHOD_SEP + rows["strategy"]))
        cells = cell_health(tasks)
        reasons = [next((a.reason for a in allowed
                         if a.matches(exp.name, r.dataset, r.method)), "")
                   for r in cells.itertuples(index=False)]
        all_cells.append(cells.assign(experiment=exp.name, allowed=reasons))
        flagged = tasks["degenerate"] | (tasks["at_chance"] == True)   # noqa: E712 (None)
        all_tasks.append(tasks[flagged].assign(experiment=exp.name))
    return (pd.concat(all_cells, ignore_index=True),
            pd.concat(all_tasks, ignore_index=True))
