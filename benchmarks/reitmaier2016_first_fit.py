"""Reitmaier et al. 2016's once-only tuning, training side: what each task's first fit picks,
and what the picked kernel can do with every pool row labeled (docs/decisions/0305, 0309).

For each selected task of a table-003 config the task is set up as ``run_task`` sets it up
(its fold, Alg. 2's initial set, its model seed) and fitted once on ``L_1``: the tuning runs
there and its values are kept for the whole run.  The model is then fitted again, as the loop
fits it at its last round, with every pool row labeled; its accuracy on the pool (the rows it
was fitted to) is the *capacity* of the tuned values: the best the fixed kernel does whatever
the strategy queries.  Only training rows are used; no test row is read.

With ``--held-out K`` the tuned values are also rated on rows they were not fitted to: the
pool is split into K stratified parts, and each part is predicted by a model fitted with
every other pool row labeled (the tuned values kept, the kernel's structure built on those
rows only: the LAP kernel's kNN graph, the density model), as the loop's model predicts the
test rows, which are never in its graph or its density model.  On-pool capacity cannot see a
kernel that fits its graph and not the space around it; this *held-out capacity* can.
Where the first fit's search was skipped (a class below two rows in ``L_1``), the loop tunes
at a later fit, and so do these fits: both capacities are then those of values tuned with
every label of the rows fitted.

Usage (needs the data set mirror)::

    ALPRBF_DATA_MIRROR=... python benchmarks/reitmaier2016_first_fit.py \
        configs/experiments/reitmaier2016_corrected.yaml 'heart__rbf__random__*' ...
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

from alprbf.engine.config import load_config
from alprbf.engine.initial import initial_labeled
from alprbf.engine.protocol import model_params, split_rows, task_seeds
from alprbf.engine.runner import load_datasets, plan
from alprbf.engine.seeding import derive_seed
from alprbf.models import MODELS

SHOWN = ("C", "gamma", "alpha", "beta", "gamma_I", "gamma_A", "n_tied", "tie_band")


def held_out_capacity(tuned, X: np.ndarray, y: np.ndarray, k: int, seed: int) -> float:
    """Accuracy on each of ``k`` stratified parts of the pool of a model with ``tuned``'s
    values (a fitted :class:`~alprbf.svm_kernels.svm.KernelSVC`), fitted with the other parts
    labeled and its structure built on them only; pooled over the parts."""
    right = 0
    for keep, out in StratifiedKFold(k, shuffle=True, random_state=seed).split(X, y):
        part = clone(tuned).fit(X[keep], y[keep].astype(float), previous=tuned)
        right += int(np.sum(part.predict(X[out]) == y[out]))
    return right / len(y)


def first_fit(task, ds, protocol, held_out: int = 0) -> dict:
    """The tuned values of ``task``'s first fit, their capacity on the pool and, with
    ``held_out`` parts, on held-out pool rows (:func:`held_out_capacity`)."""
    root, dl = protocol.seed, task.dataset.label
    train, _ = split_rows(ds, protocol, derive_seed(root, "folds", dl, task.repetition),
                          fold=task.fold)[task.fold]
    transform = task.dataset.preprocessing.fit_fold(ds.X[train], ds.categorical)
    X, y = transform(ds.X[train]), ds.y[train]
    rng = np.random.default_rng(derive_seed(root, "initial", dl, task.repetition, task.fold))
    labeled = initial_labeled(X, y, protocol.initial, ds.n_classes, rng, transform.categorical)
    model = MODELS[task.model.name](n_classes=ds.n_classes,
                                    random_state=task_seeds(task, protocol)["model_random_state"],
                                    **model_params(task.model, transform.categorical))
    y_obs = np.full(len(y), np.nan)
    y_obs[labeled] = y[labeled]
    model.fit(X, y_obs)
    state = json.loads(json.dumps(model.diagnostics(), default=str))
    tuned = model.estimator_
    model.fit(X, y.astype(float))
    capacity = float(np.mean(model.predict_rows(X, None) == y))
    row = {"task": task.task_id, **{k: state.get(k) for k in SHOWN if k in state},
           "capacity": round(capacity, 3)}
    if held_out:
        row["held_out_capacity"] = round(held_out_capacity(tuned, X, y, held_out, 0), 3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("patterns", nargs="+", help="task id patterns (fnmatch)")
    ap.add_argument("--scale", default="full")
    ap.add_argument("--held-out", type=int, default=0, metavar="K",
                    help="also rate the tuned values on K held-out parts of the pool")
    args = ap.parse_args()
    cfg = load_config(args.config).with_scale(args.scale)
    tasks = [t for t in plan(cfg) if any(fnmatch.fnmatch(t.task_id, p) for p in args.patterns)]
    keep = {t.dataset.label for t in tasks}
    cfg = dataclasses.replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label in keep))
    datasets = load_datasets(cfg)
    for task in tasks:
        row = first_fit(task, datasets[task.dataset.label], cfg.protocol_for(task.dataset),
                        args.held_out)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v)
                          for k, v in row.items()}), flush=True)


if __name__ == "__main__":
    main()
