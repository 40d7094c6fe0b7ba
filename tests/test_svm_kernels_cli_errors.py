"""Bad parameters of Reitmaier et al. 2016's models through the CLI: one line on stderr, exit
code 2.

Issue 18: negative gamma, unknown kernel, alpha + beta = 0 and a LAP graph with more neighbours
than the training part has rows.  The first three fail when the config is parsed (the learner
checks the estimator's parameters when it is made); the last one needs the data, and the runner
asks every model before any task runs (``Learner.check_training_size``).
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from alprbf.cli import app

from .conftest import write_config

runner = CliRunner()


def _svm(**params):
    return {"name": "kernel_svm", "params": params}


CASES = {
    "negative gamma": (_svm(kernel="rwm", gamma=-1.0), "invalid gamma=-1.0"),
    "negative gamma in the grid": (_svm(kernel="rbf", gamma_grid=[0.1, -1.0]), "gamma_grid"),
    "negative gamma_I in the LAP grid": (_svm(kernel="lap", gamma_I_grid=[-1.0]),
                                         "gamma_I_grid"),
    "unknown kernel": (_svm(kernel="rwn"), "invalid kernel='rwn'"),
    "alpha + beta = 0": (_svm(kernel="rwm", alpha=0.0, beta=0.0), "alpha + beta"),
    "negative alpha": (_svm(kernel="gmm", alpha=-0.5), "alpha"),
    "LAP neighbours beyond the pool": (_svm(kernel="lap", n_neighbors=500),
                                       "invalid n_neighbors=500 for a training part of 75 rows"),
    "CMM negative smoothing": ({"name": "cmm_sha", "params": {"smoothing": -1.0}}, "smoothing"),
    "CMM zero components": ({"name": "cmm_sep", "params": {"n_components": 0}}, "n_components"),
}


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_kernel_model_parameter_is_one_line_exit_2(case, command, tmp_path):
    model, expected = CASES[case]
    cfg = write_config(tmp_path / "c.yaml", model=[model], strategy="random",
                       protocol={"folds": 2, "seed": 7, "budget": 2,
                                 "initial": {"method": "per_class", "size": 2}})
    args = [command, str(cfg)] + (["-q", "--out", str(tmp_path / "out")] if command == "run"
                                  else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (case, result.output)
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: ") and expected in err, err
    assert "Traceback" not in result.output
    assert not list(tmp_path.glob("out/tasks/*.parquet"))     # refused before any task ran


def test_lap_neighbours_that_fit_the_pool_pass(tmp_path):
    cfg = write_config(tmp_path / "c.yaml", model=[_svm(kernel="lap", n_neighbors=74)],
                       strategy="random", protocol={"folds": 2, "seed": 7, "budget": 2,
                                                    "initial": {"method": "per_class",
                                                                "size": 2}})
    result = runner.invoke(app, ["validate", str(cfg)])
    assert result.exit_code == 0, result.output
