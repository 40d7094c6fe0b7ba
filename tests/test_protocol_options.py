"""Protocol options of Reitmaier et al. 2016 and Nguyen & Smeulders 2004: labels counted with the
initial set, a budget capped at the pool, per-data-set protocol fields, a published test split,
evaluation on the unlabeled rest with the error relative to the database, drawn databases and
one-vs-rest targets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.naive_bayes import GaussianNB
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.datasets import make_dataset
from alprbf.engine.config import load_config, parse_config
from alprbf.engine.protocol import Task, run_task, split_rows
from alprbf.engine.runner import draw_database, load_datasets, one_vs_rest, plan, run_experiment
from alprbf.engine.seeding import derive_seed
from alprbf.errors import UserError
from alprbf.store.results import read_results

from .conftest import write_config

runner = CliRunner()


def _cfg(tmp_path, **over):
    return load_config(write_config(tmp_path / "c.yaml", **over))


def _curves(df):
    return {k: g.sort_values("iteration") for k, g in df.groupby(["model", "strategy", "fold"])}


def test_labels_count_the_initial_set(tmp_path):
    cfg = _cfg(tmp_path, model="gaussian_nb", strategy="random", protocol={
        "folds": 2, "seed": 1, "initial": {"method": "per_class", "size": 2}, "labels": 13,
        "batch_size": 2})
    run_experiment(cfg, tmp_path / "r", progress=False)
    for curve in _curves(read_results(tmp_path / "r")).values():
        # 6 initial rows, 7 queries in batches of 2: the last batch is a single row
        assert curve.n_labeled.tolist() == [6, 8, 10, 12, 13]


def test_a_budget_beyond_the_pool_is_refused_or_capped(tmp_path):
    proto = {"folds": 2, "seed": 1, "initial": {"method": "per_class", "size": 2},
             "labels": 500, "batch_size": 20}
    res = runner.invoke(app, ["validate", str(write_config(tmp_path / "a.yaml", protocol=proto))])
    assert res.exit_code == 2 and "exceeds the pool" in res.output
    assert "cap_at_pool" in res.output and len(res.output.strip().splitlines()) == 1
    cfg = _cfg(tmp_path, model="gaussian_nb", strategy="random",
               protocol={**proto, "cap_at_pool": True})
    run_experiment(cfg, tmp_path / "r", progress=False)
    for curve in _curves(read_results(tmp_path / "r")).values():
        assert curve.n_labeled.iloc[-1] == 75       # the whole training part of a fold
        assert curve.train_accuracy.iloc[-1] == curve.labeled_accuracy.iloc[-1]


def test_initial_size_per_class_scales_with_the_classes(tmp_path):
    cfg = _cfg(tmp_path, model="gaussian_nb", strategy="random", protocol={
        "folds": 2, "seed": 1, "initial": {"method": "random", "size_per_class": 4},
        "labels": 20, "batch_size": 4})
    run_experiment(cfg, tmp_path / "r", progress=False)
    for curve in _curves(read_results(tmp_path / "r")).values():
        assert curve.n_labeled.tolist() == [12, 16, 20]


def test_a_data_set_may_carry_protocol_fields_of_its_own(tmp_path):
    cfg = _cfg(tmp_path, model="gaussian_nb", strategy="random", dataset=[
        "iris", {"name": "wine", "protocol": {"budget": 2, "folds": 3}}])
    assert cfg.protocol_for(cfg.datasets[1]).budget == 2
    tasks = plan(cfg)
    assert sum(t.dataset.label == "iris" for t in tasks) == 2
    assert sum(t.dataset.label == "wine" for t in tasks) == 3
    run_experiment(cfg, tmp_path / "r", progress=False)
    last = read_results(tmp_path / "r").groupby("dataset").n_labeled.max()
    assert last["iris"] == 6 + 6 and last["wine"] == 6 + 2


def test_later_fields_keep_old_digests_until_used(tmp_path):
    base = {"name": "d", "dataset": "iris", "model": "gaussian_nb",
            "protocol": {"folds": 2, "budget": 4}}
    explicit = {**base, "dataset": {"name": "iris", "rows": 0, "protocol": {}},
                "protocol": {**base["protocol"], "labels": 0, "cap_at_pool": False,
                             "test": "folds", "error_denominator": "tested"}}
    used = {**base, "protocol": {**base["protocol"], "cap_at_pool": True}}
    digest = parse_config(base).digest()
    assert parse_config(explicit).digest() == digest
    assert parse_config(used).digest() != digest
    # the digest of the tracked record, written before these fields existed
    root = Path(__file__).resolve().parents[1]
    meta = json.loads((root / "results/table-002-full/table_002/run.json").read_text())
    assert load_config(root / "configs/table_002.yaml").digest() == meta["config_digest"]


def _split_dataset():
    X, y = load_iris(return_X_y=True)
    split = np.where(np.arange(len(y)) % 3 == 0, "test", "train")
    return make_dataset("iris_split", X, y, split=split)


def test_published_split_is_the_test_set():
    ds = _split_dataset()
    cfg = parse_config({"name": "s", "dataset": "iris", "model": "gaussian_nb",
                        "protocol": {"test": "split", "budget": 5,
                                     "initial": {"method": "per_class", "size": 1}}})
    assert cfg.protocol.n_folds == 1
    ((train, test),) = split_rows(ds, cfg.protocol, derive_seed(0, "folds", "x", 0))
    np.testing.assert_array_equal(test, np.flatnonzero(np.arange(150) % 3 == 0))
    np.testing.assert_array_equal(train, np.flatnonzero(np.arange(150) % 3 != 0))
    task = Task("s", cfg.datasets[0], *cfg.methods[0], 0, 0)
    df = run_task(task, ds, cfg.protocol)
    queried = np.concatenate(df.queried.to_list())
    assert len(queried) == 3 + 5 and not np.isin(queried, test).any()
    # the last evaluation equals a GaussianNB fitted on those rows, tested on the test rows
    nb = GaussianNB().fit(ds.X[queried], ds.y[queried])
    err = np.mean(nb.predict(ds.X[test]) != ds.y[test])
    assert df.test_error.iloc[-1] == pytest.approx(err, abs=1e-12)


def test_split_needs_a_data_set_with_one():
    X, y = load_iris(return_X_y=True)
    cfg = parse_config({"name": "s", "dataset": "iris", "model": "gaussian_nb",
                        "protocol": {"test": "split"}})
    with pytest.raises(UserError, match="train and test rows"):
        split_rows(make_dataset("iris", X, y), cfg.protocol, derive_seed(0, "folds", "x", 0))


def test_unlabeled_rest_with_error_relative_to_the_database():
    """Nguyen & Smeulders 2004's measure, against a hand recomputation: refit on the labeled rows of
    each iteration, count the mistakes on the rows still unlabeled, divide by n."""
    X, y = load_iris(return_X_y=True)
    ds = make_dataset("iris", X, y)
    cfg = parse_config({"name": "u", "dataset": "iris", "model": "gaussian_nb",
                        "protocol": {"test": "unlabeled", "error_denominator": "training",
                                     "budget": 6, "seed": 3,
                                     "initial": {"method": "per_class", "size": 1}}})
    task = Task("u", cfg.datasets[0], *cfg.methods[0], 0, 0)
    df = run_task(task, ds, cfg.protocol)
    assert len(df) == 7
    labeled = np.zeros(150, bool)
    for _, row in df.iterrows():
        labeled[np.asarray(row.queried)] = True
        nb = GaussianNB().fit(X[labeled], y[labeled])
        wrong = np.count_nonzero(nb.predict(X[~labeled]) != y[~labeled])
        assert row.test_error == pytest.approx(wrong / 150, abs=1e-12)
        assert row.test_accuracy == pytest.approx(1 - wrong / 150, abs=1e-12)
    tested = parse_config({**{"name": "u", "dataset": "iris", "model": "gaussian_nb"},
                           "protocol": {"test": "unlabeled", "budget": 6, "seed": 3,
                                        "initial": {"method": "per_class", "size": 1}}})
    df2 = run_task(Task("u", tested.datasets[0], *tested.methods[0], 0, 0), ds, tested.protocol)
    n_tested = 150 - df2.n_labeled.to_numpy()
    np.testing.assert_allclose(df2.test_error * n_tested, df.test_error * 150, atol=1e-9)


def test_unlabeled_rest_must_stay_nonempty():
    X, y = load_iris(return_X_y=True)
    cfg = parse_config({"name": "u", "dataset": "iris", "model": "gaussian_nb",
                        "protocol": {"test": "unlabeled", "labels": 150}})
    with pytest.raises(UserError, match="lower the budget"):
        split_rows(make_dataset("iris", X, y), cfg.protocol, derive_seed(0, "folds", "x", 0))


def test_database_is_stratified_exact_and_shared_by_one_vs_rest(tmp_path):
    X, y = load_iris(return_X_y=True)
    ds = make_dataset("iris", X, y)
    db = draw_database(ds, 61, np.random.SeedSequence(5), "iris")
    assert db.n_samples == 61 and sorted(np.bincount(db.y)) == [20, 20, 21]
    with pytest.raises(UserError, match="rows = 151 exceeds the 150 rows"):
        draw_database(ds, 151, np.random.SeedSequence(5), "iris")
    cfg = _cfg(tmp_path, dataset=[{"name": "iris", "rows": 60, "one_vs_rest": 0},
                                  {"name": "iris", "rows": 60, "one_vs_rest": 2}])
    assert [d.label for d in cfg.datasets] == ["iris-n60-0", "iris-n60-2"]
    a, b = load_datasets(cfg).values()
    np.testing.assert_array_equal(a.X, b.X)                       # one database for both
    assert a.classes == ("rest", "0") and b.classes == ("rest", "2")
    assert a.y.sum() == b.y.sum() == 20


def test_one_vs_rest_on_a_missing_class_is_one_line(tmp_path):
    path = write_config(tmp_path / "c.yaml", dataset={"name": "iris", "one_vs_rest": 7})
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    assert "one_vs_rest class '7' is not a class" in res.output and "0, 1, 2" in res.output
    X, y = load_iris(return_X_y=True)
    with pytest.raises(UserError, match="classes: 0, 1, 2"):
        one_vs_rest(make_dataset("iris", X, y), "9", "iris")


def test_database_larger_than_the_data_is_one_line(tmp_path):
    path = write_config(tmp_path / "c.yaml", dataset={"name": "iris", "rows": 1000})
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and "rows = 1000 exceeds the 150 rows" in res.output


def test_scale_keeps_the_named_data_sets(tmp_path):
    path = write_config(tmp_path / "c.yaml", dataset=["iris", "wine"],
                        scales={"smoke": {"datasets": ["wine"], "budget": 2}})
    cfg = load_config(path, scale="smoke")
    assert [d.label for d in cfg.datasets] == ["wine"] and cfg.protocol.budget == 2
    bad = write_config(tmp_path / "d.yaml", dataset=["iris", "wine"],
                       scales={"smoke": {"datasets": ["wien"]}})
    with pytest.raises(UserError, match="did you mean 'wine'"):
        load_config(bad)


def test_small_classes_are_refused_unless_allowed():
    y = np.repeat([0, 1, 2], [40, 40, 2])
    X = np.random.default_rng(0).normal(size=(len(y), 2))
    ds = make_dataset("small", X, y)
    strict = parse_config({"name": "s", "dataset": "iris", "model": "gaussian_nb",
                           "protocol": {"folds": 5, "budget": 2}})
    with pytest.raises(UserError, match="allow_small_classes"):
        split_rows(ds, strict.protocol, derive_seed(0, "folds", "x", 0))
    lax = parse_config({"name": "s", "dataset": "iris", "model": "gaussian_nb",
                        "protocol": {"folds": 5, "budget": 2, "allow_small_classes": True}})
    parts = split_rows(ds, lax.protocol, derive_seed(0, "folds", "x", 0))
    tests = [test for _, test in parts]
    assert sorted(np.concatenate(tests).tolist()) == list(range(len(y)))
    assert sum(np.isin(np.flatnonzero(y == 2), t).any() for t in tests) == 2
    assert all(abs(np.isin(np.flatnonzero(y == 0), t).sum() - 8) == 0 for t in tests)


def test_yaml_merge_keys_share_dataset_fields(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nmodel: gaussian_nb\n"
                    "dataset:\n  - &std {name: iris, preprocessing: {standardize: global}}\n"
                    "  - {<<: *std, name: wine}\n")
    cfg = load_config(path)
    assert [d.name for d in cfg.datasets] == ["iris", "wine"]
    assert cfg.datasets[1].preprocessing == cfg.datasets[0].preprocessing
    path.write_text("name: m\nmodel: gaussian_nb\ndataset: iris\nmodel: svc\n")
    with pytest.raises(UserError, match="'model' is given twice"):
        load_config(path)


@pytest.mark.parametrize("edit, message", [
    ({"one_vs_rest": 11}, "one_vs_rest class '11' is not a class"),
    ({"rows": 80000}, "rows = 80000 exceeds the 60000 rows"),
    ({"protocol": {"initial": {"method": "random", "size": 1}, "labels": 10}},
     "initial holds 1 row, fewer than the 2 classes"),
])
def test_nguyen2004_bad_input_is_one_line(tmp_path, edit, message):
    """Nguyen & Smeulders 2004's bad input on MNIST (through the mirror, as CI runs it)."""
    import os
    if not os.environ.get("ALPRBF_DATA_MIRROR"):
        pytest.skip("needs the MNIST files: set ALPRBF_DATA_MIRROR")
    spec = {"name": "mnist", "params": {"subset": "train"}, "rows": 1250, "one_vs_rest": 3,
            "protocol": {"initial": {"method": "per_class", "size": 3}, "labels": 44}}
    path = write_config(tmp_path / "c.yaml", dataset={**spec, **edit},
                        protocol={"test": "unlabeled", "error_denominator": "training"})
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_strategy_may_query_in_batches_of_its_own(tmp_path):
    cfg = _cfg(tmp_path, model="gaussian_nb", strategy=[
        "random", {"name": "uncertainty", "params": {"measure": "margin"}, "batch_size": 3}],
        protocol={"folds": 2, "seed": 1, "initial": {"method": "per_class", "size": 2},
                  "budget": 7, "batch_size": 1})
    assert [s.label for s in cfg.strategies] == ["random", "uncertainty-b3"]
    run_experiment(cfg, tmp_path / "r", progress=False)
    for (_, strategy, _), curve in _curves(read_results(tmp_path / "r")).items():
        want = [6, 9, 12, 13] if strategy == "uncertainty-b3" else list(range(6, 14))
        assert curve.n_labeled.tolist() == want


def test_pca_whiten_gives_unit_variance_components():
    from alprbf.datasets import Preprocessing
    X, y = load_iris(return_X_y=True)
    ds = make_dataset("iris", X, y)
    t = Preprocessing(standardize="per_fold", pca=2, pca_whiten=True).fit_fold(
        ds.X, ds.categorical)
    Z = t(ds.X)
    np.testing.assert_allclose(Z.var(axis=0, ddof=1), 1.0, atol=1e-9)


def test_learners_that_use_categorical_columns_get_the_fold_mask():
    from alprbf.engine.protocol import model_params
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=60), rng.integers(0, 3, 60), rng.normal(size=60)])
    y = np.repeat([0, 1], 30)
    ds = make_dataset("mixed", X, y, categorical=[False, True, False])
    cfg = parse_config({"name": "c", "dataset": "iris", "model": [
        {"name": "kernel_svm", "params": {"kernel": "rbf"}}, "gaussian_nb"],
        "protocol": {"folds": 2, "budget": 4, "initial": {"method": "per_class", "size": 3}}})
    svm, nb = (m for m, _ in cfg.methods)
    assert model_params(svm, ds.categorical)["categorical"] == [False, True, False]
    assert "categorical" not in model_params(nb, ds.categorical)
    assert "categorical" not in model_params(svm, np.zeros(3, bool))   # numeric data: as before
    df = run_task(Task("c", cfg.datasets[0], svm, cfg.methods[0][1], 0, 0), ds, cfg.protocol)
    assert np.isfinite(df.test_error).all() and len(df) == 5


def _two_files(tmp_path, test_columns=("a", "b", "c")):
    rng = np.random.default_rng(0)
    train = {"a": rng.normal(size=40), "b": rng.normal(size=40), "c": rng.normal(size=40),
             "cls": np.repeat(["x", "y"], 20)}
    test = {c: rng.normal(size=10) for c in test_columns} | {"cls": np.repeat(["x", "y"], 5)}
    import pandas as pd
    pd.DataFrame(train).to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame(test).to_csv(tmp_path / "test.csv", index=False)
    return {"name": "file", "params": {"path": str(tmp_path / "train.csv"), "target": "cls",
                                       "test_path": str(tmp_path / "test.csv")}}


def test_a_file_data_set_may_bring_its_own_test_set(tmp_path):
    spec = _two_files(tmp_path)
    cfg = _cfg(tmp_path, dataset=spec, model="gaussian_nb", strategy="random",
               protocol={"test": "split", "seed": 1, "labels": 10,
                         "initial": {"method": "per_class", "size": 2}})
    (ds,) = load_datasets(cfg).values()
    assert (ds.split == "test").sum() == 10 and (ds.split == "train").sum() == 40
    run_experiment(cfg, tmp_path / "r", progress=False)
    df = read_results(tmp_path / "r")
    queried = np.concatenate(df.queried.to_list())
    assert np.all(queried < 40)                    # only training rows are ever labeled


@pytest.mark.parametrize("case, message", [
    ("test file with another feature count", "a fixed test set needs the training file's"),
    ("per-data-set budget beyond a fold's pool", "exceeds the pool"),
    ("batch larger than the budget", "batch_size"),
])
def test_reitmaier2016_bad_input_is_one_line(tmp_path, case, message):
    if case.startswith("test file"):
        path = write_config(tmp_path / "c.yaml", dataset=_two_files(tmp_path, ("a", "b")),
                            protocol={"test": "split", "labels": 10,
                                      "initial": {"method": "per_class", "size": 2}})
    elif case.startswith("per-data-set"):
        path = write_config(tmp_path / "c.yaml", dataset=[
            "iris", {"name": "wine", "protocol": {"budget": 500}}])
    else:
        path = write_config(tmp_path / "c.yaml", protocol={
            "folds": 2, "initial": {"method": "per_class", "size": 2}, "budget": 4,
            "batch_size": 5})
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
