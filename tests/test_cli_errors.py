"""Bad input: every case gives one line on stderr and exit code 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from alprbf.cli import app

from .conftest import write_config

runner = CliRunner()


def _tiny(tmp_path, **over):
    return str(write_config(tmp_path / "c.yaml", **over))


def _raw(tmp_path, text):
    p = tmp_path / "raw.yaml"
    p.write_text(text)
    return str(p)


CASES = {
    "missing config file": (lambda t: ["run", str(t / "nope.yaml")], "config file not found"),
    "invalid yaml": (lambda t: ["validate", _raw(t, "name: [unclosed\n")], "not valid YAML"),
    "config not a mapping": (lambda t: ["validate", _raw(t, "- a\n- b\n")], "YAML mapping"),
    "unknown top-level field": (lambda t: ["validate", _raw(
        t, "name: x\ndataset: iris\nmodel: svc\nprotocl: {}\n")], "did you mean 'protocol'"),
    "unknown dataset": (lambda t: ["validate", _tiny(t, dataset="irs")],
                        "unknown dataset 'irs' (did you mean 'iris'?)"),
    "unknown model": (lambda t: ["validate", _tiny(t, model="svm")], "unknown model 'svm'"),
    "unknown strategy": (lambda t: ["validate", _tiny(t, strategy="uncertain")],
                         "unknown strategy 'uncertain'"),
    "unknown model parameter": (lambda t: ["validate", _tiny(
        t, model={"name": "svc", "params": {"gama": 1}})], "no parameter 'gama'"),
    "wrong type for folds": (lambda t: ["validate", _tiny(t, protocol={"folds": "five"})],
                             "protocol.folds"),
    "folds below 2": (lambda t: ["validate", _tiny(t, protocol={"folds": 1})], ">= 2"),
    "unknown initial method": (lambda t: ["validate", _tiny(
        t, protocol={"initial": {"method": "randm", "size": 3}})], "did you mean 'random'"),
    "budget larger than pool": (lambda t: ["validate", _tiny(
        t, protocol={"folds": 2, "budget": 500})], "exceeds the pool"),
    "unknown scale": (lambda t: ["run", _tiny(t), "--scale", "smal"], "unknown scale 'smal'"),
    "unknown backend": (lambda t: ["run", _tiny(t), "--backend", "ray"], "--backend 'ray'"),
    "missing model field": (lambda t: ["validate", _tiny(t, model=None)],
                            "config field 'model' is missing"),
    "unknown uncertainty measure": (lambda t: ["run", _tiny(
        t, strategy={"name": "uncertainty", "params": {"measure": "margn"}}), "-q",
        "--out", str(t / "out")],
        "did you mean 'margin'"),
    "reference file missing": (lambda t: ["validate", _tiny(t, reference="refs/none.csv")],
                               "file not found"),
    "stratified folds exceed smallest class": (lambda t: ["validate", _tiny(
        t, protocol={"folds": 60})], "rows per class"),
    "file dataset without file": (lambda t: ["validate", _tiny(
        t, dataset={"name": "file", "params": {"path": "missing.csv", "target": "y"}})],
        "dataset file not found"),
    "report on a missing directory": (lambda t: ["report", str(t / "nothing")], "not found"),
    "list unknown kind": (lambda t: ["list", "modles"], "did you mean 'models'"),
    "jobs zero": (lambda t: ["run", _tiny(t), "--jobs", "0", "-q", "--out", str(t / "o")],
                  "--jobs must be >= 1"),
    "task threads zero": (lambda t: ["run", _tiny(t), "--task-threads", "0", "-q", "--out",
                                      str(t / "o")], "--task-threads must be >= 1"),
    "bad report format": (lambda t: ["report", str(t), "--format", "pdf"], "--format 'pdf'"),
    "negative seed": (lambda t: ["validate", _tiny(t, protocol={"seed": -1})], "protocol.seed"),
    "initial size bigger than per-class rows": (lambda t: ["validate", _tiny(
        t, protocol={"initial": {"method": "per_class", "size": 80}})], "initial"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2(case, tmp_path):
    make_args, expected = CASES[case]
    result = runner.invoke(app, make_args(tmp_path))
    assert result.exit_code == 2, (case, result.output)
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in result.output
    assert expected in err, err


def test_results_dir_of_another_config_is_refused(tmp_path):
    out = tmp_path / "res"
    cfg = write_config(tmp_path / "a.yaml", protocol={"folds": 2, "budget": 2})
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    cfg2 = write_config(tmp_path / "a.yaml", protocol={"folds": 2, "budget": 4})
    res = runner.invoke(app, ["run", str(cfg2), "--out", str(out), "-q"])
    assert res.exit_code == 2 and "different config" in res.stderr
    assert runner.invoke(app, ["run", str(cfg2), "--out", str(out), "-q", "--force"]).exit_code == 0


def test_real_entry_point_prints_no_traceback(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump({"name": "x", "dataset": "iris", "model": "nope"}))
    proc = subprocess.run([sys.executable, "-m", "alprbf.cli", "validate", str(cfg)],
                          capture_output=True, text=True, cwd=Path(__file__).parent)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: unknown model 'nope'")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_methods_and_grid_are_exclusive(tmp_path):
    res = runner.invoke(app, ["validate", _tiny(tmp_path, methods=[{"model": "svc"}])])
    assert res.exit_code == 2 and "not both" in res.stderr
