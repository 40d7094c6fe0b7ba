"""Seconds per query of active PRBF and QBC for PRBF, and the projected cost of `make table-000`.

Runs the real active-learning loop (:func:`alprbf.engine.protocol.run_task`, one BLAS thread as in
the runner) on fold 0 of each (dataset, method) of ``configs/table_000.yaml`` for the first
``--queries`` queries, then

* reports the mean seconds per query (fit + query + evaluation) over the measured window,
* extrapolates one full fold (``budget`` queries) with a straight line fitted to the per-query
  times (the network grows, so later queries cost more; the line captures that trend -- it is
  an extrapolation unless ``--queries`` equals the budget),
* projects the wall time of the whole table: total task-seconds (every fold costs about the
  same) divided by the workers, but never less than the longest single task.

Usage (needs the dataset mirror)::

    ALPRBF_DATA_MIRROR=/path/to/mirror nice python benchmarks/bench_active.py \
        --datasets pendigits --queries 30
    python benchmarks/bench_active.py --datasets segmentation,waveform,optdigits,pendigits \
        --queries 15 --workers 2,16
    python benchmarks/bench_active.py --methods 'incremental_ssl_prbf_literal / qbc_prbf' \
        --task-threads 2      # one task using both cores (QBC members in parallel)
    python benchmarks/bench_active.py --checkpoint COPY_OF_A_LATE_CHECKPOINT.pkl --queries 5 \
        --task-threads 2      # the late-fold regime (150-290 nodes), resumed from a checkpoint

Goals (issue 5): active PRBF <= 0.5 s and QBC <= 3 s per query on pen digits on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from alprbf.engine.checkpoint import Checkpoint
from alprbf.engine.config import load_config
from alprbf.engine.protocol import run_task
from alprbf.engine.runner import load_datasets, plan

ROOT = Path(__file__).resolve().parents[1]


def measure(cfg, datasets, labels, n_queries, threads=1):
    proto = replace(cfg.protocol, budget=n_queries)
    out = []
    tasks = [t for t in plan(cfg) if t.fold == 0 and t.repetition == 0
             and t.dataset.label in labels]
    for t in tasks:
        ds = datasets[t.dataset.label]
        t0, c0 = time.perf_counter(), time.process_time()
        with threadpool_limits(limits=1):
            df = run_task(t, ds, proto, threads=threads)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        df = df.sort_values("iteration")
        per = (df["fit_seconds"] + df["query_seconds"]).to_numpy()[1:]   # one entry per query
        # evaluation (predict on test + train) is part of the wall time but not of per:
        overhead = max(wall - float((df["fit_seconds"] + df["query_seconds"]).sum()), 0.0)
        out.append(dict(dataset=t.dataset.label, method=f"{t.model.label} / {t.strategy.label}",
                        n_queries=n_queries, wall=wall, cpu=cpu, per_query=per,
                        eval_per_iter=overhead / (n_queries + 1),
                        first_fit=float(df["fit_seconds"].iloc[0]),
                        final_error=float(df["test_error"].iloc[-1]),
                        final_size=df["model_size"].iloc[-1]))
    return out


def extrapolate(rec, budget):
    """Seconds for one fold of ``budget`` queries from the measured per-query times."""
    per = rec["per_query"] + rec["eval_per_iter"]
    it = np.arange(1, len(per) + 1)
    if len(per) >= 3:
        b, a = np.polyfit(it, per, 1)
        b = max(b, 0.0)
    else:
        a, b = float(np.mean(per)), 0.0
    full = np.arange(1, budget + 1)
    return rec["first_fit"] + float(np.sum(np.maximum(a + b * full, 0.0))), a, b


class _Enough(Exception):
    pass


def from_checkpoint(cfg, path: Path, n_queries: int, threads: int) -> None:
    """Time ``n_queries`` queries of a task resumed from one of its checkpoints.

    A checkpoint written late in a fold (``OUT/checkpoints/<task>.pkl`` of a running
    ``alprbf run``; copy it, it is deleted when the task ends) holds the real late-fold state:
    a network of 150-290 nodes, the committee's priors, the labels so far.  The file is read,
    never written or deleted.
    """
    payload = pickle.loads(path.read_bytes())   # layout: see alprbf.engine.checkpoint
    state = payload["state"]
    task_id = state.task_id
    task = next((t for t in plan(cfg) if t.task_id == task_id), None)
    if task is None:
        raise SystemExit(f"{path}: task {task_id} is not in {cfg.name}")
    cfg = replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label == task.dataset.label))
    ds = load_datasets(cfg)[task.dataset.label]
    stamps = []

    def on_query(n):
        stamps.append(time.perf_counter())
        if len(stamps) > n_queries:   # the first call reports the restored queries
            raise _Enough

    # never saves (every_seconds = inf), and run_task leaves clearing to its caller
    ck = Checkpoint(path, payload["key"], every_seconds=float("inf"))
    c0 = time.process_time()
    with threadpool_limits(limits=1), contextlib.suppress(_Enough):
        run_task(task, ds, cfg.protocol, on_query=on_query, checkpoint=ck, threads=threads)
    cpu = time.process_time() - c0
    per = np.diff(stamps)
    size = state.model.model_size()
    done = cfg.protocol.budget - state.remaining
    print(f"{task_id}: resumed after {done} queried labels ({size} nodes), "
          f"{threads} thread(s): {np.mean(per):.2f} s per query (fit + query + evaluation; "
          f"{', '.join(f'{x:.1f}' for x in per)}), CPU {cpu / len(per):.2f} s per query")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "table_000.yaml"))
    ap.add_argument("--datasets", default="pendigits")
    ap.add_argument("--methods", default="",
                    help="comma-separated method labels 'model / strategy' (default: all)")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--workers", default="2,16")
    ap.add_argument("--task-threads", type=int, default=1,
                    help="threads per task inside a query (QBC members in parallel); the "
                         "projection assumes one worker per core, i.e. 1")
    ap.add_argument("--checkpoint", type=Path, default=None,
                    help="time --queries queries of the task resumed from this checkpoint "
                         "(late-fold regime) instead of a fold's first queries")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.checkpoint is not None:
        from_checkpoint(cfg, args.checkpoint, args.queries, args.task_threads)
        return
    labels = set(args.datasets.split(","))
    if args.methods:
        keep = {m.strip() for m in args.methods.split(",")}
        cfg = replace(cfg, methods=tuple((m, s) for m, s in cfg.methods
                                         if f"{m.label} / {s.label}" in keep))
    cfg = replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label in labels))
    datasets = load_datasets(cfg)
    budget = cfg.protocol.budget
    recs = measure(cfg, datasets, labels, args.queries, args.task_threads)
    print(f"{'dataset':14s} {'method':40s} {'fit+q':>7s} {'s/query':>8s} {'last10':>8s} "
          f"{'cpu/q':>7s} {'fold(s)':>9s} {'err':>6s} size")
    total = longest = 0.0
    for r in recs:
        fold, a, b = extrapolate(r, budget)
        r["fold_seconds"] = fold
        total += fold * cfg.protocol.folds * cfg.protocol.repetitions
        longest = max(longest, fold)
        per = r["per_query"] + r["eval_per_iter"]
        print(f"{r['dataset']:14s} {r['method']:40s} {np.mean(r['per_query']):7.3f} "
              f"{np.mean(per):8.3f} "
              f"{np.mean(per[-10:]):8.3f} {r['cpu'] / r['n_queries']:7.3f} {fold:9.0f} "
              f"{r['final_error']:6.3f} "
              f"{r['final_size']}  (trend {a:.3f} + {b:.4f} * query)")
    print(f"\nmeasured {args.queries} queries per task with {args.task_threads} thread(s) per "
          f"task; folds extrapolated to {budget} queries")
    print("fit+q: wall seconds of fit + query selection per query; s/query: plus the evaluation "
          "(test, train and labeled accuracy); cpu/q: this process's CPU seconds per query "
          "(one BLAS thread, evaluation included), which other load does not inflate")
    print(f"task-seconds for the measured datasets/methods x {cfg.protocol.folds} folds: "
          f"{total:.0f} s = {total / 3600:.2f} h")
    for w in (int(x) for x in args.workers.split(",")):
        wall = max(total / w, longest)
        print(f"projected wall time on {w:2d} workers: {wall / 3600:.2f} h "
              f"(longest single task {longest / 3600:.2f} h)")


if __name__ == "__main__":
    main()
