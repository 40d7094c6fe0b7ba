"""Health checks: the diagnostics columns, the constant-predictor test (read and inferred),
the per-cell table, the degenerate verdict and ``alprbf check-health`` on a planted cell."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.report import health, reference
from alprbf.store.results import (
    DIAGNOSTIC_COLUMNS,
    checksum_file,
    compare_results,
    read_task,
    task_files,
)

from .conftest import write_config

runner = CliRunner()


def _task(labels, labeled, test, train, pool_classes=None, task_id="t", method="m / s"):
    """Rows of one task: per evaluation the newly queried labels and three accuracies."""
    n = len(labeled)
    df = pd.DataFrame({"task_id": task_id, "dataset": "d", "method": method,
                       "iteration": np.arange(n), "queried_labels": labels,
                       "labeled_accuracy": labeled, "test_accuracy": test,
                       "train_accuracy": train})
    if pool_classes is not None:
        df["n_pred_classes_pool"] = pool_classes
    return df


def test_constant_rows_from_diagnostics():
    t = _task([[0, 1]] * 3, [0.5] * 3, [0.5] * 3, [0.5] * 3, pool_classes=[1, 2, 1])
    const, inferred = health.constant_rows(t)
    assert const.tolist() == [True, False, True] and not inferred


def test_constant_rows_inferred_by_hand():
    # L = {0, 0, 1} then {0, 0, 1, 1}: a constant "0" predictor has labeled accuracy 2/3
    # then 1/2, and equal test and pool accuracy (both the share of class 0)
    t = _task([[0, 0, 1], [1], [0]], [2 / 3, 0.5, 0.9], [0.6, 0.6, 0.8], [0.61, 0.6, 0.81])
    const, inferred = health.constant_rows(t)
    assert inferred
    assert const.tolist() == [True, True, False]       # 0.9 is no class share of 5 labels
    # the same labeled accuracy with test and pool far apart is not a constant predictor
    t2 = _task([[0, 0, 1]], [2 / 3], [0.9], [0.6])
    assert health.constant_rows(t2)[0].tolist() == [False]


def test_task_and_cell_health():
    healthy = _task([[0, 1]] * 8, [1.0] * 8, np.linspace(0.6, 0.95, 8), [1.0] * 8,
                    pool_classes=[2] * 8, task_id="a")
    ends_constant = _task([[0, 1]] * 8, [0.5] * 8, [0.5] * 8, [0.5] * 8,
                          pool_classes=[2] * 7 + [1], task_id="b")
    often_constant = _task([[0, 1]] * 8, [0.5] * 8, np.linspace(0.5, 0.9, 8), [0.5] * 8,
                           pool_classes=[1, 1, 1, 2, 2, 2, 2, 2], task_id="c")
    tasks = health.task_health(pd.concat([healthy, ends_constant, often_constant]))
    assert tasks.set_index("task_id")["degenerate"].to_dict() == {"a": False, "b": True,
                                                                   "c": True}
    assert tasks.set_index("task_id")["final_constant"].to_dict() == {"a": False, "b": True,
                                                                       "c": False}
    cell = health.cell_health(tasks).iloc[0]
    assert (cell["tasks"], cell["degenerate"], cell["final_constant"],
            cell["mostly_constant"]) == (3, 2, 1, 1)
    assert cell["flat"] == 1            # task b: 0.5 -> 0.5
    one = _task([[0, 1]], [1.0], [0.5], [1.0], pool_classes=[2], task_id="d")
    assert health.cell_health(health.task_health(one))["flat"].iat[0] == 0   # no curve


def test_at_chance_flags_a_learner_no_better_than_a_constant_one():
    """Balanced accuracy at most 1/K at the last evaluation, K the classes labeled in any
    task of the data set; a learner that predicts several classes is flagged too."""
    def task(task_id, balanced, labels=([0, 1],) * 3):
        t = _task(list(labels), [1.0] * 3, [0.6, 0.5, 0.43], [0.5] * 3, pool_classes=[2] * 3,
                  task_id=task_id)
        return t.assign(test_balanced_accuracy=balanced)
    rows = pd.concat([task("below", [0.6, 0.55, 0.45]), task("at", [0.6, 0.55, 0.5]),
                      task("above", [0.4, 0.45, 0.51]),
                      task("missing", [0.4, 0.45, np.nan])])
    tasks = health.task_health(rows).set_index("task_id")
    assert tasks["at_chance"].to_dict() == {"above": False, "at": True, "below": True,
                                            "missing": None}
    cell = health.cell_health(tasks.reset_index()).iloc[0]
    assert cell["at_chance"] == 2 and cell["degenerate"] == 0
    # three classes labeled in another task of the data set: 1/K = 1/3, 0.45 is above it
    three = pd.concat([task("below", [0.6, 0.55, 0.45]),
                       task("other", [0.6, 0.6, 0.6], labels=([0, 1], [2], [0]))])
    assert not health.task_health(three).set_index("task_id")["at_chance"]["below"]
    # files without the balanced accuracy are not judged
    old = health.task_health(_task([[0, 1]], [1.0], [0.2], [1.0], pool_classes=[2]))
    assert old["at_chance"].iat[0] is None
    assert health.cell_health(old)["at_chance"].iat[0] is None


def test_grid_edge_read_from_the_last_model_state():
    t = _task([[0, 1]] * 3, [1.0] * 3, [0.9] * 3, [1.0] * 3, pool_classes=[2] * 3)
    t["model_state"] = [json.dumps({"at_grid_edge": ["C"]}), None,
                        json.dumps({"at_grid_edge": []})]
    assert health.task_health(t)["grid_edge"].tolist() == [False]
    t["model_state"] = [json.dumps({"C": 1.0}), None, None]
    assert health.task_health(t)["grid_edge"].tolist() == [None]


def test_degenerate_cells_get_their_own_verdict():
    cells = pd.DataFrame({"our_dataset": ["d", "d", "e"], "our_method": ["m", "n", "m"],
                          "verdict": ["within std", "outside", "not run"],
                          "primary": True, "table": "T", "metric": "error_at_budget",
                          "ref_std": 1.0})
    h = pd.DataFrame({"dataset": ["d", "d", "e"], "method": ["m", "n", "m"],
                      "tasks": [5, 5, 5], "degenerate": [2, 0, 5]})
    out = reference.mark_degenerate(cells, h)
    assert out["verdict"].tolist() == ["degenerate in 2 of 5 tasks", "outside", "not run"]
    assert "1 degenerate" in reference.summary(out)[0]
    assert "0 of 3 cells within" in reference.summary(out)[0]


def test_cells_of_a_model_failing_the_sanity_suite_get_no_verdict(tmp_path):
    path = tmp_path / "sanity.yaml"
    path.write_text("fail:\n  - experiment: exp\n    dataset: [d, f*]\n    method: 'm / *'\n"
                    "    reason: trails its reference\n")
    entries = health.load_sanity_failures(path)
    assert [(e.experiment, e.datasets, e.method) for e in entries] == [
        ("exp", ("d", "f*"), "m / *")]
    cells = pd.DataFrame({"our_dataset": ["d", "d", "e", "fx", "d"],
                          "our_method": ["m / s", "n / s", "m / s", "m / t", "m / s"],
                          "verdict": ["within std", "outside", "outside", "outside", "not run"],
                          "primary": True, "table": "T", "metric": "error_at_budget",
                          "ref_std": 1.0})
    out = reference.mark_sanity(cells, lambda d, m: any(e.matches("exp", d, m)
                                                         for e in entries))
    assert out["verdict"].tolist() == [reference.NO_VERDICT_SANITY, "outside", "outside",
                                       reference.NO_VERDICT_SANITY, "not run"]
    line = reference.summary(out)[0]
    assert "0 of 5 cells within" in line and "2 outside" in line
    assert "2 without a verdict (the model fails the sanity suite)" in line
    # a degenerate cell or one without a value keeps its verdict: it says more
    kept = reference.mark_sanity(cells.assign(verdict=["degenerate in 1 of 5 tasks", "outside",
                                                       "outside", "no value", "not run"]),
                                 lambda d, m: True)
    assert kept["verdict"].tolist() == ["degenerate in 1 of 5 tasks",
                                        reference.NO_VERDICT_SANITY,
                                        reference.NO_VERDICT_SANITY, "no value", "not run"]
    # another experiment's cells are not touched
    other = reference.mark_sanity(cells, lambda d, m: any(e.matches("other", d, m)
                                                           for e in entries))
    assert other["verdict"].tolist() == cells["verdict"].tolist()


def test_a_malformed_sanity_list_is_one_error_naming_the_file(tmp_path):
    path = tmp_path / "sanity.yaml"
    path.write_text("fail:\n  - experiment: exp\n    method: m\n")
    res = runner.invoke(app, ["report", str(tmp_path), "--sanity", str(path)])
    assert res.exit_code == 2
    assert "sanity list" in res.output and "entry 1" in res.output


# --------------------------------------------------------------------------- end to end


def _run(tmp_path, name, models):
    cfg = write_config(tmp_path / f"{name}.yaml", name=name, model=models,
                       strategy=["random"],
                       protocol={"folds": 2, "seed": 7, "budget": 20, "batch_size": 5,
                                 "initial": {"method": "per_class", "size": 2}})
    out = tmp_path / "results" / name
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet", "--jobs", "1"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """iris with a healthy model and a planted degenerate one (an SVC with C = 1e-6 predicts
    one class whatever it is shown)."""
    tmp = tmp_path_factory.mktemp("health")
    out = _run(tmp, "planted", ["gaussian_nb", {"name": "svc", "params": {"C": 1e-6},
                                                "label": "svc_c1e-6"}])
    return tmp, out


def test_new_task_files_carry_the_diagnostics(planted):
    _, out = planted
    for path in task_files(out):
        df = read_task(path)
        assert df[list(DIAGNOSTIC_COLUMNS[:4])].notna().all().all()
        assert df["n_pred_classes_test"].between(1, 3).all()
        assert df["max_pred_share_pool"].between(1 / 3, 1).all()
        assert isinstance(df["model_state"].iat[0], str)          # stored at the first row
        json.loads(df["model_state"].iat[0])
    svc = read_task(next(p for p in task_files(out) if "svc_c1e-6" in p.name))
    assert (svc["n_pred_classes_pool"].iloc[1:] == 1).all()     # constant once unbalanced
    assert (svc["max_pred_share_pool"].iloc[1:] == 1.0).all()


def test_check_health_fails_on_the_planted_cell_and_passes_without_it(planted, tmp_path):
    _, out = planted
    res = runner.invoke(app, ["check-health", str(out)])
    assert res.exit_code == 1, res.output
    bad = [line for line in res.output.splitlines() if line.startswith("DEGENERATE")]
    assert len(bad) == 1 and "svc_c1e-6 / random: 2 of 2 tasks" in bad[0]
    allow = tmp_path / "allow.yaml"
    allow.write_text("allow:\n  - {experiment: planted, dataset: iris, method: 'svc_c1e-6 / *',"
                     " reason: planted on purpose}\n")
    res = runner.invoke(app, ["check-health", str(out), "--allow", str(allow)])
    assert res.exit_code == 0 and "allowed [1]" in res.output, res.output
    healthy = _run(tmp_path, "healthy", ["gaussian_nb"])
    res = runner.invoke(app, ["check-health", str(healthy)])
    assert res.exit_code == 0 and "0 with degenerate tasks" in res.output, res.output


def test_report_has_a_health_table(planted, tmp_path):
    _, out = planted
    res = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    cells = pd.read_csv(tmp_path / "r" / "health.csv")
    row = cells.set_index("method").loc["svc_c1e-6"]
    assert (row["degenerate"], row["tasks"]) == (2, 2)
    assert "## Health checks" in (tmp_path / "r" / "report.md").read_text()


def test_allow_list_names_cells_by_a_list_and_fails_on_stale_entries(planted, tmp_path):
    _, out = planted
    allow = tmp_path / "allow.yaml"
    # a list of data-set patterns: the planted cell (iris) is excused by its own name
    allow.write_text("allow:\n  - {experiment: planted, dataset: [wine, iris], "
                     "method: 'svc_c1e-6 / *', reason: planted on purpose}\n")
    res = runner.invoke(app, ["check-health", str(out), "--allow", str(allow)])
    assert res.exit_code == 1, res.output                   # wine excuses nothing: stale
    stale = [line for line in res.output.splitlines() if line.startswith("STALE")]
    assert stale == ["STALE allow-list entry (excuses no degenerate cell; remove it): "
                     "planted: wine / svc_c1e-6 / *"]
    assert "DEGENERATE" not in res.output
    # an entry for an experiment that was not checked is not stale
    allow.write_text("allow:\n  - {experiment: planted, dataset: [iris], method: 'svc_c1e-6 / *',"
                     " reason: planted}\n  - {experiment: elsewhere, dataset: x, method: y, "
                     "reason: other results}\n")
    res = runner.invoke(app, ["check-health", str(out), "--allow", str(allow)])
    assert res.exit_code == 0 and "0 stale entries" in res.output, res.output


@pytest.mark.parametrize("text", ["allow: [{experiment: x}]\n", "- {experiment: a, dataset: b, "
                                  "method: c, reason: ''}\n", "allow: [unclosed\n",
                                  "- {experiment: a, dataset: [], method: c, reason: r}\n",
                                  "- {experiment: a, dataset: [[b]], method: c, reason: r}\n"])
def test_bad_allow_list_is_one_line_and_exit_2(planted, tmp_path, text):
    _, out = planted
    allow = tmp_path / "allow.yaml"
    allow.write_text(text)
    res = runner.invoke(app, ["check-health", str(out), "--allow", str(allow)])
    assert res.exit_code == 2 and "allow-list" in res.output and "Traceback" not in res.output


def test_records_without_diagnostics_still_compare_equal(planted, tmp_path):
    """A task file written before the diagnostics existed equals a new run of the task."""
    _, out = planted
    legacy = tmp_path / "legacy" / "tasks"
    legacy.mkdir(parents=True)
    path = task_files(out)[0]
    table = pq.read_table(path).drop_columns(list(DIAGNOSTIC_COLUMNS))
    pq.write_table(table, legacy / path.name)
    digest = hashlib.sha256((legacy / path.name).read_bytes()).hexdigest()
    checksum_file(legacy / path.name).write_text(f"{digest}  {path.name}\n")
    assert read_task(legacy / path.name)["model_state"].isna().all()
    assert compare_results(legacy.parent, out, tasks=[path.stem]) == []
