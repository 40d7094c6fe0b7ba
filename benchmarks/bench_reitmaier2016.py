"""Per-query cost of Reitmaier et al. 2016's paradigms in the real loop, its growth with the pool,
and the projected wall time of `make table-003 SCALE=full`.

Runs :func:`alprbf.engine.protocol.run_task` (one BLAS thread, as the runner's workers) on fold 0 of
each (data set, method) of ``configs/table_003.yaml`` for the first ``--rounds`` rounds (a round
= one batch of queries, 5 in table_003, then one refit), and reports

* the setup (the density-based initial set of Alg. 2: one VI fit of the pool, and the data
  split), the first fit (density model with its representativity grid, refinement, inner-CV
  tuning) and the mean seconds per round and per query (fit + selection + evaluation of the
  round, from the task file's timing columns);
* with ``--pool-sizes``, the same on pools of those sizes drawn from the data set (stratified,
  ``max_rows`` = pool / (1 - 1 / folds)), and the ratio of the per-query cost between the
  largest and the smallest pool against the ratio of the pool sizes (linear growth: equal);
* one full fold extrapolated by a straight line fitted to the per-round times (the labeled set
  grows, so later rounds cost more; an extrapolation unless ``--rounds`` covers the budget),
  and the projected wall time of the measured cells x 5 folds on ``--workers`` workers: total
  task-seconds / workers, never less than the longest task.

Usage (needs the dataset mirror)::

    ALPRBF_DATA_MIRROR=/path/to/mirror nice python benchmarks/bench_reitmaier2016.py \\
        --datasets satimage --methods 'rwm / four_ds,rbf / uncertainty_svm' --rounds 10
    python benchmarks/bench_reitmaier2016.py --datasets satimage --rounds 6 \\
        --methods 'rwm / four_ds,rbf / uncertainty_svm' --pool-sizes 1000,2000,4000
    python benchmarks/bench_reitmaier2016.py --datasets all --rounds 4 --workers 2,16   # projection
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from alprbf.engine.config import load_config
from alprbf.engine.protocol import run_task
from alprbf.engine.runner import load_datasets, plan, validate

ROOT = Path(__file__).resolve().parents[1]


def measure(cfg, n_rounds: int) -> list[dict]:
    """Fold 0 of every (data set, method) of ``cfg`` for ``n_rounds`` rounds."""
    datasets = load_datasets(cfg)
    full_queries = validate(cfg, datasets)
    out = []
    for t in plan(cfg):
        if t.fold or t.repetition:
            continue
        p = cfg.protocol_for(t.dataset)
        batch = t.strategy.batch_size or p.batch_size
        proto = replace(p, labels=0, cap_at_pool=False,
                        budget=min(n_rounds * batch, full_queries[t.dataset.label]))
        t0, c0 = time.perf_counter(), time.process_time()
        with threadpool_limits(limits=1):
            df = run_task(t, datasets[t.dataset.label], proto)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        df = df.sort_values("iteration")
        steps = (df["fit_seconds"] + df["query_seconds"] + df["eval_seconds"]).to_numpy()
        setup = max(wall - float(steps.sum()), 0.0)   # the initial set (Alg. 2), data split
        out.append(dict(
            dataset=t.dataset.label, method=f"{t.model.label} / {t.strategy.label}",
            pool=int(len(datasets[t.dataset.label].y) * (1 - 1 / p.folds)),
            batch=batch, setup=setup, first_fit=float(steps[0]), per_round=steps[1:], cpu=cpu,
            rounds_full=math.ceil(full_queries[t.dataset.label] / batch)))
    return out


def extrapolate(rec: dict) -> float:
    """Seconds of one fold: the first fit plus a straight line over the per-round times."""
    per = rec["per_round"]
    r = np.arange(1, len(per) + 1)
    a, b = (float(np.mean(per)), 0.0) if len(per) < 3 else np.polyfit(r, per, 1)[::-1]
    full = np.arange(1, rec["rounds_full"] + 1)
    return rec["setup"] + rec["first_fit"] + float(np.sum(np.maximum(a + max(b, 0.0) * full,
                                                                      0.0)))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "table_003.yaml"))
    ap.add_argument("--datasets", default="satimage", help="comma-separated labels, or all")
    ap.add_argument("--methods", default="rwm / four_ds,rbf / uncertainty_svm",
                    help="comma-separated 'model / strategy' labels, or all")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--pool-sizes", default="", help="e.g. 1000,2000,4000")
    ap.add_argument("--workers", default="2,16")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.datasets != "all":
        keep = set(args.datasets.split(","))
        cfg = replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label in keep))
    if args.methods != "all":
        keep = {m.strip() for m in args.methods.split(",")}
        cfg = replace(cfg, methods=tuple((m, s) for m, s in cfg.methods
                                         if f"{m.label} / {s.label}" in keep))
    header = (f"{'dataset':12s} {'method':24s} {'pool':>6s} {'setup':>7s} {'first fit':>10s} "
              f"{'s/round':>8s} {'s/query':>8s} {'last':>7s} {'fold (s)':>9s}")
    if args.pool_sizes:
        sizes = [int(s) for s in args.pool_sizes.split(",")]
        by = {}
        print(header)
        for n in sizes:
            scaled = replace(cfg, protocol=replace(
                cfg.protocol, max_rows=int(round(n / (1 - 1 / cfg.protocol.folds)))))
            for r in measure(scaled, args.rounds):
                by.setdefault((r["dataset"], r["method"]), []).append(r)
                _print(r)
        print("\nper-query cost, largest / smallest pool (linear growth = the pool ratio "
              f"{sizes[-1] / sizes[0]:.1f}):")
        for (d, m), rs in by.items():
            q = [np.mean(r["per_round"]) / r["batch"] for r in rs]
            print(f"  {d} {m}: " + ", ".join(f"{r['pool']} rows {x * 1e3:.1f} ms"
                                            for r, x in zip(rs, q, strict=True))
                  + f"; ratio {q[-1] / q[0]:.2f} for pools x{rs[-1]['pool'] / rs[0]['pool']:.1f}")
        return
    print(header)
    recs = measure(cfg, args.rounds)
    total = longest = 0.0
    for r in recs:
        fold = _print(r)
        total += fold * cfg.protocol.folds * cfg.protocol.repetitions
        longest = max(longest, fold)
    print(f"\nmeasured {args.rounds} rounds per task (one BLAS thread); folds extrapolated "
          "to the full budget by a straight line over the measured rounds")
    print(f"task-seconds of the measured cells x {cfg.protocol.folds} folds: {total:.0f} s = "
          f"{total / 3600:.2f} h")
    for w in (int(x) for x in args.workers.split(",")):
        print(f"projected wall time on {w:2d} workers: {max(total / w, longest) / 3600:.2f} h "
              f"(longest single task {longest / 3600:.2f} h)")


def _print(r: dict) -> float:
    fold = extrapolate(r)
    per = r["per_round"]
    print(f"{r['dataset']:12s} {r['method']:24s} {r['pool']:6d} {r['setup']:7.2f} "
          f"{r['first_fit']:10.2f} "
          f"{np.mean(per):8.3f} {np.mean(per) / r['batch']:8.4f} {per[-1]:7.3f} {fold:9.0f}")
    return fold


if __name__ == "__main__":
    main()
