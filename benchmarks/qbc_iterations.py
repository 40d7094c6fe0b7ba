"""EM iterations of every QBC committee member over the first queries of recorded tasks.

Runs the tasks of a config (``--only``, as ``alprbf run``) over their first ``--queries``
queries, counting the semi-supervised EM iterations of every committee member
(:func:`alprbf.prbf.qbc.train_committee`), and prints, for each tolerance of ``--tol``, the
mean count each member would have needed: EM follows the same path up to an earlier stop, so
a looser tolerance's count is read off the recorded log-likelihood history exactly.

Usage::

    ALPRBF_DATA_MIRROR=/path/to/mirror python benchmarks/qbc_iterations.py \\
        configs/table_000.yaml --queries 100 \\
        --only pendigits__incremental_ssl_prbf_literal__qbc_prbf__r0__f0

(evidence for docs/history/notes.md, 'QBC member convergence and the cost of table 000').
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from alprbf.engine import cpu

cpu.pin_kernels()          # as the command line does, before NumPy is imported

import numpy as np  # noqa: E402

import alprbf.prbf.qbc as qbc  # noqa: E402
from alprbf.engine.config import load_config  # noqa: E402
from alprbf.engine.record import first_queries  # noqa: E402
from alprbf.engine.runner import run_experiment  # noqa: E402
from alprbf.prbf import has_converged  # noqa: E402


def stop_iteration(history: np.ndarray, n_rows: int, tol: float) -> int:
    """M-steps ``run_em`` takes with ``tol`` along ``history`` (capped at its length)."""
    below = np.flatnonzero(has_converged(np.diff(history), n_rows, tol))
    return int(below[0]) + 1 if len(below) else len(history) - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--only", action="append", required=True)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--tol", type=float, nargs="*", default=[1e-4, 3e-4, 1e-3, 3e-3, 1e-2])
    args = ap.parse_args()
    runs = []
    train = qbc.run_em

    def counted(data, params, **kwargs):
        result = train(data, params, **kwargs)
        runs.append((data.n_samples, result.loglik_history, result.converged))
        return result

    qbc.run_em = counted
    cfg = first_queries(load_config(args.config), args.queries)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="alprbf-qbc-iterations-") as tmp:
        run_experiment(cfg, Path(tmp), jobs=1, progress=False, only=args.only,
                       checkpoint_every=None)
    print(f"{len(runs)} members over the first {args.queries} queries of {', '.join(args.only)}"
          f" ({time.perf_counter() - t0:.0f} s); at the iteration cap: "
          f"{sum(not c for _, _, c in runs)}")
    counts = {tol: np.array([stop_iteration(h, n, tol) for n, h, _ in runs]) for tol in args.tol}
    for tol, its in counts.items():
        print(f"  tol {tol:g}: mean {its.mean():.1f}, median {np.median(its):g} iterations")
    its = counts[args.tol[0]]
    per = max(1, len(its) // 5)
    print("  by fifths of the run (first tol):",
          ", ".join(f"{its[i:i + per].mean():.1f}" for i in range(0, len(its), per)))


if __name__ == "__main__":
    main()
