"""Every config shipped in ``configs/`` parses, at every scale it defines, into a non-empty plan
with unique task ids (a typo in a model parameter or a scale fails here, not hours into a run).
Data sets are not loaded: that needs the mirror."""

import dataclasses
from pathlib import Path

import pytest

from alprbf.engine.config import load_config
from alprbf.engine.runner import plan

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SHIPPED = sorted(p for p in CONFIGS.rglob("*.yaml") if "references" not in p.parts)


def test_the_configs_folder_is_found():
    assert len(SHIPPED) >= 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_shipped_config_plans_at_every_scale(path):
    cfg = load_config(path)
    for scale in ["full", *cfg.scales]:
        tasks = plan(cfg.with_scale(scale))
        assert tasks, f"{path.name} at scale {scale} plans no task"
        ids = [t.task_id for t in tasks]
        assert len(set(ids)) == len(ids), f"{path.name} at scale {scale} repeats task ids"


TIE_RULES = ("first", "default_closest", "grid_centre", "largest")


@pytest.mark.parametrize("rule", TIE_RULES)
def test_tie_rule_configs_are_the_corrected_config_but_for_the_rule(rule):
    """Reitmaier et al. 2016's tie-rule sensitivity runs the corrected pipeline with only the
    tie rule changed: each config's methods and protocol equal the corrected config's (the
    former versions lagged behind its decisions 0306-0311 unnoticed)."""
    corrected = load_config(CONFIGS / "experiments" / "reitmaier2016_corrected.yaml")
    tie = load_config(CONFIGS / "experiments" / f"reitmaier2016_tie_rules_{rule}.yaml")
    assert tie.protocol == corrected.protocol
    svms = [(m, s) for m, s in corrected.methods if m.name == "kernel_svm"]
    assert len(tie.methods) == len(svms) == 6
    for (model, strategy), (ours, theirs) in zip(tie.methods, svms, strict=True):
        assert model.params["tie_rule"] == rule
        assert {**model.params, "tie_rule": None} == {**ours.params, "tie_rule": None}
        assert (model.name, model.label, model.seed_key, model.seed_scope, strategy) == \
            (ours.name, ours.label, ours.seed_key, ours.seed_scope, theirs)
    assert {d.label for d in tie.datasets} <= {d.label for d in corrected.datasets}
    for d in tie.datasets:
        same = next(c for c in corrected.datasets if c.label == d.label)
        assert d.preprocessing == same.preprocessing


def test_reading_0312_is_the_corrected_config_but_for_m0():
    """Decision 0312 runs the corrected pipeline with only M0's search size and component floor
    changed, in every kernel SVM and in Algorithm 2 alike: its methods, data sets and protocol
    equal the corrected config's but for those two options."""
    corrected = load_config(CONFIGS / "experiments" / "reitmaier2016_corrected.yaml")
    reading = load_config(CONFIGS / "experiments" / "reitmaier2016_m0_0312.yaml")
    change = {"search_rows": 0, "component_floor": "full_rank"}

    def changed(params):
        return {**params, "density": {**params["density"], **change}}

    assert reading.datasets == corrected.datasets
    assert reading.protocol.initial.density == changed({"density":
                                                        corrected.protocol.initial.density})[
        "density"]
    assert corrected.protocol.initial.density["search_rows"] == 1000
    assert reading.protocol == corrected.protocol.__class__(
        **{**vars(corrected.protocol),
           "initial": corrected.protocol.initial.__class__(
               **{**vars(corrected.protocol.initial),
                  "density": reading.protocol.initial.density})})
    assert len(reading.methods) == len(corrected.methods) == 8
    for (model, strategy), (ours, theirs) in zip(reading.methods, corrected.methods, strict=True):
        if model.name == "kernel_svm":
            assert model.params == changed(ours.params)
        else:
            assert model.params == ours.params
        assert (model.name, model.label, model.seed_key, model.seed_scope, strategy) == \
            (ours.name, ours.label, ours.seed_key, ours.seed_scope, theirs)


def test_reading_0313_is_the_0312_config_on_pima_with_zeros_missing():
    """Decision 0313 changes only pima's data (its missing-value zeros read as missing): its
    methods and protocol equal decision 0312's config."""
    base = load_config(CONFIGS / "experiments" / "reitmaier2016_m0_0312.yaml")
    reading = load_config(CONFIGS / "experiments" / "reitmaier2016_0313_pima_zeros.yaml")
    assert reading.methods == base.methods
    assert reading.protocol == base.protocol
    (pima,) = reading.datasets
    twin = next(d for d in base.datasets if d.label == "pima")
    assert pima.params == {**twin.params, "zeros_missing": True}
    assert (pima.name, pima.label, pima.preprocessing) == \
        (twin.name, twin.label, twin.preprocessing)


def test_reading_0314_is_the_0313_config_with_missing_values_drawn():
    """Decision 0314 changes only how pima's missing values are filled (drawn, not one median
    per column): everything else equals decision 0313's config."""
    base = load_config(CONFIGS / "experiments" / "reitmaier2016_0313_pima_zeros.yaml")
    reading = load_config(CONFIGS / "experiments" / "reitmaier2016_0314_pima_draws.yaml")
    assert (reading.methods, reading.protocol) == (base.methods, base.protocol)
    (pima,), (twin,) = reading.datasets, base.datasets
    assert (pima.name, pima.label, pima.params) == (twin.name, twin.label, twin.params)
    assert twin.preprocessing.missing == "impute"
    assert pima.preprocessing == dataclasses.replace(twin.preprocessing, missing="draw")
