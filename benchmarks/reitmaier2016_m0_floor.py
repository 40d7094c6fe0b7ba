"""Reitmaier et al. 2016's density model M0 under decision 0312's two changes, training side.

For fold 0 of each data set of the corrected config (the fold's pool, preprocessed as the config
does, its categorical columns as the task's learners see them), M0 is fitted four ways: as the
corrected config fits it (``search_rows: 1000``, ``component_floor: rows``), with each change
alone, and with both (decision 0312: the search on every row, a floor of ``D + 1`` rows per
component).  It prints the chosen J, the smallest component's rows (argmax responsibility) and
the seconds taken.  No label and no test row is read; the search seed is 0, not the task's.

Usage::

    python benchmarks/reitmaier2016_m0_floor.py iris ecoli satimage
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reitmaier2016_disputed import CORRECTED, corrected_density, corrected_rwm_params  # noqa: E402

from alprbf.engine.config import load_config  # noqa: E402
from alprbf.engine.protocol import split_rows  # noqa: E402
from alprbf.engine.runner import load_datasets  # noqa: E402
from alprbf.engine.seeding import derive_seed  # noqa: E402
from alprbf.svm_kernels.density import DensityOptions, fit_density, responsibilities  # noqa: E402

VARIANTS = {"corrected": {}, "all rows": {"search_rows": 0},
            "floor": {"component_floor": "full_rank"},
            "0312": {"search_rows": 0, "component_floor": "full_rank"}}


def fold_pool(name: str, fold: int = 0):
    """The preprocessed pool of ``fold`` and its categorical mask (as the runner builds it)."""
    cfg = load_config(CORRECTED).with_scale("full")
    spec = next(d for d in cfg.datasets if d.label == name)
    cfg = dataclasses.replace(cfg, datasets=(spec,))
    ds = load_datasets(cfg)[spec.label]
    protocol = cfg.protocol_for(spec)
    seed = derive_seed(protocol.seed, "folds", spec.label, 0)
    train, _ = split_rows(ds, protocol, seed, fold=fold)[fold]
    transform = spec.preprocessing.fit_fold(ds.X[train], ds.categorical)
    return transform(ds.X[train]), np.asarray(ds.categorical, bool)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+", help="data set labels of the corrected config")
    ap.add_argument("--fold", type=int, default=0)
    args = ap.parse_args()
    base = corrected_density(corrected_rwm_params())
    print("| data set | pool, D | " + " | ".join(VARIANTS) + " |")
    print("|---|---|" + "---|" * len(VARIANTS))
    for name in args.datasets:
        X, mask = fold_pool(name, args.fold)
        cells = []
        for change in VARIANTS.values():
            options = DensityOptions(**{**base, **change})
            t0 = time.perf_counter()
            m0 = fit_density(X, mask, options=options, random_state=0)
            seconds = time.perf_counter() - t0
            members = np.bincount(np.argmax(responsibilities(m0, X), axis=1),
                                  minlength=m0.n_components)
            cells.append(f"J {m0.n_components}, min {members.min()} ({seconds:.0f} s)")
        print(f"| {name} | {len(X)}, {int((~mask).sum())} | " + " | ".join(cells) + " |",
              flush=True)


if __name__ == "__main__":
    main()
