"""Training time of incremental PRBF-split beside SVM tuning time (the analogue of 001 Table III).

Run (single BLAS thread, on an otherwise idle machine)::

    ALPRBF_DATA_MIRROR=/work/shared/datasets .venv/bin/python benchmarks/bench_incremental.py
    .venv/bin/python benchmarks/bench_incremental.py --datasets iris wine --folds 2

For each data set and each of the first ``--folds`` outer folds of a 10-fold split (z-scored on
the training part), it times on the outer training part:

* ``incr_run``  one incremental PRBF-split run (full covariances, M_max = --max-components);
* ``incr_sel``  the whole 001 protocol for incremental PRBF-split: inner CV over m and three
  covariance types (``SelectedIncrementalPRBFSplit``), including the final retraining;
* ``svm_sel``   the SVM's gamma-then-C line search on the same inner folds plus the final fit
  (``TunedSVC``);

and prints the means, the selected number of components / support vectors and the ratio
``svm_sel / incr_sel`` (001 Table III reports its Matlab times; only ratios are comparable).
Data sets whose loader cannot find its files fall back to the sklearn copies (iris, wine) or are
skipped with a message.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from alprbf.datasets import DATASETS
from alprbf.errors import UserError
from alprbf.models.svm_tuned import TunedSVC
from alprbf.prbf.incremental import IncrementalPRBFSplit, SelectedIncrementalPRBFSplit

DEFAULT = ["bupa", "pima", "iris_uci", "vehicle", "glass", "waveform_uci", "wine_uci",
           "new_thyroid"]
FALLBACK = {"iris_uci": "iris", "wine_uci": "wine"}


def _load(name: str):
    for n in (name, FALLBACK.get(name)):
        if n is None:
            continue
        try:
            return n, DATASETS[n]().load(0)
        except (UserError, OSError) as exc:
            print(f"# {n}: {exc}")
    return None, None


def _zscore(Xtr, Xte):
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, (Xte - mu) / sd


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=DEFAULT)
    ap.add_argument("--folds", type=int, default=1, help="outer folds timed per data set")
    ap.add_argument("--max-components", type=int, default=30)
    ap.add_argument("--inner-folds", type=int, default=9)
    args = ap.parse_args(argv)
    threadpool_limits(1)
    hdr = (f"{'dataset':<14}{'n':>6}{'d':>4}{'incr_run s':>12}{'incr_sel s':>12}"
           f"{'m (split)':>13}{'err %':>7}{'svm_sel s':>11}{'SVs':>7}{'err %':>7}"
           f"{'svm/incr':>10}")
    print(hdr)
    for name in args.datasets:
        used, ds = _load(name)
        if ds is None:
            print(f"{name:<14} skipped (no data)")
            continue
        X, y = ds.X, ds.y
        rows = []
        folds = KFold(10, shuffle=True, random_state=0).split(X)
        for f, (tr, te) in enumerate(folds):
            if f >= args.folds:
                break
            Xtr, Xte = _zscore(X[tr], X[te])
            t = time.perf_counter()
            IncrementalPRBFSplit(max_components=args.max_components).fit(Xtr, y[tr])
            t_run = time.perf_counter() - t
            inc = SelectedIncrementalPRBFSplit(max_components=args.max_components,
                                               inner_folds=args.inner_folds).fit(Xtr, y[tr])
            svm = TunedSVC(inner_folds=args.inner_folds).fit(Xtr, y[tr])
            rows.append((t_run, inc.fit_time_, inc.n_components_, inc.params_.n_components,
                         100 * np.mean(inc.predict(Xte) != y[te]), svm.fit_time_,
                         svm.n_support_vectors_, 100 * np.mean(svm.predict(Xte) != y[te])))
        r = np.array(rows, dtype=float).mean(0)
        print(f"{used:<14}{len(y):>6}{X.shape[1]:>4}{r[0]:>12.2f}{r[1]:>12.1f}"
              f"{f'{r[2]:.1f} ({r[3]:.1f})':>13}{r[4]:>7.1f}{r[5]:>11.1f}{r[6]:>7.0f}"
              f"{r[7]:>7.1f}{r[5] / r[1]:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
