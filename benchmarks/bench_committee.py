"""Cost of one QBC committee (seed 000 §4.3) on a real late-fold network, taken from a checkpoint.

A QBC query samples ``n_members`` diagonal PRBFs around the current network (eqs 40-49) and
trains each by semi-supervised EM to convergence; that is 97 % of a QBC fold's time.  This
script loads the learner of a task checkpoint (``OUT/checkpoints/<task>.pkl`` of a running
``alprbf run`` -- copy it, it is deleted when the task ends) and reports, for each reading of
the statistics of eqs 46-49 (``--statistics``):

* the EM iterations and seconds of every member, trained one after the other;
* the wall time of the whole committee with ``--threads`` members trained side by side
  (:func:`alprbf.prbf.qbc.train_committee`), and whether the members equal the sequential ones.

Usage::

    python benchmarks/bench_committee.py --checkpoint COPY.pkl --threads 1,2 \
        --statistics labeled,all
"""

from __future__ import annotations

import argparse
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from alprbf.prbf._em import run_em
from alprbf.prbf.qbc import committee_starts, train_committee


def members_one_by_one(model, options, seed):
    """EM iterations, seconds and parameters of each member, trained one after the other."""
    diag, starts, reg = committee_starts(model.data_, model.network_, model.estep_, options,
                                         np.random.default_rng(seed), float(model.reg_covar))
    out = []
    for p0 in starts:
        t0 = time.perf_counter()
        res = run_em(diag, p0, tol=options.em_tol, max_iter=options.em_max_iter, reg_covar=reg)
        out.append((res.n_iter, time.perf_counter() - t0, res.params))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--statistics", default="labeled")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    state = pickle.loads(args.checkpoint.read_bytes())
    model, strategy = state["model"], state["strategy"]
    if not hasattr(strategy, "options"):
        raise SystemExit(f"{args.checkpoint}: the task's strategy is not qbc_prbf")
    n, d = model.data_.X.shape
    print(f"{state['task_id']}: {model.model_size()} nodes, {n} rows x {d} features, "
          f"{int(np.sum(~np.isnan(state['y_obs'])))} labels")
    with threadpool_limits(limits=1):
        for stats in args.statistics.split(","):
            options = replace(strategy.options, statistics=stats)
            seq = members_one_by_one(model, options, args.seed)
            iters = [it for it, _, _ in seq]
            secs = sum(s for _, s, _ in seq)
            print(f"statistics={stats}: EM iterations per member {iters}; one after the "
                  f"other {secs:.1f} s ({1e3 * secs / sum(iters):.1f} ms per iteration)")
            for t in (int(x) for x in args.threads.split(",")):
                t0 = time.perf_counter()
                members = train_committee(model.data_, model.network_, model.estep_, options,
                                          np.random.default_rng(args.seed),
                                          float(model.reg_covar), n_threads=t)
                wall = time.perf_counter() - t0
                same = all(np.array_equal(a.means, p.means)
                           and np.array_equal(a.covariances, p.covariances)
                           and np.array_equal(a.weights, p.weights)
                           for a, (_, _, p) in zip(members, seq, strict=True))
                print(f"  committee with {t} thread(s): {wall:.1f} s "
                      f"(speed-up {secs / wall:.2f}); members equal the sequential ones: {same}")


if __name__ == "__main__":
    main()
