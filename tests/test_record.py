"""The drift guard: re-running recorded tasks must give the recorded rows bit for bit."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.config import parse_config
from alprbf.record import check_record
from alprbf.results import read_task, task_files, write_task
from alprbf.runner import run_experiment

CONFIG = {
    "name": "rec", "dataset": [{"name": "iris"}, {"name": "wine"}],
    "model": [{"name": "prbf", "params": {"n_components": 2, "covariance_type": "diag"}},
              "gaussian_nb"],
    "strategy": "uncertainty",
    "protocol": {"folds": 2, "seed": 5, "initial": {"method": "random", "size": 6},
                 "budget": 3},
}


def _record(tmp_path):
    cfg = parse_config(CONFIG)
    run_experiment(cfg, tmp_path / "record", progress=False)
    return cfg, tmp_path / "record"


def test_rerun_of_recorded_tasks_is_identical(tmp_path):
    cfg, record = _record(tmp_path)
    checked, diffs = check_record(cfg, record, ["iris__*"])
    assert sorted(checked) == sorted(p.stem for p in task_files(record) if "iris" in p.stem)
    assert diffs == []


def test_a_changed_result_fails_with_the_task_named(tmp_path):
    cfg, record = _record(tmp_path)
    path = next(p for p in task_files(record) if p.stem.startswith("iris__prbf"))
    df = read_task(path)
    df.loc[df.index[-1], "test_error"] += 1e-12       # a round-off-sized change
    write_task(df, path)
    _, diffs = check_record(cfg, record, ["*"])
    assert [d.task_id for d in diffs] == [path.stem]
    assert "test_error" in diffs[0].what


def test_a_numerical_change_of_the_config_fails(tmp_path):
    cfg, record = _record(tmp_path)
    changed = dict(CONFIG, model=[{"name": "prbf", "params": {
        "n_components": 2, "covariance_type": "diag", "reg_covar": 1e-3}}, "gaussian_nb"])
    _, diffs = check_record(parse_config(changed), record, ["*"])
    assert [d.task_id for d in diffs] == ["config"]


def test_check_record_command(tmp_path):
    cfg, record = _record(tmp_path)


    path = tmp_path / "rec.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    runner = CliRunner()
    ok = runner.invoke(app, ["check-record", str(path), str(record), "--only", "wine__*"])
    assert ok.exit_code == 0 and "4 re-run tasks identical" in ok.output, ok.output
    victim = next(p for p in task_files(record) if p.stem.startswith("wine__gaussian_nb"))
    df = read_task(victim)
    df["n_labeled"] += 1
    write_task(df, victim)
    bad = runner.invoke(app, ["check-record", str(path), str(record), "--only", "wine__*"])
    assert bad.exit_code == 1
    assert f"changed: {victim.stem}: columns differ: n_labeled" in bad.output


def test_patterns_not_recorded_yet_check_nothing_and_say_so(tmp_path):
    cfg, record = _record(tmp_path)
    for p in task_files(record):          # a record built up in pieces: wine not there yet
        if p.stem.startswith("wine__"):
            p.unlink()
    assert check_record(cfg, record, ["wine__*"]) == ([], [])
    path = tmp_path / "rec.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    out = CliRunner().invoke(app, ["check-record", str(path), str(record), "--only", "wine__*"])
    assert out.exit_code == 0 and "recorded yet (nothing to check)" in out.output
