"""Adding data sets or methods to a config keeps the results already in its directory.

The oracle: a directory grown from a config A to its extension B holds exactly the rows of a
fresh run of B (seeds come from the task identity, so the old tasks are B's tasks).
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.engine.config import load_config
from alprbf.engine.record import check_record
from alprbf.engine.runner import run_experiment
from alprbf.engine.status import run_status
from alprbf.report.io import load_results
from alprbf.store.results import compare_results, run_digests, task_files
from tests.conftest import write_config

runner = CliRunner()

BASE = {"model": "gaussian_nb", "strategy": "random"}
MORE_METHODS = {"model": ["gaussian_nb", "logistic_regression"], "strategy": "random"}


def _cfg(tmp_path, file="a.yaml", **overrides):
    return load_config(write_config(tmp_path / file, **{**BASE, **overrides}))


def _meta(cfg):
    d = json.loads(json.dumps(cfg.to_dict(), default=str))
    return d, cfg.digest()


@pytest.mark.parametrize("change, extends", [
    ({"model": ["gaussian_nb", "logistic_regression"]}, True),       # a method added
    ({"dataset": [{"name": "iris"}, {"name": "wine"}]}, True),       # a data set added
    ({"scales": {"smoke": {"folds": 2}}}, True),                     # another scale's overrides
    ({"model": "logistic_regression"}, False),                       # a method replaced
    ({"protocol": {"folds": 3, "seed": 7, "initial": {"method": "per_class", "size": 2},
                   "budget": 6, "batch_size": 2}}, False),           # the protocol changed
    ({"name": "other"}, False),                                      # another experiment
    ({"dataset": {"name": "iris", "preprocessing": {"standardize": "none"}}}, False),
])
def test_extends_only_adds_data_sets_and_methods(tmp_path, change, extends):
    old = _cfg(tmp_path)
    new = _cfg(tmp_path, "b.yaml", **change)
    assert new.extends(*_meta(old)) is extends
    assert old.extends(*_meta(old))                     # a config extends itself
    if extends and "scales" not in change:
        assert not old.extends(*_meta(new))             # removing is not extending


def test_a_metadata_config_that_does_not_hash_to_its_digest_is_not_extended(tmp_path):
    old, new = _cfg(tmp_path), _cfg(tmp_path, "b.yaml", **MORE_METHODS)
    d, digest = _meta(old)
    d["protocol"]["budget"] = 4                         # edited by hand after the run
    assert not new.extends(d, digest)
    assert not new.extends({"datasets": 3}, digest)     # not a config at all


def test_an_extended_run_equals_a_fresh_run_of_the_larger_config(tmp_path):
    a, b = _cfg(tmp_path), _cfg(tmp_path, "b.yaml", **MORE_METHODS)
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    run_experiment(a, out, progress=False)
    old_files = {p.name: p.read_bytes() for p in task_files(out)}
    summary = run_experiment(b, out, progress=False)
    assert summary.extended == a.digest()
    assert summary.n_skipped == len(old_files) == 2 and summary.n_done == 2
    assert {p.name: p.read_bytes() for p in task_files(out) if p.name in old_files} == old_files
    assert run_digests(out) == (b.digest(), a.digest())
    run_experiment(b, fresh, progress=False)
    assert compare_results(out, fresh) == []
    assert load_results(out)["model"].nunique() == 2   # the report reads both configs' files
    # a later run of the same config keeps the history; the status counts the whole grid
    assert run_experiment(b, out, progress=False).extended is None
    assert run_digests(out) == (b.digest(), a.digest())
    assert run_status(b, out).total("finished") == 4


@pytest.mark.slow
def test_extensions_chain_and_the_record_check_accepts_them(tmp_path):
    a = _cfg(tmp_path)
    b = _cfg(tmp_path, "b.yaml", **MORE_METHODS)
    c = _cfg(tmp_path, "c.yaml", **MORE_METHODS, dataset=[{"name": "iris"}, {"name": "wine"}])
    out = tmp_path / "out"
    run_experiment(a, out, progress=False)
    chosen, diffs = check_record(b, out, ["*"])        # the record made by a, checked with b
    assert len(chosen) == 2 and diffs == []
    run_experiment(b, out, progress=False)
    run_experiment(c, out, progress=False)
    assert run_digests(out) == (c.digest(), a.digest(), b.digest())
    assert len(task_files(out)) == 8
    chosen, diffs = check_record(c, out, ["*"])
    assert len(chosen) == 8 and diffs == []
    # going back to a smaller config is not an extension: refused by the record check
    _, diffs = check_record(a, out, ["*"])
    assert [d.task_id for d in diffs] == ["config"]


def test_the_command_line_says_it_extends_and_still_refuses_other_changes(tmp_path):
    out = tmp_path / "out"
    a = write_config(tmp_path / "a.yaml", **BASE)
    assert runner.invoke(app, ["run", str(a), "--out", str(out), "-q"]).exit_code == 0
    b = write_config(tmp_path / "b.yaml", **MORE_METHODS)
    res = runner.invoke(app, ["run", str(b), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert "extended the results of config" in res.output and "2 already done" in res.output
    spec = yaml.safe_load(b.read_text())
    spec["protocol"]["budget"] = 4
    changed = tmp_path / "c.yaml"
    changed.write_text(yaml.safe_dump(spec))
    res = runner.invoke(app, ["run", str(changed), "--out", str(out), "-q"])
    assert res.exit_code == 2 and "does not extend" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
