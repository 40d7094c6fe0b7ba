"""Reitmaier et al. 2016's kernel SVMs with nearly every label, training side only
(docs/sanity.md, "Table 003's data sets").

The sanity suite fits each model with every training row labeled and scores the test rows of
five folds.  This script asks the same question without reading a test row: for each of the
suite's five folds (same seed, same z-scoring), the fold's training rows are split into
``--inner`` stratified parts; the SVM is fitted with the whole training part as its pool and
one part's labels hidden (``nan``: unlabeled pool rows, as the loop hands them over), and
scored on that part.  The result is the pool accuracy at (K - 1) / K labeled, averaged over the
parts and reported per fold: what a learner that uses the pool's structure (the density model,
its refinement with the labels, the LAP graph) makes of the labels, on rows it was not fitted
to.

Variants (``--variant``, repeatable) change the corrected config's parameters of the model:

* ``configured``: as ``reitmaier2016_corrected.yaml`` runs it;
* ``no_refine``: ``refine: false`` (the transductive refinement of §4.2 off);
* ``full_rank``: ``density.min_component_rows = d + 1`` (components that cannot determine a
  full covariance dropped, in M0 and in the refinement's local mixtures).

Usage (glass, ecoli and pima need the data set mirror)::

    ALPRBF_DATA_MIRROR=... python benchmarks/reitmaier2016_pool_capacity.py rwm \\
        glass ecoli pima iris wine seeds --variant configured --variant no_refine
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from alprbf.datasets import DATASETS
from alprbf.engine.config import load_config
from alprbf.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
CORRECTED = ROOT / "configs" / "experiments" / "reitmaier2016_corrected.yaml"
FOLDS, SEED = 5, 49            # tests/test_model_sanity.py's folds
BUNDLED = {"iris", "wine"}     # the copies sklearn ships, as the sanity suite reads them


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    source = DATASETS[name]()
    files = name not in BUNDLED and hasattr(source, "load_files")   # generated: no files
    ds = source.load_files(allow_download=False, progress=False) if files else source.load()
    return ds.X.astype(np.float64), ds.y.astype(np.int64)


def variant_params(kernel: str, variant: str, d: int) -> dict:
    params = dict(next(m.params for m, _ in load_config(CORRECTED).methods if m.label == kernel))
    if variant == "no_refine":
        params["refine"] = False
    elif variant == "full_rank":
        params["density"] = dict(params.get("density") or {}, min_component_rows=d + 1.0)
    elif variant != "configured":
        raise SystemExit(f"invalid variant {variant!r}; valid: configured, no_refine, full_rank")
    return params


def pool_accuracy(X: np.ndarray, y: np.ndarray, params: dict, inner: int) -> list[float]:
    """Per outer fold: the pool accuracy on hidden inner parts of its training rows."""
    K = int(y.max()) + 1
    out = []
    outer = StratifiedKFold(FOLDS, shuffle=True, random_state=SEED)
    for f, (train, _test) in enumerate(outer.split(X, y)):     # the test rows are not read
        Xtr = StandardScaler().fit_transform(X[train])
        ytr = y[train]
        right = 0
        parts = StratifiedKFold(inner, shuffle=True, random_state=100 + f)
        for _, hidden in parts.split(Xtr, ytr):
            labels = ytr.astype(np.float64)
            labels[hidden] = np.nan
            learner = MODELS["kernel_svm"](n_classes=K, random_state=SEED + f, **params)
            learner.fit(Xtr, labels)
            right += int(np.sum(learner.predict(Xtr[hidden]) == ytr[hidden]))
        out.append(100.0 * right / len(ytr))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", choices=("rbf", "rwm", "gmm", "lap"))
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--variant", action="append", default=None)
    ap.add_argument("--inner", type=int, default=5)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="The least populated class")
    for name in args.datasets:
        X, y = load(name)
        for variant in args.variant or ["configured"]:
            acc = pool_accuracy(X, y, variant_params(args.kernel, variant, X.shape[1]),
                                args.inner)
            folds = " ".join(f"{a:.1f}" for a in acc)
            print(f"{name:8s} {args.kernel} {variant:10s} {np.mean(acc):5.1f}  ({folds})",
                  flush=True)


if __name__ == "__main__":
    main()
