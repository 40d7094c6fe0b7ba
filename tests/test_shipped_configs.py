"""Every config shipped in ``configs/`` parses, at every scale it defines, into a non-empty plan
with unique task ids (a typo in a model parameter or a scale fails here, not hours into a run).
Data sets are not loaded: that needs the mirror."""

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
