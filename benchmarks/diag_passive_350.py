"""Diagnostic for table-000 (not a speed benchmark): supervised learners on 350 random labels.

Seed 000's learners end with 350 labels (50 random + 300 queried) and also use the unlabeled
pool.  This script asks how far *passive, supervised* learners get with the same number of
labels and no unlabeled rows: the incremental PRBF-split of seed 001 (full and diagonal
covariances, covariance floor 1e-3 as the active learner), an RBF SVM (C = 1, gamma = "scale")
and Gaussian naive Bayes.  Each whole data set is z-scored (constant columns dropped), 5
stratified folds (shuffled, ``random_state=0``), and 350 training rows drawn per fold with
``numpy.random.default_rng(fold)``.  These folds are not the runner's, so compare means only.

Usage (needs the dataset mirror)::

    ALPRBF_DATA_MIRROR=/path/to/mirror nice python benchmarks/diag_passive_350.py optdigits
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import SVC

from alprbf.datasets import DATASETS
from alprbf.prbf.incremental import IncrementalPRBFSplit

PARAMS = {"waveform": {"n_samples": 5000}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", choices=["segmentation", "waveform", "optdigits", "pendigits"])
    ap.add_argument("--labels", type=int, default=350)
    args = ap.parse_args()
    ds = DATASETS[args.dataset](**PARAMS.get(args.dataset, {})).load(0)
    X, y = ds.X[:, ds.X.std(0) > 0], ds.y
    X = (X - X.mean(0)) / X.std(0)
    errors: dict[str, list[float]] = {}
    folds = StratifiedKFold(5, shuffle=True, random_state=0).split(X, y)
    for f, (tr, te) in enumerate(folds):
        lab = np.random.default_rng(f).choice(tr, args.labels, replace=False)
        models = {"svm": SVC(), "gaussian_nb": GaussianNB(),
                  "incremental_full": IncrementalPRBFSplit(covariance_type="full", reg_covar=1e-3),
                  "incremental_diag": IncrementalPRBFSplit(covariance_type="diag", reg_covar=1e-3)}
        for name, model in models.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X[lab], y[lab])
            errors.setdefault(name, []).append(100 * np.mean(model.predict(X[te]) != y[te]))
        print(f"fold {f}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in errors.items()), flush=True)
    print(f"{args.dataset}, {args.labels} random labels, test error % mean (std over folds):")
    for name, v in errors.items():
        print(f"  {name:18s} {np.mean(v):6.2f} ({np.std(v):.2f})")


if __name__ == "__main__":
    main()
