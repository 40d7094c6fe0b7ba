"""Config parsing: grid expansion, explicit methods, labels, scales, digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from alprbf.engine.config import load_config, parse_config
from alprbf.engine.runner import plan
from alprbf.errors import UserError

BASE = {"name": "c", "dataset": ["iris", "wine"], "protocol": {"folds": 3, "repetitions": 2}}


def test_grid_expands_every_combination():
    cfg = parse_config({**BASE, "model": ["svc", "gaussian_nb"],
                        "strategy": ["random", "uncertainty", "posterior_ratio"]})
    assert len(cfg.methods) == 6
    assert len(plan(cfg)) == 2 * 6 * 2 * 3


def test_explicit_methods_pairs():
    cfg = parse_config({**BASE, "methods": [
        {"model": "gaussian_nb", "strategy": "random"},
        {"model": "gaussian_nb", "strategy": {"name": "uncertainty"}},
        {"model": {"name": "svc", "params": {"C": 2.0}}, "strategy": "uncertainty"}]})
    assert [(m.label, s.label) for m, s in cfg.methods] == [
        ("gaussian_nb", "random"), ("gaussian_nb", "uncertainty"), ("svc", "uncertainty")]
    assert len(plan(cfg)) == 2 * 3 * 2 * 3


def test_same_name_other_params_gets_distinct_labels():
    cfg = parse_config({**BASE, "model": [{"name": "svc", "params": {"C": 1.0}},
                                          {"name": "svc", "params": {"C": 10.0}}]})
    labels = [m.label for m in cfg.models]
    assert len(set(labels)) == 2 and all(lab.startswith("svc-") for lab in labels)


def test_duplicate_explicit_labels_refused():
    with pytest.raises(UserError, match="share the label"):
        parse_config({**BASE, "model": [{"name": "svc", "label": "m"},
                                        {"name": "gaussian_nb", "label": "m"}]})


def test_scale_overrides_protocol_and_changes_digest():
    cfg = parse_config({**BASE, "model": "svc", "scales": {"smoke": {"folds": 2}}})
    smoke = cfg.with_scale("smoke")
    assert smoke.protocol.folds == 2 and smoke.protocol.repetitions == 2
    assert smoke.digest() != cfg.digest()
    assert cfg.with_scale("full") is cfg
    assert parse_config({**BASE, "model": "svc", "scales": {"smoke": {"folds": 2}}}).digest() \
        == cfg.digest()


def test_preprocessing_is_part_of_the_dataset_identity():
    a = parse_config({**BASE, "dataset": {"name": "iris"}, "model": "svc"})
    b = parse_config({**BASE, "dataset": {"name": "iris",
                                          "preprocessing": {"standardize": "none"}},
                      "model": "svc"})
    assert a.datasets[0] != b.datasets[0] and a.digest() != b.digest()


def test_scale_can_shrink_models_and_data():
    cfg = parse_config({**BASE, "model": [{"name": "svc", "label": "big", "params": {"C": 1.0}},
                                          "gaussian_nb"],
                        "scales": {"smoke": {"folds": 2, "max_rows": 60,
                                             "model_params": {"big": {"C": 5.0}}}}})
    smoke = cfg.with_scale("smoke")
    assert [m.params for m in smoke.models] == [{"C": 5.0}, {}]
    assert [m.label for m in smoke.models] == ["big", "gaussian_nb"]
    from alprbf.engine.runner import load_datasets
    ds = load_datasets(smoke)
    assert ds["iris"].n_samples == 60 and sorted(set(ds["iris"].y)) == [0, 1, 2]
    assert load_datasets(cfg)["iris"].n_samples == 150
    with pytest.raises(UserError, match="no model labelled 'bgi'"):
        parse_config({**BASE, "model": {"name": "svc", "label": "big"},
                      "scales": {"smoke": {"model_params": {"bgi": {"C": 1}}}}}).with_scale("smoke")


def test_digest_does_not_depend_on_where_the_configs_are(tmp_path):
    import shutil

    root = Path(__file__).resolve().parents[1] / "configs"
    shutil.copytree(root, tmp_path / "configs")
    for name in ("table_000.yaml", "table_002.yaml"):
        here = load_config(root / name)
        there = load_config(tmp_path / "configs" / name)
        assert here.reference != there.reference
        assert here.digest() == there.digest()


def test_initial_density_options_of_m0():
    m0 = {**BASE, "model": "svc", "protocol": {**BASE["protocol"],
                                               "initial": {"method": "density_m0", "size": 8}}}
    plain = parse_config(m0)
    empty = parse_config({**m0, "protocol": {**m0["protocol"], "initial": {
        "method": "density_m0", "size": 8, "density": {}}}})
    rows = parse_config({**m0, "protocol": {**m0["protocol"], "initial": {
        "method": "density_m0", "size": 8,
        "density": {"representativity": "held_out_rows"}}}})
    assert plain.protocol.initial.density == {} and plain.digest() == empty.digest()
    assert rows.protocol.initial.density == {"representativity": "held_out_rows"}
    assert rows.digest() != plain.digest()
    assert rows.with_scale("smoke").protocol.initial == rows.protocol.initial   # re-parsed
    for ini, match in (({"method": "density", "size": 8, "density": {"selection": "min"}},
                        "density_m0 method only"),
                       ({"method": "density_m0", "size": 8, "density": {"representativity": "x"}},
                        "representativity"),
                       ({"method": "density_m0", "size": 8, "density": {"bandwidth": 1}},
                        "bandwidth")):
        with pytest.raises(UserError, match=match):
            parse_config({**m0, "protocol": {**m0["protocol"], "initial": ini}})
