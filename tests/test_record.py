"""The drift guard: re-running recorded tasks must give the recorded rows bit for bit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.engine.config import parse_config
from alprbf.engine.record import check_record
from alprbf.engine.runner import run_experiment
from alprbf.errors import UserError
from alprbf.store.results import read_task, task_files, write_task

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


def test_rerun_loads_only_the_data_sets_of_the_checked_tasks(tmp_path, monkeypatch):
    import alprbf.engine.runner as runner
    cfg, record = _record(tmp_path)
    loaded = []
    real = runner.load_datasets

    def spy(c):
        loaded.extend(d.label for d in c.datasets)
        return real(c)

    monkeypatch.setattr(runner, "load_datasets", spy)
    assert check_record(cfg, record, ["iris__*"])[1] == []
    assert loaded == ["iris"]


@pytest.mark.slow
def test_first_fold_reruns_only_repetition_0_fold_0(tmp_path):
    cfg, record = _record(tmp_path)
    checked, diffs = check_record(cfg, record, ["*"], first_fold=True)
    assert sorted(checked) == sorted(p.stem for p in task_files(record)
                                     if p.stem.endswith("__r0__f0"))
    assert len(checked) == 4 and diffs == []          # 2 data sets x 2 models, fold 0 of 2
    # a change in fold 1 is outside the quick check, inside the full one
    path = next(p for p in task_files(record) if p.stem.endswith("__f1"))
    df = read_task(path)
    df.loc[df.index[-1], "test_error"] += 1e-12
    write_task(df, path)
    assert check_record(cfg, record, ["*"], first_fold=True)[1] == []
    assert [d.task_id for d in check_record(cfg, record, ["*"])[1]] == [path.stem]


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


# ------------------------------------------------------------------ first queries only (--queries)

LONG = {**CONFIG, "dataset": [{"name": "iris"}],
        "protocol": {**CONFIG["protocol"], "budget": 8, "batch_size": 2, "evaluate_every": 2}}


def _long_record(tmp_path):
    cfg = parse_config(LONG)
    run_experiment(cfg, tmp_path / "record", progress=False)
    return cfg, tmp_path / "record"


@pytest.mark.parametrize("queries", [1, 2, 3, 4, 6, 8, 50])
def test_first_queries_rerun_matches_the_record(tmp_path, queries):
    # batches of 2, rows every 2 rounds: 1 and 3 queries round up to whole batches, 2 and 6 end off
    # the evaluation grid; 50 is more than the budget (the whole task)
    cfg, record = _long_record(tmp_path)
    checked, diffs = check_record(cfg, record, ["*"], queries=queries)
    assert len(checked) == 4 and diffs == []


def test_first_queries_detect_a_change_inside_them_only(tmp_path):
    cfg, record = _long_record(tmp_path)
    path = next(p for p in task_files(record) if p.stem.startswith("iris__prbf"))
    df = read_task(path)
    assert df.iteration.tolist() == [0, 2, 4]        # rows at rounds 0, 2 and the last (4)
    late = df.copy()
    late.loc[2, "test_error"] += 1e-12                 # the last row: beyond 4 queries
    write_task(late, path)
    assert check_record(cfg, record, ["iris__prbf*"], queries=4)[1] == []
    _, diffs = check_record(cfg, record, ["iris__prbf*"], queries=8)
    assert [d.task_id for d in diffs] == [path.stem] and "test_error" in diffs[0].what
    early = df.copy()
    early.loc[1, "queried"] = [int(early.loc[1, "queried"][0]) + 1, *early.loc[1, "queried"][1:]]
    write_task(early, path)
    _, diffs = check_record(cfg, record, ["iris__prbf*"], queries=4)
    assert [d.task_id for d in diffs] == [path.stem] and "queried" in diffs[0].what


def test_first_queries_are_refused_for_inner_cv_selection_and_nonpositive(tmp_path):
    cfg = parse_config({**LONG, "strategy": {"name": "uncertainty", "select": {
        "param": "measure", "values": ["margin", "entropy"], "folds": 2}}})
    run_experiment(cfg, tmp_path / "record", progress=False)
    with pytest.raises(UserError, match="inner CV"):
        check_record(cfg, tmp_path / "record", ["*"], queries=2)
    with pytest.raises(UserError, match="--queries must be >= 1"):
        check_record(cfg, tmp_path / "record", ["*"], queries=0)


def test_check_record_command_with_queries(tmp_path):
    _, record = _long_record(tmp_path)
    path = tmp_path / "rec.yaml"
    path.write_text(yaml.safe_dump(LONG))
    ok = CliRunner().invoke(app, ["check-record", str(path), str(record), "--only", "*",
                                  "--queries", "4"])
    assert ok.exit_code == 0, ok.output
    assert "4 re-run tasks identical to the record over their first 4 queries" in ok.output


def test_make_install_pins_the_versions_the_record_was_made_with():
    """constraints.txt (used by `make install`) pins each package that run.json records to the
    version every tracked record was computed with, so the guard and the report test see a
    change of code, not an upstream release."""
    root = Path(__file__).resolve().parents[1]
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$",
                           (root / "constraints.txt").read_text(), flags=re.M))
    pins = {k.lower().replace("_", "-"): v for k, v in pins.items()}
    runs = sorted(root.glob("results/table-*-full/*/run.json"))
    assert runs
    for run in runs:
        versions = json.loads(run.read_text())["versions"]
        for package, version in versions.items():
            if package in ("python", "alprbf"):
                continue
            assert pins.get(package) == version, (
                f"{run}: made with {package} {version}, constraints.txt pins "
                f"{pins.get(package)}")
    for package in ("numpy", "scipy", "scikit-learn", "matplotlib", "pandas", "pyarrow"):
        assert package in pins, f"constraints.txt does not pin {package}"
