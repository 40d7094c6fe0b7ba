"""Changing some methods of a config re-runs their tasks alone (``alprbf run --rerun-changed``).

The oracle: a directory moved from a config A to a config B that changes one method holds
exactly the rows of a fresh run of B, and the task files of the unchanged method are the
very bytes A wrote.
"""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.engine.config import load_config
from alprbf.engine.record import check_record
from alprbf.engine.runner import run_experiment
from alprbf.errors import UserError
from alprbf.store.results import (
    checksum_file,
    compare_results,
    read_results,
    run_digests,
    task_files,
)
from tests.conftest import write_config

runner = CliRunner()


def _models(c):
    return {"model": ["gaussian_nb", {"name": "logistic_regression", "params": {"C": c}}],
            "strategy": "random"}


A, B = _models(1.0), _models(0.25)          # B changes the logistic regression's C


def _cfg(tmp_path, file, spec, **more):
    return load_config(write_config(tmp_path / file, **spec, **more))


def _files(out, pattern="*"):
    return {p.name: p.read_bytes() for p in task_files(out) if p.match(pattern)}


def test_the_shared_grid_holds_exactly_the_methods_defined_alike(tmp_path):
    a, b = _cfg(tmp_path, "a.yaml", A), _cfg(tmp_path, "b.yaml", B)
    meta = (a.to_dict(), a.digest())
    shared = b.shared_grid(*meta)
    assert shared.datasets == {"iris"}
    assert shared.methods == {("gaussian_nb", "random")}
    assert not shared.covers_old and not b.extends(*meta)
    assert shared.holds("iris", "gaussian_nb", "random")
    assert not shared.holds("iris", "logistic_regression", "random")
    assert a.shared_grid(*meta).covers_old                 # a config shares all with itself
    other_protocol = _cfg(tmp_path, "c.yaml", B, protocol={
        "folds": 3, "seed": 7, "initial": {"method": "per_class", "size": 2}, "budget": 6})
    assert other_protocol.shared_grid(*meta) is None


def test_a_changed_method_is_re_run_and_the_rest_kept_byte_for_byte(tmp_path):
    a, b = _cfg(tmp_path, "a.yaml", A), _cfg(tmp_path, "b.yaml", B)
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    run_experiment(a, out, progress=False)
    kept = _files(out, "iris__gaussian_nb__*")
    assert len(kept) == 2 and len(task_files(out)) == 4
    with pytest.raises(UserError, match="--rerun-changed"):
        run_experiment(b, out, progress=False)
    assert len(task_files(out)) == 4                        # the refusal deleted nothing
    summary = run_experiment(b, out, progress=False, rerun_changed=True)
    assert (summary.dropped, summary.n_done, summary.n_skipped) == (2, 2, 2)
    assert summary.extended == a.digest()
    assert _files(out, "iris__gaussian_nb__*") == kept
    assert run_digests(out) == (b.digest(), a.digest())
    run_experiment(b, fresh, progress=False)
    assert compare_results(out, fresh) == []
    assert len(read_results(out)) == len(read_results(fresh))   # verified: no mixed configs
    chosen, diffs = check_record(b, out, ["*"])
    assert len(chosen) == 4 and diffs == []
    # the directory is now B's: the old config is refused, B runs nothing again
    with pytest.raises(UserError):
        run_experiment(a, out, progress=False)
    again = run_experiment(b, out, progress=False, rerun_changed=True)
    assert (again.dropped, again.n_done) == (None, 0)


def test_task_files_the_new_config_wrote_elsewhere_are_kept(tmp_path):
    # a long run computed the changed method's tasks in a scratch directory: copied into the
    # directory of the old config, they are kept and nothing runs again
    a, b = _cfg(tmp_path, "a.yaml", A), _cfg(tmp_path, "b.yaml", B)
    out, scratch, fresh = tmp_path / "out", tmp_path / "scratch", tmp_path / "fresh"
    run_experiment(a, out, progress=False)
    run_experiment(b, scratch, progress=False, only=["*logistic_regression*"])
    for p in task_files(scratch):
        shutil.copy(p, out / "tasks" / p.name)
        shutil.copy(checksum_file(p), out / "tasks" / checksum_file(p).name)
    summary = run_experiment(b, out, progress=False, rerun_changed=True)
    assert (summary.dropped, summary.n_done, summary.n_skipped) == (0, 0, 4)
    assert run_digests(out) == (b.digest(), a.digest())     # run.json names B all the same
    run_experiment(b, fresh, progress=False)
    assert compare_results(out, fresh) == []


def test_a_removed_method_leaves_with_its_task_files(tmp_path):
    a = _cfg(tmp_path, "a.yaml", A)
    smaller = _cfg(tmp_path, "b.yaml", {"model": "gaussian_nb", "strategy": "random"})
    out = tmp_path / "out"
    run_experiment(a, out, progress=False)
    summary = run_experiment(smaller, out, progress=False, rerun_changed=True)
    assert (summary.dropped, summary.n_done) == (2, 0)
    assert sorted(_files(out)) == sorted(_files(out, "iris__gaussian_nb__*"))
    assert len(read_results(out)) > 0


def test_another_protocol_keeps_nothing_and_is_refused_in_one_line(tmp_path):
    out = tmp_path / "out"
    a = write_config(tmp_path / "a.yaml", **A)
    assert runner.invoke(app, ["run", str(a), "--out", str(out), "-q"]).exit_code == 0
    other = write_config(tmp_path / "c.yaml", **A, protocol={
        "folds": 3, "seed": 7, "initial": {"method": "per_class", "size": 2}, "budget": 6})
    res = runner.invoke(app, ["run", str(other), "--out", str(out), "-q", "--rerun-changed"])
    assert res.exit_code == 2 and "beyond its data sets and methods" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert len(task_files(out)) == 4


def test_the_command_line_says_what_it_kept_and_deleted(tmp_path):
    out = tmp_path / "out"
    a, b = write_config(tmp_path / "a.yaml", **A), write_config(tmp_path / "b.yaml", **B)
    assert runner.invoke(app, ["run", str(a), "--out", str(out), "-q"]).exit_code == 0
    res = runner.invoke(app, ["run", str(b), "--out", str(out), "-q"])
    assert res.exit_code == 2 and "--rerun-changed" in res.stderr
    res = runner.invoke(app, ["run", str(b), "--out", str(out), "-q", "--rerun-changed"])
    assert res.exit_code == 0, res.output
    assert "deleted 2 task files" in res.output and "2 tasks run, 2 already done" in res.output
    res = runner.invoke(app, ["run", str(b), "--out", str(out), "-q", "--rerun-changed",
                              "--force"])
    assert res.exit_code == 2 and "exclude each other" in res.stderr
    assert len(task_files(out)) == 4                        # refused before touching anything


@pytest.mark.parametrize("how", [{"rerun_changed": True}, {"force": True}])
def test_a_config_that_fails_validation_deletes_nothing(tmp_path, how):
    # the strategy's batch exceeds the budget: refused once the data are loaded, and the
    # changed tasks' files (all four here) are still there
    a = _cfg(tmp_path, "a.yaml", A)
    bad = _cfg(tmp_path, "b.yaml", {**A, "strategy": {"name": "random", "batch_size": 100}})
    out = tmp_path / "out"
    run_experiment(a, out, progress=False)
    before = _files(out)
    with pytest.raises(UserError, match="batch_size = 100 exceeds"):
        run_experiment(bad, out, progress=False, **how)
    assert _files(out) == before and len(before) == 4
    assert run_digests(out) == (a.digest(),)
