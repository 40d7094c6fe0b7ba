"""Shared fixtures: small configs written into tmp dirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from .session_cache import session_dir

ROOT = Path(__file__).resolve().parents[1]


def write_config(path: Path, **overrides) -> Path:
    """Write a small, fast config (iris, two models, two strategies) with overrides."""
    cfg = {
        "name": "tiny",
        "dataset": {"name": "iris"},
        "model": ["gaussian_nb", {"name": "logistic_regression", "params": {"C": 1.0}}],
        "strategy": ["random", {"name": "uncertainty", "params": {"measure": "entropy"}}],
        "protocol": {"folds": 2, "seed": 7, "initial": {"method": "per_class", "size": 2},
                     "budget": 6, "batch_size": 2},
    }
    for key, value in overrides.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "tiny.yaml")


@pytest.fixture(autouse=True)
def _single_thread_blas(monkeypatch):
    # tests run beside each other on small machines: keep BLAS single-threaded
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, "1"))


@pytest.fixture(scope="session")
def session_cache_dir(tmp_path_factory) -> Path:
    """A directory every xdist worker of the session shares, for values computed once
    (:mod:`tests.session_cache`)."""
    return session_dir(tmp_path_factory)
