"""Failure isolation: a task that raises or runs past its time limit is recorded, the others
go on, the run exits 3, a rerun retries the failed tasks only; status and report show them."""

from __future__ import annotations

import json
import threading
import time

import pytest
from typer.testing import CliRunner

from alprbf.cli import FAILED_TASKS_EXIT, app
from alprbf.engine import execution
from alprbf.engine.config import load_config
from alprbf.engine.execution import TaskFailure
from alprbf.engine.protocol import TaskTimeout, run_task
from alprbf.engine.runner import load_datasets, plan, run_experiment
from alprbf.engine.status import run_status
from alprbf.report import build_report
from alprbf.store.results import compare_results, failure_file, read_failures, task_file, task_files

from .conftest import write_config

#: The issue's example: an SVC with a precomputed kernel passes validate and fails at fit.
FAILING_MODELS = ["gaussian_nb", {"name": "svc", "params": {"kernel": "precomputed"}}]


def _failing_config(tmp_path, models=FAILING_MODELS):
    return write_config(tmp_path / "failing.yaml", dataset={"name": "wine"}, model=models,
                        strategy=["random"])


def _ids(out, model):
    return sorted(p.stem for p in task_files(out) if f"__{model}__" in p.stem)


def test_a_failing_task_is_recorded_and_the_other_tasks_finish(tmp_path):
    cfg = load_config(_failing_config(tmp_path))
    out = tmp_path / "r"
    summary = run_experiment(cfg, out, progress=False)
    assert summary.n_done == 2 and len(summary.failures) == 2
    assert _ids(out, "gaussian_nb") == ["wine__gaussian_nb__random__r0__f0",
                                        "wine__gaussian_nb__random__r0__f1"]
    assert not _ids(out, "svc")
    for rec in read_failures(out):
        assert rec["model"] == "svc" and rec["kind"] == "error" and rec["error"] == "ValueError"
        assert "precomputed" in rec["message"].lower() or "square" in rec["message"]
        log = (out / rec["log"]).read_text()
        assert log.startswith("Traceback") and "ValueError" in log
        assert json.loads(failure_file(out, rec["task_id"]).read_text())["fold"] in (0, 1)


def test_successful_tasks_are_bit_identical_with_or_without_a_failing_neighbour(tmp_path):
    run_experiment(load_config(_failing_config(tmp_path)), tmp_path / "a", progress=False)
    alone = write_config(tmp_path / "alone.yaml", name="tiny", dataset={"name": "wine"},
                         model=["gaussian_nb"], strategy=["random"])
    (tmp_path / "b").mkdir()
    run_experiment(load_config(alone), tmp_path / "b", progress=False)
    ids = [p.stem for p in task_files(tmp_path / "b")]
    a_ids = [i.replace("tiny", "failing") for i in ids]
    assert sorted(a_ids) == _ids(tmp_path / "a", "gaussian_nb")
    # rows equal (the experiment name aside: both configs are named differently)
    assert compare_results(tmp_path / "a", tmp_path / "b", ignore=("experiment",),
                           tasks=[i for i in ids if i in a_ids]) == []


def test_cli_lists_each_failure_on_one_line_and_exits_3(tmp_path):
    out = tmp_path / "r"
    res = CliRunner().invoke(app, ["run", str(_failing_config(tmp_path)), "--out", str(out),
                                   "-q"])
    assert res.exit_code == FAILED_TASKS_EXIT == 3
    lines = [x for x in res.stderr.splitlines() if x.startswith("failed: ")]
    assert len(lines) == 2 and all("wine__svc__random" in x and "ValueError" in x
                                   for x in lines)
    assert "2 tasks failed" in res.stderr and "2 tasks run, 2 failed, 0 already done" in res.output
    assert "Traceback" not in res.output + res.stderr


@pytest.mark.slow
def test_rerun_retries_only_the_failed_tasks(tmp_path, monkeypatch):
    """A task that failed once (here: a planted error on its first attempt) is retried by the
    next run, which runs nothing else; its rows equal those of a run where it never failed."""
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    victim = "iris__logistic_regression__uncertainty__r0__f1"
    attempts: list[str] = []
    planted = [True]

    def flaky(task, *args, **kwargs):
        attempts.append(task.task_id)
        if task.task_id == victim and planted[0]:
            planted[0] = False
            raise RuntimeError("planted failure")
        return run_task(task, *args, **kwargs)

    monkeypatch.setattr(execution, "run_task", flaky)
    out = tmp_path / "r"
    first = run_experiment(cfg, out, progress=False)
    assert [f["task_id"] for f in first.failures] == [victim] and first.n_done == 7
    attempts.clear()
    again = run_experiment(cfg, out, progress=False)
    assert attempts == [victim] and again.n_done == 1 and again.n_skipped == 7
    assert not again.failures and read_failures(out) == []
    assert not (out / "failures").exists()
    clean = tmp_path / "clean"
    monkeypatch.setattr(execution, "run_task", run_task)
    run_experiment(cfg, clean, progress=False)
    assert compare_results(out, clean) == []


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_failures_are_isolated_in_worker_processes(tmp_path, backend):
    if backend == "dask":
        pytest.importorskip("distributed")
    cfg = load_config(_failing_config(tmp_path))
    run_experiment(cfg, tmp_path / "one", progress=False)
    summary = run_experiment(cfg, tmp_path / "two", jobs=2, backend=backend, progress=False)
    assert sorted(f["task_id"] for f in summary.failures) == [
        "wine__svc__random__r0__f0", "wine__svc__random__r0__f1"]
    assert all("ValueError" in (tmp_path / "two" / f["log"]).read_text()
               for f in read_failures(tmp_path / "two"))
    assert compare_results(tmp_path / "one", tmp_path / "two") == []


def test_status_counts_failed_tasks_apart(tmp_path):
    cfg = load_config(_failing_config(tmp_path))
    out = tmp_path / "r"
    run_experiment(cfg, out, progress=False)
    cells = {c.method: c for c in run_status(cfg, out).cells}
    assert cells["svc / random"].n_failed == 2 and cells["svc / random"].finished == 0
    assert cells["svc / random"].in_flight == 0
    assert cells["gaussian_nb / random"].n_failed == 0
    res = CliRunner().invoke(app, ["status", str(_failing_config(tmp_path)), "--out", str(out)])
    assert res.exit_code == 0
    assert sum(x.startswith("failed: wine__svc__random") for x in res.output.splitlines()) == 2


@pytest.mark.slow
def test_report_lists_failed_tasks_with_links_to_their_tracebacks(tmp_path):
    cfg = load_config(_failing_config(tmp_path))
    out = tmp_path / "r"
    run_experiment(cfg, out, progress=False)
    build_report(out, out_dir=tmp_path / "rep", formats=("md", "csv"))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Failed tasks" in md
    assert md.count("| wine__svc__random__r0__f") == 2
    assert "(../r/failures/wine__svc__random__r0__f0.log)" in md
    csv = (tmp_path / "rep" / "failed_tasks.csv").read_text()
    assert "ValueError" in csv


def test_no_failed_tasks_table_without_failures(tmp_path):
    out = tmp_path / "r"
    run_experiment(load_config(write_config(tmp_path / "tiny.yaml")), out, progress=False,
                   only=["*gaussian_nb__random*"])
    build_report(out, out_dir=tmp_path / "rep", formats=("md",))
    assert "Failed tasks" not in (tmp_path / "rep" / "report.md").read_text()


def _sleepy(task, *args, **kwargs):
    time.sleep(30)


def test_timeout_stops_a_task_in_the_main_thread_by_signal(tmp_path, monkeypatch):
    """In process the SIGALRM timer interrupts even a task that never returns to the loop."""
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    monkeypatch.setattr(execution, "run_task", _sleepy)
    t0 = time.perf_counter()
    summary = run_experiment(cfg, tmp_path / "r", progress=False, task_timeout=0.2,
                             only=["*gaussian_nb__random__r0__f0"])
    assert time.perf_counter() - t0 < 10
    [rec] = summary.failures
    assert rec["kind"] == "timeout" and rec["error"] == "TaskTimeout"
    assert read_failures(tmp_path / "r")[0]["kind"] == "timeout"


def test_timeout_outside_the_main_thread_is_checked_by_the_loop(tmp_path):
    """Where no signal can be used (a dask worker's thread), the loop checks its deadline."""
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    task = plan(cfg)[0]
    ds = load_datasets(cfg)[task.dataset.label]
    got = []
    worker = threading.Thread(target=lambda: got.append(
        execution._execute(task, ds, cfg.protocol_for(task.dataset), timeout=1e-6)))
    worker.start()
    worker.join()
    [(_, result, _)] = got
    assert isinstance(result, TaskFailure) and result.kind == "timeout"
    with pytest.raises(TaskTimeout):
        run_task(task, ds, cfg.protocol_for(task.dataset), deadline=time.perf_counter() - 1)


@pytest.mark.slow   # starts a loky pool
def test_timeout_in_loky_workers(tmp_path):
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    summary = run_experiment(cfg, tmp_path / "r", jobs=2, progress=False, task_timeout=1e-4,
                             only=["*__f0"])
    assert len(summary.failures) == 4 and {f["kind"] for f in summary.failures} == {"timeout"}


def test_a_generous_timeout_changes_no_row(tmp_path):
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    run_experiment(cfg, tmp_path / "a", progress=False)
    run_experiment(cfg, tmp_path / "b", progress=False, task_timeout=600)
    assert compare_results(tmp_path / "a", tmp_path / "b") == []
    assert task_file(tmp_path / "b", plan(cfg)[0].task_id).exists()


def test_task_timeout_must_be_positive(tmp_path):
    res = CliRunner().invoke(app, ["run", str(write_config(tmp_path / "tiny.yaml")), "--out",
                                   str(tmp_path / "r"), "-q", "--task-timeout", "0"])
    assert res.exit_code == 2 and "--task-timeout must be > 0" in res.stderr
