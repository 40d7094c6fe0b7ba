"""`alprbf status`: tasks finished, in flight and to do of a partial run, read only."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from alprbf import __version__
from alprbf.cli import app
from alprbf.engine.checkpoint import CHECKPOINTS_DIR, Checkpoint, checkpoint_file, progress_file
from alprbf.engine.config import load_config
from alprbf.engine.execution import checkpoint_key
from alprbf.engine.protocol import run_task
from alprbf.engine.runner import load_datasets, plan, run_experiment
from alprbf.engine.status import run_status
from alprbf.errors import UserError
from alprbf.store.fileio import exclusive_lock, lock_holder
from alprbf.store.results import TIMING_COLUMNS, read_task, task_file, task_files, task_seconds

from .conftest import write_config


def _partial_run(tmp_path):
    """tiny config (iris, 2 models x 2 strategies x 2 folds = 8 tasks), fold 0 only run."""
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    out = tmp_path / "r"
    run_experiment(cfg, out, progress=False, only=["*__f0"])
    (out / CHECKPOINTS_DIR).mkdir()     # where a run that died mid-task left its checkpoints
    return cfg, out


def _snapshot(out):
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_counts_per_cell_and_task_seconds(tmp_path):
    cfg, out = _partial_run(tmp_path)
    st = run_status(cfg, out)
    assert [(c.dataset, c.method) for c in st.cells] == [
        ("iris", m) for m in ("gaussian_nb / random", "gaussian_nb / uncertainty",
                              "logistic_regression / random",
                              "logistic_regression / uncertainty")]
    assert all((c.planned, c.finished, c.in_flight, c.damaged) == (2, 1, 0, 0)
               for c in st.cells)
    assert st.total("finished") == 4 and st.total("planned") == 8
    # the seconds are the task files' timing columns, summed (brute force over the rows)
    for c in st.cells:
        model, strategy = c.method.split(" / ")
        path = task_file(out, f"iris__{model}__{strategy}__r0__f0")
        df = read_task(path)
        assert c.seconds == pytest.approx(float(df[list(TIMING_COLUMNS)].sum().sum()))
        assert task_seconds(path) == pytest.approx(c.seconds)
        assert c.projected_seconds == pytest.approx(c.seconds)   # one of two left, same mean
    assert st.holder is None


def test_checkpoint_damaged_file_and_only(tmp_path):
    cfg, out = _partial_run(tmp_path)
    checkpoint_file(out / CHECKPOINTS_DIR, "iris__gaussian_nb__random__r0__f1").write_bytes(b"x")
    damaged = task_file(out, "iris__logistic_regression__random__r0__f0")
    damaged.write_bytes(damaged.read_bytes() + b"\0")
    before = _snapshot(out)
    st = run_status(cfg, out)
    by = {c.method: c for c in st.cells}
    assert by["gaussian_nb / random"].in_flight == 1
    assert (by["logistic_regression / random"].finished,
            by["logistic_regression / random"].damaged) == (0, 1)
    assert by["logistic_regression / random"].projected_seconds is None
    assert st.projected_seconds is None       # a cell has nothing finished to project from
    assert _snapshot(out) == before           # read only: the damaged file is left alone
    only = run_status(cfg, out, ["*__uncertainty__*"])
    assert [c.method for c in only.cells] == ["gaussian_nb / uncertainty",
                                              "logistic_regression / uncertainty"]


def test_complete_run_projects_zero_and_holder_is_reported(tmp_path):
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    out = tmp_path / "r"
    run_experiment(cfg, out, progress=False)
    st = run_status(cfg, out)
    assert st.total("finished") == st.total("planned") == len(task_files(out)) == 8
    assert st.projected_seconds == 0.0
    with exclusive_lock(out, "alprbf run of config 'tiny' (pid 1)"):
        assert lock_holder(out) == "alprbf run of config 'tiny' (pid 1)"
        assert run_status(cfg, out).holder == "alprbf run of config 'tiny' (pid 1)"
    assert lock_holder(out) is None
    run_experiment(cfg, out, progress=False)  # the test did not leave the directory busy


def test_no_results_yet(tmp_path):
    cfg = load_config(write_config(tmp_path / "tiny.yaml"))
    st = run_status(cfg, tmp_path / "nothing")
    assert st.total("finished") == 0 and st.total("planned") == 8 and st.holder is None


def test_another_configs_directory_is_refused(tmp_path):
    _, out = _partial_run(tmp_path)
    other = load_config(write_config(tmp_path / "other.yaml", name="other",
                                     protocol={"folds": 3, "seed": 7, "budget": 6,
                                               "initial": {"method": "random", "size": 6}}))
    with pytest.raises(UserError, match="different config"):
        run_status(other, out)


def test_status_command(tmp_path):
    cfg, out = _partial_run(tmp_path)
    res = CliRunner().invoke(app, ["status", str(tmp_path / "tiny.yaml"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "4/8" in res.output and "logistic_regression / uncertainty" in res.output
    assert "no run holds this directory now" in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**yaml.safe_load((tmp_path / "tiny.yaml").read_text()),
                                   "name": "bad", "protocol": {"folds": 5, "seed": 7,
                                                               "budget": 6}}))
    res = CliRunner().invoke(app, ["status", str(bad), "--out", str(out)])
    assert res.exit_code == 2 and "different config" in res.output
    assert "Traceback" not in res.output


def test_a_run_at_another_scale_is_named(tmp_path):
    path = write_config(tmp_path / "tiny.yaml", scales={"smoke": {"folds": 3}})
    cfg = load_config(path).with_scale("smoke")
    run_experiment(cfg, tmp_path / "r", progress=False, only=["*__f0"])
    runner = CliRunner()
    res = runner.invoke(app, ["status", str(path), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "holds the smoke-scale run of tiny" in res.output
    assert "add --scale smoke" in res.output
    res = runner.invoke(app, ["status", str(path), "--out", str(tmp_path / "r"),
                              "--scale", "smoke"])
    assert res.exit_code == 0 and "4/12" in res.output, res.output


def test_a_task_in_flight_shows_how_far_its_checkpoint_is(tmp_path):
    """The progress file of a real interrupted task: its labels equal the checkpointed
    state's, its target the labels the finished task ends with (both read without the
    pickle), and the status command prints them."""
    cfg, out = _partial_run(tmp_path)
    task = next(t for t in plan(cfg) if t.task_id == "iris__gaussian_nb__random__r0__f1")
    ck = Checkpoint(checkpoint_file(out / CHECKPOINTS_DIR, task.task_id),
                    checkpoint_key(task, cfg.protocol, __version__), every_seconds=0.0)
    calls = []

    def stop_after_two(n):
        calls.append(n)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_task(task, load_datasets(cfg)[task.dataset.label], cfg.protocol,
                 on_query=stop_after_two, checkpoint=ck)
    state = ck.load()
    labeled = int(np.count_nonzero(~np.isnan(state.y_obs)))
    st = run_status(cfg, out)
    (prog,) = [p for c in st.cells for p in c.progress.values()]
    assert prog.n_labeled == labeled and prog.target == labeled + state.remaining
    res = CliRunner().invoke(app, ["status", str(tmp_path / "tiny.yaml"), "--out", str(out)])
    assert f"{task.task_id}: {labeled} of {prog.target} labels" in res.output
    # finishing the task clears both files; its last row has the announced target
    run_experiment(cfg, out, progress=False, only=[task.task_id])
    assert read_task(task_file(out, task.task_id))["n_labeled"].iloc[-1] == prog.target
    assert not progress_file(out / CHECKPOINTS_DIR, task.task_id).exists()
    assert not any(c.progress for c in run_status(cfg, out).cells)
