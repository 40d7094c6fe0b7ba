"""OpenML data sets by id: the real loading code on a fixture in the mirror / cache layout that
the test writes itself (OpenML's JSON description + the ARFF file it names), no network."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import yaml
from sklearn.datasets import load_iris
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.datasets import DATASETS, fetch
from alprbf.datasets.openml import DESCRIPTION_URL, FILE_URL, OpenML
from alprbf.engine.config import load_config
from alprbf.engine.runner import run_experiment
from alprbf.errors import UserError
from alprbf.store.results import read_results

ROWS = 10   # per class


def arff_text(extra_attribute: str = "") -> str:
    """30 rows of iris (10 per class) as OpenML would serve them: a row-id attribute, an
    ignored attribute, a nominal feature with a quoted value, one missing numeric value and
    class names with spaces."""
    X, y = load_iris(return_X_y=True)
    keep = np.concatenate([np.flatnonzero(y == k)[:ROWS] for k in range(3)])
    names = ["'Iris setosa'", "'Iris versicolor'", "'Iris virginica'"]
    lines = ["% iris subset for the tests", "@RELATION iris", "",
             "@ATTRIBUTE rid NUMERIC", "@ATTRIBUTE sepallength NUMERIC",
             "@ATTRIBUTE sepalwidth REAL", "@ATTRIBUTE petallength NUMERIC",
             "@ATTRIBUTE petalwidth NUMERIC", "@ATTRIBUTE colour {red,'dark blue'}",
             "@ATTRIBUTE junk NUMERIC", extra_attribute,
             "@ATTRIBUTE class {" + ",".join(names) + "}", "", "@DATA"]
    for i, r in enumerate(keep):
        vals = [f"{v:g}" for v in X[r]]
        if i == 3:
            vals[1] = "?"
        colour = "red" if i % 2 else "'dark blue'"
        extra = ",x" if extra_attribute else ""
        lines.append(",".join([str(i), *vals, colour, "7", *([extra[1:]] if extra else []),
                               names[y[r]]]))
    return "\n".join(x for x in lines if x is not None) + "\n"


def description(data_id: int, arff: bytes, **over) -> dict:
    desc = {"id": str(data_id), "name": "iris-subset", "version": "1", "format": "ARFF",
            "file_id": str(1000 + data_id), "default_target_attribute": "class",
            "row_id_attribute": "rid", "ignore_attribute": ["junk"],
            "md5_checksum": hashlib.md5(arff).hexdigest()}
    return {"data_set_description": {**desc, **over}}


def write_openml(root, data_id: int, arff: str | None = None, **over) -> bytes:
    """``root/openml/<id>/{description.json,dataset.arff}``: the mirror (and cache) layout."""
    data = (arff or arff_text()).encode()
    folder = root / "openml" / str(data_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.arff").write_bytes(data)
    (folder / "description.json").write_text(json.dumps(description(data_id, data, **over)))
    return data


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    root = tmp_path / "mirror"
    root.mkdir()
    monkeypatch.setenv(fetch.ENV_MIRROR, str(root))
    monkeypatch.setenv(fetch.ENV_HOME, str(tmp_path / "cache"))
    monkeypatch.setattr(fetch, "_fetch_bytes", _no_network)
    return root


def _no_network(url, *args, **kwargs):
    raise OSError(f"no network in the tests ({url})")


def test_loads_the_arff_named_by_the_description_from_the_mirror(mirror):
    data = write_openml(mirror, 61)
    ds = DATASETS["openml"](data_id=61).load()
    assert ds.name == "openml-61" and ds.source == "mirror"
    assert ds.X.shape == (3 * ROWS, 5)          # rid and junk dropped, class is the target
    assert ds.feature_names == ("sepallength", "sepalwidth", "petallength", "petalwidth",
                                "colour")
    assert ds.categorical.tolist() == [False] * 4 + [True]
    assert ds.classes == ("Iris setosa", "Iris versicolor", "Iris virginica")
    assert np.bincount(ds.y).tolist() == [ROWS] * 3
    assert np.isnan(ds.X[3, 1]) and np.isfinite(np.delete(ds.X, 3, axis=0)).all()
    assert set(ds.X[:, 4]) == {0.0, 1.0}         # declared order: red = 0, 'dark blue' = 1
    assert ds.X[0, 4] == 1.0 and ds.X[1, 4] == 0.0
    X, _ = load_iris(return_X_y=True)
    assert np.array_equal(ds.X[:ROWS, 0], X[:ROWS, 0])
    assert ds.sha256["dataset.arff"] == hashlib.sha256(data).hexdigest()


def test_an_arff_that_fails_the_descriptions_md5_is_refused(mirror):
    write_openml(mirror, 61)
    path = mirror / "openml" / "61" / "dataset.arff"
    path.write_text(path.read_text().replace("5.1,3.5", "5.2,3.5", 1))
    with pytest.raises(fetch.ChecksumError, match="expected md5"):
        OpenML(data_id=61).load()


def test_a_pinned_sha256_must_match(mirror):
    data = write_openml(mirror, 61)
    OpenML(data_id=61, sha256=hashlib.sha256(data).hexdigest()).load()
    with pytest.raises(fetch.ChecksumError, match="expected sha256"):
        OpenML(data_id=61, sha256="0" * 64).load()


def test_download_uses_the_canonical_urls_and_fills_the_cache(tmp_path, monkeypatch):
    data = arff_text().encode()
    served = {DESCRIPTION_URL.format(data_id=61): json.dumps(description(61, data)).encode(),
              FILE_URL.format(file_id=1061): data}
    asked = []

    def fake_fetch(url, *args, **kwargs):
        asked.append(url)
        return served[url]

    monkeypatch.delenv(fetch.ENV_MIRROR, raising=False)
    monkeypatch.setattr(fetch, "_fetch_bytes", fake_fetch)
    ds = OpenML(data_id=61).load_files(home=tmp_path / "cache", progress=False)
    assert asked == ["https://www.openml.org/api/v1/json/data/61",
                     "https://api.openml.org/data/v1/download/1061"]
    assert ds.source == "download"
    assert (tmp_path / "cache" / "openml" / "61" / "dataset.arff").read_bytes() == data
    again = OpenML(data_id=61).load_files(home=tmp_path / "cache", progress=False)
    assert again.source == "cache" and len(asked) == 2


def test_missing_files_name_the_folder_and_the_url(mirror):
    with pytest.raises(fetch.MissingFileError, match=r"openml/61.*api/v1/json/data/61"):
        OpenML(data_id=61).load()


@pytest.mark.parametrize(("params", "words"), [
    ({"data_id": 0}, "data_id must be a positive integer"),
    ({"data_id": "61"}, "data_id must be a positive integer"),
    ({"data_ids": [61]}, "data_ids is expanded by the config")])
def test_bad_ids_are_one_line_errors(params, words):
    with pytest.raises(UserError, match=words):
        OpenML(**params)


def test_unsupported_attributes_and_targets_are_one_line_errors(mirror):
    write_openml(mirror, 61, arff_text("@ATTRIBUTE note STRING"))
    with pytest.raises(UserError, match="cannot read .* as ARFF"):
        OpenML(data_id=61).load()
    write_openml(mirror, 62, default_target_attribute="sepallength")
    with pytest.raises(UserError, match="not nominal"):
        OpenML(data_id=62).load()
    write_openml(mirror, 63)
    with pytest.raises(UserError, match="target 'nope' is not an attribute"):
        OpenML(data_id=63, target="nope").load()
    write_openml(mirror, 64, format="Sparse_ARFF")
    with pytest.raises(UserError, match="sparse ARFF is not supported"):
        OpenML(data_id=64).load()


def _suite_config(tmp_path, ids=(61, 62)) -> object:
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({
        "name": "suite", "dataset": {"name": "openml", "params": {"data_ids": list(ids)}},
        "model": ["gaussian_nb"], "strategy": ["random"],
        "protocol": {"folds": 2, "seed": 3, "initial": {"method": "per_class", "size": 1},
                     "budget": 4, "batch_size": 2}}))
    return path


def test_a_suite_of_ids_expands_validates_and_runs(tmp_path, mirror):
    for i in (61, 62):
        write_openml(mirror, i)
    path = _suite_config(tmp_path)
    cfg = load_config(path)
    assert [(d.label, d.params) for d in cfg.datasets] == [
        ("openml-61", {"data_id": 61}), ("openml-62", {"data_id": 62})]
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    assert "2 datasets" in res.output
    run_experiment(cfg, tmp_path / "r", progress=False)
    df = read_results(tmp_path / "r")
    assert sorted(df["dataset"].unique()) == ["openml-61", "openml-62"]
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["datasets"]["openml-61"]["files_sha256"]["dataset.arff"] == hashlib.sha256(
        arff_text().encode()).hexdigest()


def test_a_single_id_gets_its_own_label_and_a_bad_suite_is_refused(tmp_path):
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump({"name": "one", "dataset": [
        {"name": "openml", "params": {"data_id": 61}},
        {"name": "openml", "params": {"data_id": 62}}], "model": ["gaussian_nb"],
        "strategy": ["random"]}))
    assert [d.label for d in load_config(one).datasets] == ["openml-61", "openml-62"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "bad", "dataset": {
        "name": "openml", "params": {"data_ids": []}}, "model": ["gaussian_nb"],
        "strategy": ["random"]}))
    res = CliRunner().invoke(app, ["validate", str(bad)])
    assert res.exit_code == 2 and "data_ids must be a non-empty list" in res.output
