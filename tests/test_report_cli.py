"""``alprbf report`` through its command line (issue 17 items 3, 5, 9 and 12): statistics that
refuse what they cannot say, the evaluation time in the costs, output directories that cannot
be written, and several experiments of one name."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from alprbf.store import results
from tests.report_fixtures import (
    curve_rows,
    invoke_report,
    report_ok,
    synthetic_experiment,
    write_checksum,
    write_run_json,
    write_task,
)


def _one_line_error(res, *fragments: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


# --------------------------------------------------------------------------- 3. statistics


@pytest.mark.slow
def test_two_methods_get_wilcoxon_not_friedman(tmp_path):
    exp = synthetic_experiment(tmp_path, methods=(("svm", "random"), ("nb", "margin")))
    report_ok(exp)
    out = exp / "report"
    text = (out / "rp_stats.md").read_text()
    assert "Wilcoxon signed-rank" in text
    assert "Friedman rejects" not in text and "Iman-Davenport" not in text
    assert not re.search(r"\binf\b", text)
    p = pd.read_csv(out / "rp_stats.csv").set_index("statistic").loc["p-value", "value"]
    assert 0 < float(p) <= 1
    assert not (out / "cd_diagram.png").exists() and not (out / "nemenyi.md").exists()
    assert "Two methods: Wilcoxon signed-rank test" in (out / "report.md").read_text()


@pytest.mark.slow
def test_too_few_datasets_skip_the_tests_and_the_cd_diagram(tmp_path):
    exp = synthetic_experiment(tmp_path, datasets=("a", "b"))
    report_ok(exp)
    out = exp / "report"
    assert not (out / "cd_diagram.png").exists()
    text = (out / "rp_stats.md").read_text()
    assert "skipped: needs at least 5 datasets" in text and "found 2" in text
    assert "rejects" not in text


def test_perfect_agreement_prints_no_infinity_and_no_zero_p(tmp_path):
    exp = tmp_path / "agree"
    for d in "abcdef":
        for m_i, m in enumerate(("m1", "m2", "m3")):
            for f in range(2):
                write_task(exp, curve_rows("agree", d, m, "random", f, 0,
                                           [0.5, 0.6 + 0.1 * m_i]))
    report_ok(exp, "--no-figures")
    text = (exp / "report" / "rp_stats.md").read_text()
    assert "n/a (every dataset ranks the methods alike)" in text
    assert not re.search(r"\binf\b", text)
    for p in re.findall(r"p-value \| ([^|]+) \|", text):
        assert float(p) > 0, text


# ------------------------------------------------------------------------------ 5. costs


def _write_old_task(exp: Path, rows: list[dict]) -> None:
    """A task file as alprbf wrote it before eval_seconds and n_components_presplit existed."""
    path = results.task_file(exp, rows[0]["task_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    old = pa.schema([f for f in results.SCHEMA if f.name not in results.OPTIONAL_COLUMNS])
    pq.write_table(pa.Table.from_pylist(rows, schema=old), path)
    write_checksum(path)


def test_cost_counts_the_evaluation_and_tolerates_older_files(tmp_path):
    exp = tmp_path / "cost"
    for f in range(2):
        write_task(exp, curve_rows("cost", "d", "new", "random", f, 0, [0.5, 0.6, 0.7],
                                   fit_seconds=1.0, eval_seconds=0.5))
        _write_old_task(exp, curve_rows("cost", "d", "old", "random", f, 0, [0.5, 0.6, 0.7],
                                        fit_seconds=1.0))
    report_ok(exp)
    out = exp / "report"
    cost = pd.read_csv(out / "cost.csv").set_index("method")
    # 3 rows of 1 s fit + 0.5 s evaluation, 2 queries of 0.002 s
    assert cost.loc["new", "eval_seconds_per_query"] == pytest.approx(0.5)
    assert cost.loc["new", "total_time_s"] == pytest.approx(3 * 1.5 + 2 * 0.002)
    assert cost.loc["new", "train_time_s"] == pytest.approx(3.0)
    assert cost.loc["old", "eval_seconds_per_query"] == 0.0
    assert cost.loc["old", "total_time_s"] == pytest.approx(3.0 + 2 * 0.002)
    md = (out / "cost.md").read_text()
    assert "eval s / iteration" in md and "total s / fold" in md
    assert "2 of 4 task file(s) record no evaluation time" in md
    assert "size before split" not in md  # no model records it


def test_run_cost_sums_the_tasks_and_schedules_them(tmp_path):
    # 4 tasks of 3 rows: 3 x (1 s fit + 0.5 s evaluation) + 2 queries of 0.002 s = 4.504 s
    # each, and one task of 3 rows of 10 s fit: 30.004 s
    exp = tmp_path / "runcost"
    for f in range(4):
        write_task(exp, curve_rows("runcost", "d", "a", "random", f, 0, [0.5, 0.6, 0.7],
                                   fit_seconds=1.0, eval_seconds=0.5))
    write_task(exp, curve_rows("runcost", "d", "b", "random", 0, 0, [0.5, 0.6, 0.7],
                               fit_seconds=10.0, eval_seconds=0.0))
    report_ok(exp)
    cost = pd.read_csv(exp / "report" / "run_cost.csv").iloc[0]
    short, long_ = 4.504 / 3600, 30.004 / 3600
    assert cost["tasks"] == 5
    assert cost["task_hours"] == pytest.approx(4 * short + long_)
    assert cost["longest_h"] == pytest.approx(long_)
    assert cost["wall_h_1"] == pytest.approx(4 * short + long_)
    assert cost["wall_h_2"] == pytest.approx(long_)      # the long task alone on one worker
    assert cost["wall_h_16"] == pytest.approx(long_)
    md = (exp / "report" / "run_cost.md").read_text()
    assert "| 5 |" in md and "30 s" in md and "wall on 2 workers" in md


# ---------------------------------------------------------------------- 9. output directory


@pytest.fixture
def read_only(monkeypatch):
    """Make directories read-only; root ignores permission bits, so there the refusal the
    operating system would give is simulated at the directory's creation and first write."""
    made: list[Path] = []

    def lock(path: Path) -> Path:
        path.chmod(stat.S_IRUSR | stat.S_IXUSR)
        made.append(path)
        return path

    if os.geteuid() == 0:
        real_mkdir, real_ntf = Path.mkdir, __import__("tempfile").NamedTemporaryFile

        def denied(p) -> bool:
            return any(Path(p).resolve().is_relative_to(m.resolve()) for m in made)

        def mkdir(self, *a, **k):
            if denied(self) and not self.exists():
                raise PermissionError(13, "Permission denied", str(self))
            return real_mkdir(self, *a, **k)

        def ntf(*a, dir=None, **k):
            if dir is not None and denied(dir):
                raise PermissionError(13, "Permission denied", str(dir))
            return real_ntf(*a, dir=dir, **k)

        monkeypatch.setattr(Path, "mkdir", mkdir)
        monkeypatch.setattr("tempfile.NamedTemporaryFile", ntf)
    yield lock
    for p in made:
        p.chmod(stat.S_IRWXU)


def test_read_only_results_without_out_is_one_line(tmp_path, read_only):
    exp = synthetic_experiment(tmp_path)
    read_only(exp)
    res = invoke_report(exp)
    _one_line_error(res, f"cannot write the report to {exp / 'report'}", "pass --out DIR")
    assert "Traceback" not in res.output


def test_out_under_a_regular_file_is_one_line(tmp_path):
    exp = synthetic_experiment(tmp_path)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    _one_line_error(invoke_report(exp, "--out", blocker / "sub"), "cannot write the report to",
                    "choose another --out")
    _one_line_error(invoke_report(exp, "--out", blocker), "it is a file, not a directory")


def test_out_inside_a_read_only_directory_is_one_line(tmp_path, read_only):
    exp = synthetic_experiment(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    read_only(locked)
    _one_line_error(invoke_report(exp, "--out", locked / "report"),
                    f"cannot write the report to {locked / 'report'}", "choose another --out")
    _one_line_error(invoke_report(exp, "--out", locked), f"cannot write the report to {locked}")


# ------------------------------------------------------------------ 12. several experiments


@pytest.mark.slow
def test_experiments_sharing_a_name_get_distinct_reports(tmp_path):
    root = tmp_path / "results"
    for sub, datasets in (("a", ("x", "y")), ("b", ("p", "q", "r"))):
        synthetic_experiment(root / sub, name="table_000", datasets=datasets)
    synthetic_experiment(root, name="other")
    report_ok(root, "--no-figures")
    out = root / "report"
    a = pd.read_csv(out / "a__table_000" / "error_at_budget.csv")
    b = pd.read_csv(out / "b__table_000" / "error_at_budget.csv")
    assert set(a["dataset"]) == {"x", "y"} and set(b["dataset"]) == {"p", "q", "r"}
    assert (out / "other" / "report.md").exists()
    index = (out / "report.md").read_text()
    assert "(a__table_000/report.md)" in index and "(b__table_000/report.md)" in index


def test_a_directory_mixing_two_configs_is_refused_in_one_line(tmp_path):
    exp = tmp_path / "mixed"
    rows = curve_rows("mixed", "d", "m", "random", 0, 0, [0.5, 0.6])
    path = results.task_file(exp, rows[0]["task_id"])
    path.parent.mkdir(parents=True)
    results.write_task(pa.Table.from_pylist(rows, schema=results.SCHEMA).to_pandas(), path,
                       config_digest="aaaa")
    (exp / "run.json").write_text(json.dumps({"experiment": "mixed", "config_digest": "bbbb"}))
    _one_line_error(invoke_report(exp), "mixes the results of two configs")
    write_run_json(exp, "mixed", budget=2)  # a run.json without a digest: nothing to compare
    report_ok(exp)
