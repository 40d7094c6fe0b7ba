"""``alprbf datasets``: list, info, fetch, verify (with a fake mirror; no network)."""

from __future__ import annotations

import dataclasses
import hashlib
import urllib.error

import pytest
from typer.testing import CliRunner

from alprbf.cli.datasets import datasets_app
from alprbf.datasets import DATASETS, fetch

runner = CliRunner()
IRIS = (b"5.1,3.5,1.4,0.2,Iris-setosa\n7.0,3.2,4.7,1.4,Iris-versicolor\n"
        b"6.3,3.3,6.0,2.5,Iris-virginica\n\n")


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A mirror holding a 3-row iris_uci, registered with its digest; no network."""
    cls = DATASETS["iris_uci"]
    mirror, home = tmp_path / "mirror", tmp_path / "home"
    (mirror / "iris").mkdir(parents=True)
    (mirror / "iris" / "iris.data").write_bytes(IRIS)
    f = dataclasses.replace(cls.files[0], sha256=hashlib.sha256(IRIS).hexdigest())
    monkeypatch.setattr(cls, "files", (f,))
    monkeypatch.setattr(cls, "expected", (3, 4, 3))
    monkeypatch.setattr(cls, "class_counts", {"Iris-setosa": 1, "Iris-versicolor": 1,
                                              "Iris-virginica": 1})
    monkeypatch.setenv("ALPRBF_DATA_HOME", str(home))
    monkeypatch.delenv("ALPRBF_DATA_MIRROR", raising=False)

    def offline(*a, **k):
        raise urllib.error.URLError("no network in tests")

    monkeypatch.setattr(fetch.urllib.request, "urlopen", offline)
    return mirror, home


def test_list_shows_every_dataset(fake):
    mirror, _ = fake
    res = runner.invoke(datasets_app, ["list", "--mirror", str(mirror)])
    assert res.exit_code == 0, res.output
    for name in ("segmentation", "mnist", "clouds", "iris_uci"):
        assert name in res.output


def test_info(fake):
    res = runner.invoke(datasets_app, ["info", "iris_uci"])
    assert res.exit_code == 0
    assert "iris.data" in res.output and "sha256" in res.output and "CC BY 4.0" in res.output
    res = runner.invoke(datasets_app, ["info", "irs_uci"])
    assert res.exit_code == 2 and "did you mean 'iris_uci'" in res.output


def test_fetch_from_mirror_and_missing(fake):
    mirror, home = fake
    res = runner.invoke(datasets_app, ["fetch", "iris_uci", "--mirror", str(mirror)])
    assert res.exit_code == 0 and "mirror" in res.output
    res = runner.invoke(datasets_app, ["fetch", "iris_uci"])
    assert res.exit_code == 2
    assert "ALPRBF_DATA_MIRROR" in res.output and "iris.data" in res.output
    assert runner.invoke(datasets_app, ["fetch"]).exit_code == 2
    assert runner.invoke(datasets_app, ["fetch", "iris_uci", "--all"]).exit_code == 2


def test_verify_passes_then_fails_on_a_corrupt_file(fake):
    mirror, _ = fake
    res = runner.invoke(datasets_app, ["verify", "iris_uci", "clouds", "--mirror", str(mirror)])
    assert res.exit_code == 0, res.output
    assert "2 ok, 0 failed" in res.output
    (mirror / "iris" / "iris.data").write_bytes(IRIS.replace(b"5.1", b"5.2"))
    res = runner.invoke(datasets_app, ["verify", "iris_uci", "--mirror", str(mirror)])
    assert res.exit_code == 1 and "1 failed" in res.output and "FAIL" in res.output


def test_verify_reports_unavailable_without_failing(fake):
    res = runner.invoke(datasets_app, ["verify", "iris_uci"])
    assert res.exit_code == 0 and "0 ok, 0 failed, 1 not available" in res.output


def test_the_help_names_the_variables_the_data_sets_read():
    from alprbf.cli import datasets as cli_datasets

    assert (cli_datasets.HOME_VAR, cli_datasets.MIRROR_VAR) == (fetch.ENV_HOME, fetch.ENV_MIRROR)
