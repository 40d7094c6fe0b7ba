"""Per-round cost of Reitmaier et al. 2016's SVM paradigms with and without what a LAP fit keeps
(issue 50).

Runs :func:`alprbf.engine.protocol.run_task` (one BLAS thread) on fold 0 of each (data set, method)
of a config (default ``configs/experiments/reitmaier2016_corrected.yaml``: Random and US one query
per round) for the first ``--rounds`` rounds in three modes, interleaved and repeated in one
process so that the machine's load weighs on them alike:

* ``plain``: :attr:`KernelSVC.memoize` off, the code before issue 50's cost work;
* ``memo``: the default, exact (the rows must equal ``plain``'s: checked);
* ``columns``: the memo and ``lap_column_cache=True`` (LAP only; equal to round-off: the
  largest difference of the recorded columns is shown).

Reports the first fit (tuning included) and the mean seconds per later round (fit + query +
evaluation, from the task file's timing columns), each mode's median over ``--repeats``, and
the ratios to ``plain``.  ``--fixed`` skips what is paid once per task (the density-based
initial set, the inner-CV tuning) to time rounds at a larger labeled set: a per-class random
initial set of ``--start`` rows and the parameters the corrected tie rule falls back to
(``gamma = 1 / d``, ``gamma_I = gamma_A``).

Usage (needs the dataset mirror)::

    ALPRBF_DATA_MIRROR=/path/to/mirror OMP_NUM_THREADS=1 python benchmarks/bench_lap_cache.py \\
        --datasets vowel --rounds 50
    python benchmarks/bench_lap_cache.py --datasets satimage --fixed --start 250 --rounds 5
    python benchmarks/bench_lap_cache.py --datasets vowel --methods 'rwm / four_ds' --rounds 10
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from alprbf.engine.config import Initial, load_config
from alprbf.engine.protocol import run_task
from alprbf.engine.runner import load_datasets, plan, validate
from alprbf.svm_kernels.svm import KernelSVC

ROOT = Path(__file__).resolve().parents[1]
MODES = ("plain", "memo", "columns")
TIMING = ("fit_seconds", "query_seconds", "eval_seconds")


def _task_config(cfg, dataset: str, method: str, fixed: bool, start: int):
    cfg = replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label == dataset),
                  methods=tuple((m, s) for m, s in cfg.methods
                                if f"{m.label} / {s.label}" == method))
    if not cfg.datasets or not cfg.methods:
        raise SystemExit(f"no {dataset!r} / {method!r} in the config")
    if fixed:
        model, strategy = cfg.methods[0]
        params = dict(model.params, gamma_I_grid=[1.0], gamma_A_grid=[1.0], C_grid=[1.0],
                      alpha=1.0, beta=1.0)
        cfg = replace(cfg, methods=((replace(model, params=params), strategy),))
    return cfg


def run(cfg, mode: str, rounds: int, fixed: bool, start: int) -> pd.DataFrame:
    """Fold 0 of the one task of ``cfg`` for ``rounds`` rounds in ``mode``."""
    datasets = load_datasets(cfg)
    full = validate(cfg, datasets)
    (task,) = [t for t in plan(cfg) if t.fold == 0 and t.repetition == 0]
    ds = datasets[task.dataset.label]
    p = cfg.protocol_for(task.dataset)
    if fixed:
        d = ds.X.shape[1]
        params = dict(task.model.params, gamma=1.0 / d)
        task = replace(task, model=replace(task.model, params=params))
        p = replace(p, initial=Initial(method="per_class", size=max(1, start // ds.n_classes)))
    if task.model.params.get("kernel") == "lap":     # whatever the config says
        task = replace(task, model=replace(task.model, params=dict(
            task.model.params, lap_column_cache=mode == "columns")))
    batch = task.strategy.batch_size or p.batch_size
    budget = min(rounds * batch, full[task.dataset.label])
    p = replace(p, labels=0, cap_at_pool=False, budget=budget)
    KernelSVC.memoize = mode != "plain"
    try:
        with threadpool_limits(limits=1):
            return run_task(task, ds, p).sort_values("iteration").reset_index(drop=True)
    finally:
        KernelSVC.memoize = True


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "experiments" /
                                            "reitmaier2016_corrected.yaml"))
    ap.add_argument("--datasets", default="vowel", help="comma-separated labels")
    ap.add_argument("--methods", default="lap / uncertainty_svm",
                    help="comma-separated 'model / strategy' labels")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--fixed", action="store_true",
                    help="fixed parameters and a per-class random initial set of --start rows")
    ap.add_argument("--start", type=int, default=250)
    args = ap.parse_args(argv)
    base = load_config(args.config)
    modes = args.modes.split(",")
    print(f"{'dataset':10s} {'method':22s} {'mode':8s} {'labels':>9s} {'first fit':>10s} "
          f"{'s/round':>8s} {'x plain':>8s} {'rows vs plain':>14s}")
    for dataset in args.datasets.split(","):
        for method in (m.strip() for m in args.methods.split(",")):
            cfg = _task_config(base, dataset, method, args.fixed, args.start)
            lap = cfg.methods[0][0].params.get("kernel") == "lap"
            use = [m for m in modes if lap or m != "columns"]
            first = {m: [] for m in use}
            per = {m: [] for m in use}
            frames = {}
            for _ in range(args.repeats):        # interleaved: the load weighs on all alike
                for mode in use:
                    t0 = time.perf_counter()
                    df = run(cfg, mode, args.rounds, args.fixed, args.start)
                    wall = time.perf_counter() - t0
                    steps = df[list(TIMING)].sum(axis=1).to_numpy()
                    first[mode].append(float(steps[0]))
                    per[mode].append(float(np.mean(steps[1:])) if len(steps) > 1 else wall)
                    frames[mode] = df
            ref_first, ref_per = np.median(first["plain"]), np.median(per["plain"])
            for mode in use:
                df = frames[mode]
                same = _compare(frames["plain"], df)
                f, r = np.median(first[mode]), np.median(per[mode])
                print(f"{dataset:10s} {method:22s} {mode:8s} "
                      f"{int(df.n_labeled.iloc[0]):4d}-{int(df.n_labeled.iloc[-1]):<4d} "
                      f"{f:10.2f} {r:8.3f} {r / ref_per:8.3f} {same:>14s}"
                      f"   (first fit x{f / ref_first:.3f}; per round: "
                      + ", ".join(f"{x:.3f}" for x in per[mode]) + ")")


def _compare(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """'identical', or the largest difference of a float column (rows otherwise equal)."""
    cols = [c for c in a.columns if c not in TIMING]
    if a[cols].equals(b[cols]):
        return "identical"
    worst = 0.0
    for c in cols:
        if a[c].equals(b[c]):
            continue
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind != "f" or y.dtype.kind != "f":
            return f"differ: {c}"
        worst = max(worst, float(np.nanmax(np.abs(x - y), initial=0.0)))
    return f"max diff {worst:.1e}"


if __name__ == "__main__":
    main()
