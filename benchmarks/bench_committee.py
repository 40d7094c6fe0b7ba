"""Cost of one QBC committee (seed 000 §4.3) on a real late-fold network, taken from a checkpoint.

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
"""

from __future__ import annotations

import argparse
import pickle
import time
from dataclasses import replace
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


def members_one_by_one(model, options, seed):
    """EM iterations, seconds and parameters of each member, trained one after the other."""
    floor = float(model.options.reg_covar)
    diag, starts, reg = committee_starts(model.data_, model.network_, model.estep_, options,
                                         np.random.default_rng(seed), floor)
    out = []
    for p0 in starts:
        t0 = time.perf_counter()
        res = run_em(diag, p0, tol=options.tol, max_iter=options.max_iter, reg_covar=reg)
        out.append((res.n_iter, time.perf_counter() - t0, res.params))
    return out


def estep_times(model, options, seed, iterations, thresholds):
    """Best of 60 blocked E-steps of the first member after ``iterations`` EM iterations,
    with the sparse-path threshold of :func:`~alprbf.prbf._normalize.sparse_threshold` set to
    each value (None: as measured by this process)."""
    from alprbf.prbf import _normalize
    from alprbf.prbf._blocked import blocked_e_step, blocked_workspace, e_step_blocks
    floor = float(model.options.reg_covar)
    diag, starts, reg = committee_starts(model.data_, model.network_, model.estep_, options,
                                         np.random.default_rng(seed), floor)
    params = run_em(diag, starts[0], tol=0.0, max_iter=iterations, reg_covar=reg).params
    blocks = e_step_blocks(diag, params.n_components)
    if blocks is None:
        raise SystemExit("the E-steps of this case are not blocked")
    measured = _normalize.sparse_threshold()
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
