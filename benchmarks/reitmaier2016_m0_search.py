"""Reitmaier et al. 2016's density model M0: the components its search chooses against the
number of pool rows the search may use (``DensityOptions.search_rows``).

The corrected config searches M0's grid on at most 1 000 of the pool's rows (fitted) and 500
(held out), then refits the winner on every row.  On a pool of thousands of rows in tens of
dimensions that caps what the held-out criterion can support: a full-covariance component of
satimage (36 dimensions) has 702 parameters.  This script fits M0 to a recorded task's pool
(the fold's training rows, preprocessed as the config does) with each ``--search-rows`` value
and prints the chosen J, the rows per component and each starting J's held-out divergence and
standard error, and the time taken.  Training side only: no label and no test row is read.
The search's seed is 0, not the task's, so its held-out split and VI starts are not the
recorded task's own (satimage fold 0 chose J = 1 in the record too).

Usage::

    python benchmarks/reitmaier2016_m0_search.py \
        results/table-003-full/table_003_corrected/tasks/satimage__rwm__four_ds__r0__f0.parquet \
        --search-rows 1000 0
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reitmaier2016_disputed import corrected_density, corrected_rwm_params, recorded_task  # noqa: E402

from alprbf.svm_kernels.density import DensityOptions, fit_density, responsibilities  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", type=Path, help="a recorded task file (its pool is used)")
    ap.add_argument("--search-rows", type=int, nargs="+", default=[1000, 0],
                    help="values of search_rows to compare (0: every pool row)")
    args = ap.parse_args()
    Xp, _, _, _ = recorded_task(args.task)
    density = corrected_density(corrected_rwm_params())
    print(f"{args.task.name}: pool {Xp.shape[0]} rows x {Xp.shape[1]} columns")
    for rows in args.search_rows:
        options = dataclasses.replace(DensityOptions(**density), search_rows=rows)
        t0 = time.perf_counter()
        m0 = fit_density(Xp, options=options, random_state=0)
        seconds = time.perf_counter() - t0
        members = np.bincount(np.argmax(responsibilities(m0, Xp), axis=1),
                              minlength=m0.n_components)
        print(f"search_rows={rows or 'all'}: J = {m0.n_components} ({seconds:.0f} s), "
              f"rows per component {sorted(members.tolist(), reverse=True)}")
        best = {}
        for w, s, j, kl, se, fitted in m0.grid_scores:
            if j not in best or kl < best[j][0]:
                best[j] = (kl, se, fitted, w, s)
        for j, (kl, se, fitted, w, s) in sorted(best.items()):
            print(f"  start J {j:2d}: divergence {kl:8.3f} +- {se:.3f} (fitted J {fitted}, "
                  f"concentration {w}, prior scale {s})")


if __name__ == "__main__":
    main()
