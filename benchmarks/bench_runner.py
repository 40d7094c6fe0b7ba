"""Runner speed: --jobs 2 vs --jobs 1 on a 4-fold config, and the runner's own per-query cost.

Run: ``.venv/bin/python benchmarks/bench_runner.py`` (on an otherwise idle machine).

1. Speed-up: the same 4-fold config (SVC + uncertainty sampling on generated waveform data) run
   with ``jobs=1`` and ``jobs=2``; prints both wall times and the ratio.
2. Overhead: a model whose fit and predict cost almost nothing, so the wall time per query is
   what the loop itself costs (bookkeeping, evaluation calls, strategy plumbing).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from alprbf.engine.config import parse_config
from alprbf.engine.runner import run_experiment
from alprbf.models import MODELS, Learner

BASE = {
    "name": "bench",
    "dataset": {"name": "waveform", "params": {"n_samples": 2000}},
    "model": {"name": "svc", "params": {"C": 1.0}},
    "strategy": {"name": "uncertainty", "params": {"measure": "margin"}},
    "protocol": {"folds": 4, "seed": 1, "initial": {"method": "random", "size": 20},
                 "budget": 150},
}


class _Constant(Learner):
    """Predicts class priors of the labeled set: costs ~nothing, isolates the loop's overhead."""

    def fit(self, X, y):
        lab = y[~np.isnan(y)].astype(int)
        self.p_ = np.bincount(lab, minlength=self.n_classes) / max(len(lab), 1)
        return self

    def predict_proba(self, X):
        return np.tile(self.p_, (len(X), 1))


def _timed(cfg, jobs):
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        run_experiment(cfg, Path(d), jobs=jobs, progress=False)
        return time.perf_counter() - t0


def main() -> None:
    cfg = parse_config(BASE)
    _timed(parse_config({**BASE, "protocol": {**BASE["protocol"], "budget": 2}}), 2)  # warm pool
    t1 = _timed(cfg, 1)
    t2 = _timed(cfg, 2)
    print(f"4 folds x {cfg.protocol.budget} queries, SVC + margin on waveform(2000):")
    print(f"  jobs=1 {t1:7.2f} s   jobs=2 {t2:7.2f} s   speed-up {t1 / t2:.2f}x (goal >= 1.6x)")

    if "bench_constant" not in MODELS:
        MODELS.add("bench_constant", _Constant)
    q = 1500
    over = parse_config({**BASE, "model": "bench_constant", "strategy": "random",
                         "dataset": {"name": "waveform", "params": {"n_samples": 4000}},
                         "protocol": {**BASE["protocol"], "folds": 2, "budget": q}})
    t = _timed(over, 1)
    print(f"runner overhead: {1e3 * t / (2 * q):.3f} ms per query "
          f"(trivial model, 2 folds x {q} queries, evaluation every query, pool ~2000)")


if __name__ == "__main__":
    main()
