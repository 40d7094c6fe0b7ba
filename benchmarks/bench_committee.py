"""Cost of one QBC committee (Constantinopoulos & Likas 2008, §4.3) on a real late-fold network,
taken from a checkpoint.

A QBC query samples ``n_members`` diagonal PRBFs around the current network (eqs 40-49) and
trains each by semi-supervised EM to convergence; that is 97 % of a QBC fold's time.  This
script loads the learner of a task checkpoint (``OUT/checkpoints/<task>.pkl`` of a running
``alprbf run`` -- copy it, it is deleted when the task ends) and reports, for each reading of
the statistics of eqs 46-49 (``--statistics``):

* the EM iterations and seconds of every member, trained one after the other;
* the wall time of the whole committee with ``--threads`` members trained side by side
  (:func:`alprbf.prbf.qbc.train_committee`), and whether the members equal the sequential ones.

With ``--estep-iteration N`` it times instead one blocked E-step (best of 60) of the first
member after ``N`` EM iterations, under each sparse-path threshold of ``--thresholds`` (what a
process that measured that value would run; default: this process's measurement).
``--estep-parts N`` splits that E-step (best of 40) into its per-block stages: the
normalisation, the moments product and the far rows' direct densities, timed by wrapping the
functions the blocked E-step calls, and the rest (the log-density products and the loop).
``--flush-margins`` follows the first member's EM and reports how far below the clip its
flushed entries lie, how many a bound on the change since the previous iteration would prove
flushed, and how often candidate lists taken with a margin would stay provably valid
(docs/history/notes.md, 'What is left of a late E-step').

Without a checkpoint, ``--dataset NAME`` builds the case itself: the data set (z-scored) from
the mirror, a random 80 % as the training rows, ``--labels`` of them labeled, and a diagonal
network of ``--components`` nodes fitted by semi-supervised EM (30 iterations, floor 1e-3) --
the size of a network late in a QBC fold.  It uses only functions that every version of
``alprbf.prbf`` since the committee threads has, so the same script times two commits in one
run (``PYTHONPATH=/path/to/other/checkout``).

Usage::

    python benchmarks/bench_committee.py --checkpoint COPY.pkl --threads 1,2 \
        --statistics labeled,all
    ALPRBF_DATA_MIRROR=/path/to/mirror python benchmarks/bench_committee.py \
        --dataset pendigits --components 270 --labels 350
    python benchmarks/bench_committee.py --checkpoint COPY.pkl --estep-iteration 40 \
        --thresholds 0.1,0.35
    python benchmarks/bench_committee.py --checkpoint COPY.pkl --estep-parts 40
    python benchmarks/bench_committee.py --checkpoint COPY.pkl --flush-margins
"""

from __future__ import annotations

import argparse
import pickle
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from alprbf.prbf import e_step, fit_em, prepare_data, run_em
from alprbf.prbf.active import StepOptions
from alprbf.prbf.qbc import CommitteeOptions, committee_starts, train_committee


class Network:
    """What the committee needs of a learner: its rows, network, E-step and floor."""

    def __init__(self, data, network, reg_covar):
        self.data_, self.network_ = data, network
        self.options = StepOptions(reg_covar=reg_covar)
        self.estep_ = e_step(data, network)

    def model_size(self):
        return self.network_.n_components


def synthetic_case(name, components, labels, seed=0):
    """A late-fold QBC network on a real data set, built without a checkpoint."""
    from alprbf.datasets import DATASETS, Preprocessing
    ds = Preprocessing(standardize="global").apply_global(DATASETS[name]().load(seed))
    X, codes = ds.X, ds.y
    rng = np.random.default_rng(seed)
    train = rng.permutation(len(X))[: int(0.8 * len(X))]
    X, codes = X[train], codes[train]
    y = np.full(len(X), np.nan)
    lab = rng.choice(len(X), labels, replace=False)
    y[lab] = codes[lab]
    data = prepare_data(X, y, ds.n_classes, "diag")
    with threadpool_limits(limits=1):
        fit = fit_em(data, components, max_iter=30, reg_covar=1e-3, random_state=seed)
    state = {"model": Network(data, fit.params, 1e-3), "y_obs": y,
             "task_id": f"{name} ({components} nodes, {labels} labels, synthetic)"}
    return state, CommitteeOptions()


def starts_of(model, options, seed):
    """The committee's data, the members' starting parameters and their floor (eqs 40-49)."""
    return committee_starts(model.data_, model.network_, model.estep_, options,
                            np.random.default_rng(seed), float(model.options.reg_covar))


def members_one_by_one(model, options, seed):
    """EM iterations, seconds and parameters of each member, trained one after the other."""
    diag, starts, reg = starts_of(model, options, seed)
    out = []
    for p0 in starts:
        t0 = time.perf_counter()
        res = run_em(diag, p0, tol=options.tol, max_iter=options.max_iter, reg_covar=reg)
        out.append((res.n_iter, time.perf_counter() - t0, res.params))
    return out


def member_at(model, options, seed, iterations):
    """The committee's data, its first member after ``iterations`` EM iterations, and the
    blocks of its blocked E-step (exits where the E-steps of the case are not blocked)."""
    from alprbf.prbf.fast.blocked import e_step_blocks
    diag, starts, reg = starts_of(model, options, seed)
    params = run_em(diag, starts[0], tol=0.0, max_iter=iterations, reg_covar=reg).params
    blocks = e_step_blocks(diag, params.n_components)
    if blocks is None:
        raise SystemExit("the E-steps of this case are not blocked")
    return diag, params, blocks


def estep_times(model, options, seed, iterations, thresholds):
    """Best of 60 blocked E-steps of the first member after ``iterations`` EM iterations,
    with the sparse-path threshold of :func:`~alprbf.prbf.fast.normalize.sparse_threshold` set to
    each value (None: as measured by this process)."""
    from alprbf.prbf.fast import normalize as _normalize
    from alprbf.prbf.fast.blocked import blocked_e_step, blocked_workspace
    diag, params, blocks = member_at(model, options, seed, iterations)
    real = _normalize.sparse_threshold
    measured = real()
    try:
        for value in thresholds:
            _normalize.sparse_threshold = lambda v=(measured if value is None else value): v
            ws = blocked_workspace(blocks, params.n_components)
            for _ in range(5):
                blocked_e_step(diag, params, blocks, ws)
            best = np.inf
            for _ in range(60):
                t0 = time.perf_counter()
                blocked_e_step(diag, params, blocks, ws)
                best = min(best, time.perf_counter() - t0)
            label = f"{measured:.2f} (measured)" if value is None else f"{value:.2f}"
            print(f"  threshold {label}: E-step at iteration {iterations} {1e3 * best:.2f} ms "
                  f"(best of 60, {len(blocks[0]) - 1} blocks)")
    finally:
        _normalize.sparse_threshold = real


def estep_parts(model, options, seed, iterations):
    """Per-block stages of the first member's blocked E-step after ``iterations`` EM
    iterations (best of 40 E-steps, each stage's share taken from that E-step)."""
    from alprbf.prbf.fast import blocked as _blocked
    from alprbf.prbf.fast.far_rows import FarRowDensities
    diag, params, blocks = member_at(model, options, seed, iterations)
    spent = {}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0
            return out
        return wrapper

    real = (_blocked.normalize_with_offsets, _blocked.moments_add, FarRowDensities.write)
    _blocked.normalize_with_offsets = timed("normalisation", real[0])
    _blocked.moments_add = timed("moments (sparse)", real[1])
    FarRowDensities.write = timed("far rows", real[2])
    try:
        ws = _blocked.blocked_workspace(blocks, params.n_components)
        for _ in range(5):
            _blocked.blocked_e_step(diag, params, blocks, ws)
        runs = []
        for _ in range(40):
            spent.clear()
            t0 = time.perf_counter()
            _blocked.blocked_e_step(diag, params, blocks, ws)
            runs.append((time.perf_counter() - t0, dict(spent)))
    finally:
        (_blocked.normalize_with_offsets, _blocked.moments_add, FarRowDensities.write) = real
    total, parts = min(runs, key=lambda run: run[0])
    nb = len(blocks[0]) - 1
    parts["products and the rest"] = total - sum(parts.values())
    print(f"  E-step at iteration {iterations}: {1e3 * total:.2f} ms (best of 40), {nb} blocks "
          f"of up to {max(np.diff(blocks[0]))} rows, {params.n_components} components, "
          f"{diag.features.weights_T.shape[0]} moment rows")
    for name, t in parts.items():
        print(f"    {name:22s} {1e3 * t:6.2f} ms  {1e6 * t / nb:6.1f} us per block")


def flush_margins(model, options, seed, margins=(100, 300, 1000)):
    """How far below the clip the first member's flushed entries lie along its EM, and how
    many of them a bound could prove flushed without evaluating them."""
    from alprbf.prbf._estep import mixture_weights, offset_table
    from alprbf.prbf._gaussian import estimate_log_gaussian_prob, log_prob_coefficients
    from alprbf.prbf.reference import CLIP, weighted_logits
    diag, starts, reg = starts_of(model, options, seed)
    f = diag.features
    znorm = np.linalg.norm(f.ZT, axis=0)

    def state(p):
        pc, ct = p.precisions_cholesky, p.covariance_type
        BT = log_prob_coefficients(f, p.means, pc, ct)[0]
        lpT = estimate_log_gaussian_prob(None, p.means, pc, ct, features=f).T
        table = offset_table(p, mixture_weights(p))
        w = weighted_logits(lpT, table, diag.codes_ext)
        return BT, table, w - w.max(axis=0)

    def offset_change(t1, t0):
        both = np.isfinite(t1) & np.isfinite(t0)
        new = np.isfinite(t1) & ~np.isfinite(t0)
        with np.errstate(invalid="ignore"):
            step = np.where(both, np.abs(t1 - t0), 0.0).max(axis=1)
        return np.where(new.any(axis=1), np.inf, step)

    n_iter = run_em(diag, starts[0], tol=options.tol, max_iter=options.max_iter,
                    reg_covar=reg).n_iter
    p, seq = starts[0], []
    for _ in range(n_iter):
        seq.append(state(p))
        p = run_em(diag, p, tol=0.0, max_iter=1, reg_covar=reg).params
    print(f"  first member: {n_iter} EM iterations, {diag.n_samples} rows, "
          f"{p.n_components} components")
    for it in sorted({min(5, n_iter - 1), min(20, n_iter - 1), min(40, n_iter - 1)}):
        (B0, table0, gap0), (B1, table1, gap) = seq[it - 1], seq[it]
        flushed = gap <= CLIP
        # |change of an entry| <= |B1_k - B0_k| |z_i| + |offset change|: an entry below the
        # clip by more than its own change and its row's argmax's is flushed for sure
        change = (np.linalg.norm(B1 - B0, axis=1)[:, None] * znorm[None, :]
                  + offset_change(table1, table0)[:, None])
        top = np.argmax(gap0, axis=0)
        proven = gap0 + change + change[top, np.arange(gap0.shape[1])] + 1.0 < CLIP
        near = ", ".join(f"{np.mean(gap > CLIP - x):.1%} within {x}" for x in margins)
        print(f"  iteration {it}: {flushed.mean():.1%} flushed, median "
              f"{-np.median(gap[flushed]):.0f} below the row maximum; entries above the clip "
              f"or {near} of it; a per-entry bound from iteration {it - 1} proves "
              f"{proven.mean():.1%} flushed ({np.sum(proven & ~flushed)} wrongly)")
    zmax = znorm.max()
    steps = [2 * (np.linalg.norm(b[0] - a[0], axis=1).max() * zmax
                  + offset_change(b[1], a[1]).max()) for a, b in pairwise(seq)]
    print(f"  twice the largest change bound from one iteration to the next: median "
          f"{np.median(steps):.3g}, smallest {np.min(steps):.3g}")
    for margin in margins:
        refreshes, ref = 0, None
        for BT, table, _ in seq:
            valid = False
            if ref is not None:
                D = (np.linalg.norm(BT - ref[0], axis=1).max() * zmax
                     + offset_change(table, ref[1]).max())
                valid = 2 * D + 1.0 < margin
            if not valid:
                ref, refreshes = (BT, table), refreshes + 1
        print(f"  candidate lists with margin {margin}, valid while twice the largest change "
              f"bound stays below it: {n_iter - refreshes} of {n_iter} E-steps could use them")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", type=Path)
    src.add_argument("--dataset", help="build a synthetic late-fold case from this data set")
    ap.add_argument("--components", type=int, default=270)
    ap.add_argument("--labels", type=int, default=350)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--statistics", default="labeled")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--estep-iteration", type=int, default=0,
                    help="time one E-step after this many EM iterations instead")
    ap.add_argument("--thresholds", default="",
                    help="sparse-path thresholds to time the E-step under (default: measured)")
    ap.add_argument("--estep-parts", type=int, default=0, metavar="N",
                    help="split one E-step after N EM iterations into its stages instead")
    ap.add_argument("--flush-margins", action="store_true",
                    help="how far below the clip the flushed entries lie, along the EM")
    args = ap.parse_args(argv)
    if args.checkpoint is not None:
        state = pickle.loads(args.checkpoint.read_bytes())
        if "state" in state:   # checkpoint format 3: the loop state is a LoopState dataclass
            state = vars(state["state"])
        if not hasattr(state["strategy"], "options"):
            raise SystemExit(f"{args.checkpoint}: the task's strategy is not qbc_prbf")
        base = state["strategy"].options
    else:
        state, base = synthetic_case(args.dataset, args.components, args.labels, args.seed)
    model = state["model"]
    n, d = model.data_.X.shape
    print(f"{state['task_id']}: {model.model_size()} nodes, {n} rows x {d} features, "
          f"{int(np.sum(~np.isnan(state['y_obs'])))} labels")
    with threadpool_limits(limits=1):
        if args.estep_parts > 0:
            estep_parts(model, base, args.seed, args.estep_parts)
            return
        if args.flush_margins:
            flush_margins(model, base, args.seed)
            return
        if args.estep_iteration > 0:
            values = [float(v) for v in args.thresholds.split(",") if v] or [None]
            estep_times(model, base, args.seed, args.estep_iteration, values)
            return
        for stats in args.statistics.split(","):
            options = replace(base, statistics=stats)
            seq = members_one_by_one(model, options, args.seed)
            iters = [it for it, _, _ in seq]
            secs = sum(s for _, s, _ in seq)
            print(f"statistics={stats}: EM iterations per member {iters}; one after the "
                  f"other {secs:.1f} s ({1e3 * secs / sum(iters):.1f} ms per iteration)")
            for t in (int(x) for x in args.threads.split(",")):
                t0 = time.perf_counter()
                members = train_committee(model.data_, model.network_, model.estep_, options,
                                          np.random.default_rng(args.seed),
                                          float(model.options.reg_covar), n_threads=t)
                wall = time.perf_counter() - t0
                same = all(np.array_equal(a.means, p.means)
                           and np.array_equal(a.covariances, p.covariances)
                           and np.array_equal(a.weights, p.weights)
                           for a, (_, _, p) in zip(members, seq, strict=True))
                print(f"  committee with {t} thread(s): {wall:.1f} s "
                      f"(speed-up {secs / wall:.2f}); members equal the sequential ones: {same}")


if __name__ == "__main__":
    main()
