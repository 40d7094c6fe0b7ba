"""Reitmaier et al. 2016's transductive refinement: how many of M0's components the labels dispute.

§5.2 of the paper reports that on Clouds (four generating Gaussians, modelled by four
components) no component was recognised as disputed during the whole run shown there (up to
120 labels), so the model was never revised.  Our reconstruction of "disputed" (refinement.py:
the labeled members of the component carry two classes or more) can be held against that
statement: this script fits the corrected pipeline's M0 (the RWM SVM's density model) to a
fold's pool, draws random labeled sets of several sizes and reports, per size and draw, the
disputed components (under ``--dispute``, either reading), the class purity of each
component's labeled members, its uniqueness (eq 9's largest class weight) and the J of the
refined model.  Training side only: no test row is read, no SVM is fitted after M0.

With ``--task`` the labeled sets are a recorded task's instead of random draws: its pool (the
fold's training rows, preprocessed as the config does) and the rows it had labeled when it
reached each size (its ``queried`` column), as 4DS chose them (§5.2's run is RWM-4DS).

Usage::

    python benchmarks/reitmaier2016_disputed.py clouds --labels 20 40 120 400 --draws 3
    python benchmarks/reitmaier2016_disputed.py clouds --dispute no_majority
    python benchmarks/reitmaier2016_disputed.py clouds --labels 18 58 118 258 \
        --task results/table-003-full/table_003_corrected/tasks/clouds__rwm__four_ds__r0__f0.parquet
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from alprbf.datasets import DATASETS
from alprbf.engine.config import load_config
from alprbf.engine.protocol import split_rows
from alprbf.engine.runner import load_datasets, plan
from alprbf.engine.seeding import derive_seed
from alprbf.models import MODELS
from alprbf.svm_kernels.density import DensityOptions, covariance_of, responsibilities
from alprbf.svm_kernels.refinement import DISPUTE_RULES, component_uniqueness, refine_density

ROOT = Path(__file__).resolve().parents[1]
CORRECTED = ROOT / "configs" / "experiments" / "reitmaier2016_corrected.yaml"


def corrected_rwm_params() -> dict:
    """The RWM SVM's parameters in the corrected config."""
    return next(m.params for m, _ in load_config(CORRECTED).methods if m.label == "rwm")


def corrected_density(params: dict) -> dict:
    """``params["density"]`` (the config's M0 options) as :class:`DensityOptions` fields."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params["density"].items()}


def recorded_task(path: Path):
    """The pool (preprocessed), its labels, the number of classes and a function giving the
    pool positions the task had labeled when it reached ``n`` labels."""
    cfg = load_config(CORRECTED).with_scale("full")
    task = next(t for t in plan(cfg) if t.task_id == path.name.removesuffix(".parquet"))
    cfg = dataclasses.replace(cfg, datasets=(task.dataset,))
    ds = load_datasets(cfg)[task.dataset.label]
    protocol = cfg.protocol_for(task.dataset)
    seed = derive_seed(protocol.seed, "folds", task.dataset.label, task.repetition)
    train, _ = split_rows(ds, protocol, seed, fold=task.fold)[task.fold]
    transform = task.dataset.preprocessing.fit_fold(ds.X[train], ds.categorical)
    position = {int(r): i for i, r in enumerate(train)}
    rows = pd.read_parquet(path, columns=["n_labeled", "queried"])

    def labeled(n: int) -> np.ndarray:
        upto = rows[rows["n_labeled"] <= n]
        if upto.empty or int(upto["n_labeled"].iloc[-1]) != n:
            sizes = rows["n_labeled"].tolist()
            raise SystemExit(f"the task never had exactly {n} labels; sizes: {sizes[:6]} ...")
        return np.array([position[int(r)] for q in upto["queried"] for r in q])

    return (transform(ds.X[train]), ds.y[train].astype(np.int64), int(ds.y.max()) + 1,
            labeled)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--labels", type=int, nargs="+", default=[20, 40, 120, 400])
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--task", type=Path, default=None,
                    help="a recorded task file of the corrected config: its pool and labeled sets")
    ap.add_argument("--dispute", choices=DISPUTE_RULES, default="two_classes",
                    help="the reading of 'disputed' (refinement.py, step 2)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="The least populated class")
    if args.task is None:
        source = DATASETS[args.dataset]()
        ds = source.load_files(allow_download=False, progress=False) \
            if hasattr(source, "load_files") else source.load()
        X, y = ds.X.astype(np.float64), ds.y.astype(np.int64)
        folds = StratifiedKFold(5, shuffle=True, random_state=2013).split(X, y)
        pool = list(folds)[args.fold][0]
        Xp, yp, K = StandardScaler().fit_transform(X[pool]), y[pool], int(y.max()) + 1
        labeled_sets = None
    else:
        Xp, yp, K, labeled_sets = recorded_task(args.task)
    params = corrected_rwm_params()
    svm = MODELS["kernel_svm"](n_classes=K, random_state=0, **params)
    start = np.full(len(yp), np.nan)
    first = np.random.default_rng(0).choice(len(yp), 4 * K, replace=False)
    start[first] = yp[first]
    svm.fit(Xp, start)
    m0 = svm.estimator_.density_
    resp = responsibilities(m0, Xp)
    members = np.argmax(resp, axis=1)
    where = f"fold {args.fold}" if args.task is None else args.task.name
    print(f"{args.dataset} {where}: M0 J = {m0.n_components}, members "
          f"{np.bincount(members, minlength=m0.n_components).tolist()}")
    est = svm.estimator_
    options = DensityOptions(n_components=min(est.n_components, len(Xp)),
                             responsibility_rule=est.responsibility_rule,
                             **corrected_density(params))
    for n in args.labels:
        for draw in range(args.draws if labeled_sets is None else 1):
            codes = np.full(len(yp), -1)
            chosen = np.random.default_rng(draw).choice(len(yp), n, replace=False) \
                if labeled_sets is None else labeled_sets(n)
            codes[chosen] = yp[chosen]
            refined = refine_density(m0, Xp, codes, K, options=options,
                                     covariance_prior=covariance_of(Xp),
                                     dispute=args.dispute, random_state=0)
            unique = " ".join("-" if np.isnan(u) else f"{u:.2f}"
                              for u in component_uniqueness(resp, codes))
            purity = []
            for j in range(m0.n_components):
                c = codes[(members == j) & (codes >= 0)]
                purity.append(f"{np.bincount(c).max() / len(c):.2f}" if len(c) else "-")
            print(f"  {n:4d} labels, draw {draw}: disputed {len(refined.disputed)} of "
                  f"{m0.n_components}; labeled purity {' '.join(purity)}; uniqueness "
                  f"(eq 9) {unique}; refined J {refined.density.n_components}")


if __name__ == "__main__":
    main()
