"""Titsias & Likas 2001's training-side criterion for the EM start (docs/decisions/0002): is a
recorded fit beaten by QDA, its own special case, on the training rows?

For every task of a recorded table-002 run (all training rows labeled, one fit per task) the
fit's mean training ``log p(x|y)`` (``train_loglik`` in the task file's ``model_state``) and its
training error (``1 - labeled_accuracy``) are compared with QDA on the same fold's training
rows: one full Gaussian per class (class mean, ML covariance plus the model's ``reg_covar``),
priors ``N_k / N`` -- the network with one kernel per class, which every M >= K network
contains.  A fit is *beaten* when QDA has the higher log-likelihood or the lower training error.
Only training rows are used; test errors are printed beside, not used.

Then the paired comparison the config's ``seed_key`` makes possible: per data set, M and start,
the test error of the constrained and the plain PRBF and their per-fold difference (both
started from the same draws on each fold), mean and standard error over the folds.

Usage (needs the data set mirror)::

    ALPRBF_DATA_MIRROR=... python benchmarks/titsias2001_start_criterion.py \
        results/table-002-full/table_002 [--config configs/table_002.yaml]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import multivariate_normal

from alprbf.engine.config import load_config
from alprbf.engine.protocol import split_rows
from alprbf.engine.runner import load_datasets
from alprbf.engine.seeding import derive_seed


def qda_on_training_rows(X: np.ndarray, y: np.ndarray, reg_covar: float) -> tuple[float, float]:
    """Mean ``log p(x_i|y_i)`` and training error of QDA at the floor ``reg_covar``."""
    classes = np.unique(y)
    logpdf = np.empty((len(y), len(classes)))
    for j, k in enumerate(classes):
        rows = X[y == k]
        cov = np.cov(rows.T, bias=True) + reg_covar * np.eye(X.shape[1])
        logpdf[:, j] = multivariate_normal(rows.mean(0), cov).logpdf(X)
    codes = np.searchsorted(classes, y)
    prior = np.log(np.bincount(codes) / len(y))
    error = float(np.mean(np.argmax(logpdf + prior, axis=1) != codes))
    return float(logpdf[np.arange(len(y)), codes].mean()), error


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("record")
    ap.add_argument("--config", default="configs/table_002.yaml")
    ap.add_argument("--scale", default="full")
    args = ap.parse_args()
    cfg = load_config(args.config, args.scale)
    datasets = load_datasets(cfg)
    floors = {m.label: float(m.params.get("reg_covar", 1e-6)) for m, _ in cfg.methods}
    qda: dict[tuple[str, int, float], tuple[float, float]] = {}
    for d in cfg.datasets:
        ds, proto = datasets[d.label], cfg.protocol_for(d)
        folds = split_rows(ds, proto, derive_seed(proto.seed, "folds", d.label, 0))
        for f, (train, _) in enumerate(folds):
            transform = d.preprocessing.fit_fold(ds.X[train], ds.categorical)
            for floor in sorted(set(floors.values())):
                qda[(d.label, f, floor)] = qda_on_training_rows(
                    transform(ds.X[train]), ds.y[train], floor)
    rows = []
    for path in sorted(Path(args.record, "tasks").glob("*.parquet")):
        t = pd.read_parquet(path).iloc[-1]
        state = json.loads(pd.read_parquet(path)["model_state"].dropna().iloc[-1])
        q_ll, q_err = qda[(t["dataset"], int(t["fold"]), floors[t["model"]])]
        ll, err = state["train_loglik"], 1.0 - t["labeled_accuracy"]
        rows.append({"dataset": t["dataset"], "model": t["model"], "fold": int(t["fold"]),
                     "train_loglik": ll, "qda_loglik": q_ll, "train_error": err,
                     "qda_error": q_err, "beaten_ll": ll < q_ll, "beaten_err": err > q_err,
                     "test_error": t["test_error"]})
    df = pd.DataFrame(rows)
    df["beaten"] = df.beaten_ll | df.beaten_err
    df["start"] = np.where(df.model.str.contains("_classkm"), "within-class", "pooled")
    cell = df.groupby(["dataset", "model"]).agg(
        beaten=("beaten", "sum"), beaten_ll=("beaten_ll", "sum"), beaten_err=("beaten_err", "sum"),
        ll=("train_loglik", "mean"), qda_ll=("qda_loglik", "mean"),
        train_err=("train_error", "mean"), qda_err=("qda_error", "mean"),
        test_err=("test_error", "mean"))
    pd.set_option("display.width", 200)
    print(cell.round(4).to_string())
    print()
    print(df.groupby("start").agg(tasks=("beaten", "size"), beaten=("beaten", "sum"),
                                  beaten_ll=("beaten_ll", "sum"),
                                  beaten_err=("beaten_err", "sum")).to_string())
    print()
    print(paired_differences(df).round(2).to_string())


def paired_differences(df: pd.DataFrame) -> pd.DataFrame:
    """Constrained minus plain test error (in %) per fold, by data set, M and start."""
    df = df.assign(M=df.model.str.extract(r"_M(\d+)")[0].astype(int),
                   kind=np.where(df.model.str.startswith("constrained"), "constrained", "plain"))
    wide = df.pivot_table(index=["dataset", "M", "start", "fold"], columns="kind",
                          values="test_error").dropna() * 100
    wide["diff"] = wide["constrained"] - wide["plain"]
    g = wide.groupby(level=["dataset", "M", "start"])
    return pd.DataFrame({"constrained": g["constrained"].mean(), "plain": g["plain"].mean(),
                         "diff": g["diff"].mean(),
                         "diff_se": g["diff"].std(ddof=1) / np.sqrt(g["diff"].count()),
                         "folds_constrained_better": g["diff"].apply(lambda d: int((d < 0).sum())),
                         "folds": g["diff"].count()})


if __name__ == "__main__":
    main()
