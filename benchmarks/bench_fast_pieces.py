"""What each fast piece of alprbf.prbf buys on a real task: the task with every piece, with
one piece replaced by its plain path, and on the reference path (``ALPRBF_FAST=0``).

One process runs the task (its first ``--queries`` queries, as ``alprbf check-record
--queries`` does) under every variant in turn, ``--repeat`` rounds, the order rotated from
round to round so that a slow spell of the machine weighs on every variant alike; each
variant's time is reported as a ratio to the all-pieces run *of the same round* (median over
the rounds), and its rows are compared with the all-pieces rows (timing columns aside).

Variants (each removes one piece and puts the plain path in its place):

* ``reference``: the switch off (every piece removed: :mod:`alprbf.prbf.reference`);
* ``-normalize``: the compiled normalisation (with the blocked E-step, which needs it)
  replaced by the reference's NumPy expressions;
* ``-blocked``: whole E-steps between M-steps (no :mod:`~alprbf.prbf.fast.blocked`);
* ``-sparse_moments``: the BLAS moments product in every block;
* ``-compaction``: no compacted blocks at all (exponentials of every entry; no sparse
  moments, which need the compaction);
* ``-vector_compress``: the one-entry compaction loop instead of the LLVM
  ``vector.compress`` intrinsic (:mod:`~alprbf.prbf.fast.compress`);
* ``-exp``: NumPy's ``exp`` instead of the compiled copy of the C library's;
* ``-far_rows``: the far rows' log densities by NumPy;
* ``-sparse_variance``: the collapsed components' squares by NumPy's product.

With ``--committee DATASET:NODES:LABELS`` the unit timed is one QBC committee (five members
trained by EM one after the other, 97 % of a QBC fold's time) of a late-fold network that
``bench_committee.py --dataset`` builds: the late regime a short prefix of a task does not
reach.

Usage (pinned kernels, as every ``alprbf`` command; one BLAS thread)::

    ALPRBF_DATA_MIRROR=... python benchmarks/bench_fast_pieces.py configs/table_000.yaml \
        'pendigits__incremental_ssl_prbf_literal__qbc_prbf__r0__f0' --queries 30 --repeat 2
    python benchmarks/bench_fast_pieces.py --committee pendigits:270:350 --repeat 3
"""

from __future__ import annotations

from alprbf.engine import cpu

cpu.pin_kernels()     # before NumPy is imported, as the command line does

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import alprbf.prbf._em as em  # noqa: E402
import alprbf.prbf.fast as fast  # noqa: E402
import alprbf.prbf.fast.blocked as blk  # noqa: E402
import alprbf.prbf.fast.estep as fast_estep  # noqa: E402
import alprbf.prbf.fast.exp as fexp  # noqa: E402
import alprbf.prbf.fast.far_rows as fr  # noqa: E402
import alprbf.prbf.fast.normalize as nz  # noqa: E402
import alprbf.prbf.fast.sparse_variance as sv  # noqa: E402
from alprbf.engine.config import load_config  # noqa: E402
from alprbf.engine.protocol import run_task  # noqa: E402
from alprbf.engine.record import first_queries  # noqa: E402
from alprbf.engine.runner import load_datasets, plan, select_tasks  # noqa: E402
from alprbf.prbf import reference  # noqa: E402
from alprbf.store.results import TIMING_COLUMNS  # noqa: E402


def _numpy_normalize(lpT, table, codes, respT=None, groups=None, *args, **kwargs):
    """The reference's normalisation with the compiled one's signature (whole E-steps)."""
    m, s, r = reference.normalize(reference.weighted_logits(lpT, table, codes), out=respT)
    return reference.log_normaliser(m, s), r


def _no_blocks(data, n_components):
    return None


PATCHES = {
    "all": [],
    "reference": [(fast, "ENABLED", False)],
    "-normalize": [(em, "e_step_blocks", _no_blocks),
                   (fast_estep, "normalize_with_offsets", _numpy_normalize)],
    "-blocked": [(em, "e_step_blocks", _no_blocks)],
    "-sparse_moments": [(blk, "sparse_moments_match", lambda *a: False)],
    "-compaction": [(blk, "sparse_moments_match", lambda *a: False),
                    (nz, "sparse_threshold", lambda: 0.0)],
    "-vector_compress": [(nz, "use_vector_compaction", lambda: False)],
    "-exp": [(nz, "use_compiled_exp", lambda: False), (fexp, "use_compiled_exp", lambda: False)],
    "-far_rows": [(fr, "compiled_far_rows_match", lambda d: False)],
    "-sparse_variance": [(sv, "sparse_variance_match", lambda *a: False)],
}


COUNTED = {"blocked E-step blocks": (blk, "normalize_with_offsets"),
           "sparse moments blocks": (blk, "moments_add"),
           "whole compiled normalisations": (fast_estep, "normalize_with_offsets"),
           "compacted blocks (one call)": (nz, "_compacted_block"),
           "far-row writes": (fr, "write_far"),
           "sparse variances": (sv, "weighted_squared_deviations")}


def count_pieces() -> dict[str, int]:
    """Count the calls of each fast piece from now on (the dict fills as they run)."""
    counts = dict.fromkeys(COUNTED, 0)

    def counting(piece, f):
        def counted(*args, **kwargs):
            counts[piece] += 1
            return f(*args, **kwargs)
        return counted

    for piece, (module, name) in COUNTED.items():
        setattr(module, name, counting(piece, getattr(module, name)))
    return counts


@contextlib.contextmanager
def variant(name: str):
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in PATCHES[name]]
    for mod, attr, value in PATCHES[name]:
        setattr(mod, attr, value)
    try:
        yield
    finally:
        for mod, attr, value in saved:
            setattr(mod, attr, value)


def _config(path: str, params: dict | None):
    if not params:
        return load_config(path)
    raw = yaml.safe_load(Path(path).read_text())
    models = raw["model"] if isinstance(raw.get("model"), list) else None
    for m in models or []:
        if isinstance(m, dict) and "prbf" in m.get("name", ""):
            m.setdefault("params", {}).update(params)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False,
                                     dir=Path(path).parent) as tmp:
        yaml.safe_dump(raw, tmp)
    try:
        return load_config(tmp.name)
    finally:
        Path(tmp.name).unlink()


def _task_unit(args):
    """The task's first ``--queries`` queries; compared by their rows (timing aside)."""
    cfg = _config(args.config, json.loads(args.params) if args.params else None)
    if args.queries is not None:
        cfg = first_queries(cfg, args.queries)
    (task,) = select_tasks(plan(cfg), [args.task])
    ds = load_datasets(cfg)[task.dataset.label]
    protocol = cfg.protocol_for(task.dataset)

    def unit():
        df = run_task(task, ds, protocol)
        return df.drop(columns=[c for c in TIMING_COLUMNS if c in df.columns])

    return unit, f"{task.task_id}, first {args.queries} queries, params {args.params}"


def _committee_unit(spec: str):
    """One committee of a synthetic late-fold network; compared by the members' bits."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_committee import members_one_by_one, synthetic_case
    name, nodes, labels = spec.split(":")
    state, options = synthetic_case(name, int(nodes), int(labels))
    model = state["model"]

    def unit():
        members = members_one_by_one(model, options, 0)
        return [(n, [getattr(p, f).tobytes() for f in ("means", "covariances", "weights")])
                for n, _, p in members]

    return unit, f"one committee of {state['task_id']}"


def _same(a, b) -> bool:
    return a.equals(b) if hasattr(a, "equals") else a == b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?")
    ap.add_argument("task", nargs="?", help="task id (a pattern matching one task)")
    ap.add_argument("--committee", default=None, metavar="DATASET:NODES:LABELS",
                    help="instead of a task: one QBC committee (five members trained one "
                         "after the other) of a late-fold network built as "
                         "bench_committee.py --dataset builds it, e.g. pendigits:270:350")
    ap.add_argument("--queries", type=int, default=None, help="the task's first N queries")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", default=",".join(PATCHES),
                    help="comma-separated, from: " + ", ".join(PATCHES))
    ap.add_argument("--params", default=None,
                    help="JSON model params merged into every PRBF model of a config whose "
                         "'model' is a list (a smaller search of a supervised task)")
    ap.add_argument("--json", default=None, help="write the times here")
    ap.add_argument("--count", action="store_true",
                    help="only count the calls of each fast piece in one run (all pieces)")
    args = ap.parse_args()
    if args.committee:
        unit, label = _committee_unit(args.committee)
    else:
        unit, label = _task_unit(args)
    names = args.variants.split(",")
    if "all" not in names:
        names = ["all", *names]
    times = {n: [] for n in names}            # CPU seconds of this (single-threaded) process
    walls = {n: [] for n in names}
    rows = {}
    with threadpool_limits(limits=1):
        if args.count:
            counts = count_pieces()
            unit()
            print("calls of the fast pieces in one run:", counts)
            return
        for r in range(args.repeat + 1):             # round 0: compilation, first checks
            order = names[r % len(names):] + names[:r % len(names)]
            if r == 0:                               # compile and check once, untimed
                order = [n for n in ("all", "reference") if n in names]
            for name in order:
                with variant(name):
                    t0, c0 = time.perf_counter(), time.process_time()
                    out = unit()
                    wall, dt = time.perf_counter() - t0, time.process_time() - c0
                print(f"round {r} {name:18s} {dt:8.2f} CPU-s {wall:8.2f} s", flush=True)
                if r:
                    times[name].append(dt)
                    walls[name].append(wall)
                    rows.setdefault(name, out)
    print(f"\n{label}, {args.repeat} rounds")
    print(f"{'variant':18s} {'CPU-s':>9s} {'ratio to all':>13s} {'min..max':>14s} rows")
    base = rows["all"]
    result = {}
    for name in names:
        ratios = [t / a for t, a in zip(times[name], times["all"], strict=True)]
        same = _same(rows[name], base)
        result[name] = {"cpu_seconds": times[name], "wall_seconds": walls[name],
                        "ratios": ratios, "rows_identical": same}
        print(f"{name:18s} {statistics.median(times[name]):9.2f} "
              f"{statistics.median(ratios):13.3f} {min(ratios):6.3f}..{max(ratios):6.3f} "
              f"{'same' if same else 'DIFFER'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"case": label, "variants": result}, indent=1))


if __name__ == "__main__":
    main()
