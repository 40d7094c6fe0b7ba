"""Reitmaier et al. 2016's LAP and RBF paradigms, training side: how a recorded task's tuned
values do on pool rows they were not fitted to (docs/reproduction/reitmaier2016.md).

A task is tuned once on ``L_1`` and keeps its values (``C``, ``gamma``, the categorical
weights; LAP: ``gamma_I``, ``gamma_A`` and the ``C`` of the first fit) to the end.  Its test
rows are never in the LAP kernel's kNN graph, so with every pool row labeled a LAP kernel
can fit the pool (its graph) and still fail on the test rows.  This script reads the values
from a task file's first row and rates them on the training part only:

* ``held_out``: the pool in ``K`` stratified parts; each part predicted by an SVM fitted to
  the others with every label, the LAP kernel's graph built on those rows only (the held-out
  rows reach it through the base kernel, as test rows do);
* ``in_graph``: the same SVMs' accuracy on the rows they were fitted to;
* LAP only, ``held_out_relation``: as ``held_out`` with ``C = 1 / (2 gamma_A l)`` at the
  ``l`` rows fitted (LapSVM's relation followed as ``l`` grows) instead of the kept ``C``.

No test row is read.

Usage (needs the data set mirror)::

    ALPRBF_DATA_MIRROR=... python benchmarks/reitmaier2016_held_out_capacity.py \\
        configs/experiments/reitmaier2016_corrected.yaml \\
        results/table-003-full/table_003_corrected 'heart__lap__*' 'heart__rbf__uncertainty_svm__*'
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from alprbf.engine.config import load_config
from alprbf.engine.protocol import split_rows
from alprbf.engine.runner import load_datasets, plan
from alprbf.engine.seeding import derive_seed
from alprbf.svm_kernels.gram import LaplacianDeformation, lapsvm_C, rbf_gram


def held_out_capacity(X, y, categorical, state: dict, kernel: str, k: int = 5,
                      seed: int = 0) -> dict:
    """Accuracies of the tuned values ``state`` (a task file's ``model_state``) on ``k``
    held-out parts of the pool ``X, y`` and on the rows fitted; see the module docstring."""
    base = functools.partial(rbf_gram, gamma=state["gamma"], categorical=categorical,
                             alpha=state.get("alpha", 1.0), beta=state.get("beta", 1.0))
    right = {"held_out": 0, "in_graph": 0, "held_out_relation": 0}
    fitted = 0
    for keep, out in StratifiedKFold(k, shuffle=True, random_state=seed).split(X, y):
        Cs = {"held_out": state["C"]}
        if kernel == "lap":
            lap = LaplacianDeformation(X[keep], base)
            kw = dict(gamma_I=state["gamma_I"], gamma_A=state["gamma_A"])
            train = lap.kept_rows(np.arange(len(keep)))
            K, K_out = lap.gram(train, **kw), lap.gram(lap.rows(X=X[out]), train, **kw)
            Cs["held_out_relation"] = lapsvm_C(state["gamma_A"], len(keep))
        else:
            K, K_out = base(X[keep], X[keep]), base(X[out], X[keep])
        for name, C in Cs.items():
            svm = SVC(kernel="precomputed", C=C).fit(K, y[keep])
            right[name] += int(np.sum(svm.predict(K_out) == y[out]))
            if name == "held_out":
                right["in_graph"] += int(np.sum(svm.predict(K) == y[keep]))
        fitted += len(keep)
    out = {"held_out": right["held_out"] / len(y), "in_graph": right["in_graph"] / fitted}
    if kernel == "lap":
        out["held_out_relation"] = right["held_out_relation"] / len(y)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("results", type=Path, help="the experiment's results directory")
    ap.add_argument("patterns", nargs="+", help="task id patterns (fnmatch)")
    ap.add_argument("--parts", type=int, default=5, metavar="K")
    args = ap.parse_args()
    cfg = load_config(args.config).with_scale("full")
    tasks = [t for t in plan(cfg) if any(fnmatch.fnmatch(t.task_id, p) for p in args.patterns)
             and (args.results / "tasks" / f"{t.task_id}.parquet").exists()]
    keep = {t.dataset.label for t in tasks}
    cfg = dataclasses.replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label in keep))
    datasets = load_datasets(cfg)
    for task in tasks:
        ds, protocol = datasets[task.dataset.label], cfg.protocol_for(task.dataset)
        kernel = task.model.params.get("kernel")
        if task.model.name != "kernel_svm" or kernel not in ("lap", "rbf"):
            continue
        records = pd.read_parquet(args.results / "tasks" / f"{task.task_id}.parquet")
        state = json.loads(records.model_state.dropna().iloc[0])
        train, _ = split_rows(ds, protocol, derive_seed(protocol.seed, "folds", task.dataset.label,
                                                        task.repetition), fold=task.fold)[task.fold]
        transform = task.dataset.preprocessing.fit_fold(ds.X[train], ds.categorical)
        rates = held_out_capacity(transform(ds.X[train]), ds.y[train], transform.categorical,
                                  state, kernel, args.parts)
        shown = {k: state[k] for k in ("C", "gamma", "alpha", "beta", "gamma_I", "gamma_A")
                 if k in state}
        print(json.dumps({"task": task.task_id, **shown,
                          **{k: round(v, 3) for k, v in rates.items()}}), flush=True)


if __name__ == "__main__":
    main()
