"""The sanity suite's check with every label, for the kernel SVMs of any table-003 config.

`tests/test_model_sanity.py` checks the corrected config's kernels; a reading declared beside it
(a decision record and its config, e.g. decision 0312) is measured here with the suite's own
folds, helpers and margin before any verdict of that reading is stated.  For each data set it
prints the pooled out-of-fold accuracy (%) of the config's SVMs, per fold and pooled, and of
the suite's reference (the tuned RBF SVC), and whether every class the suite demands is
predicted.  Cost: one fit per fold and kernel with every pool row labeled (satimage: minutes).

``--no-refine`` and ``--starts`` change the config's kernels for a diagnostic (docs/sanity.md:
the refinement and J = 1), never for a reading.

Usage::

    ALPRBF_DATA_MIRROR=... python benchmarks/reitmaier2016_sanity_reading.py \
        configs/experiments/reitmaier2016_m0_0312.yaml --kernels rwm gmm --datasets ecoli pima
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from alprbf.engine.config import load_config  # noqa: E402
from alprbf.engine.runner import load_datasets  # noqa: E402
from tests.test_model_sanity import (  # noqa: E402
    FOLDS,
    MARGINS,
    SEED,
    Case,
    dataset,
    fitted_learner,
    folds,
    reference_predictions,
    tuned_rbf_svc,
)


def data_and_folds(config, spec):
    """The suite's data and folds for a config's data set: as the suite loads it when the
    config gives it no parameters; otherwise loaded and preprocessed as the config's runs are
    (:func:`alprbf.engine.runner.load_datasets`: e.g. pima's ``zeros_missing`` and its
    missing-value policy, with the run's seed), then the suite's folds and z-score."""
    if not spec.params:
        return dataset(spec.name), folds(spec.name)
    ds = load_datasets(dataclasses.replace(config, datasets=(spec,)))[spec.label]
    X, y = ds.X.astype(np.float64), ds.y.astype(np.int64)
    out = []
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y):
        transform = spec.preprocessing.fit_fold(X[train], ds.categorical)
        scaler = StandardScaler().fit(transform(X[train]))
        out.append((scaler.transform(transform(X[train])), y[train],
                    scaler.transform(transform(X[test])), test))
    return (X, y), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--kernels", nargs="+", default=["rwm", "gmm"],
                    help="kernel SVM labels of the config (rbf, rwm, gmm, lap)")
    ap.add_argument("--datasets", nargs="+", required=True)
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the tuned RBF SVC (its figures are in docs/sanity.md)")
    ap.add_argument("--no-refine", action="store_true",
                    help="diagnostic: the kernels without the refinement (refine: false)")
    ap.add_argument("--starts", nargs="+", type=int,
                    help="diagnostic: M0's VI starts (density initial_components), e.g. 1")
    args = ap.parse_args()
    config = load_config(args.config)
    params = {m.label: dict(m.params) for m, _ in config.methods if m.name == "kernel_svm"}
    for p in params.values():
        if args.no_refine:
            p["refine"] = False
        if args.starts:
            p["density"] = {**p.get("density", {}), "initial_components": args.starts}
    cache = Path(tempfile.mkdtemp(prefix="sanity-reading-"))
    for name in args.datasets:
        spec = next(d for d in config.datasets if d.label == name)
        (X, y), parts = data_and_folds(config, spec)
        K = int(y.max()) + 1
        ref = None
        if not args.no_reference and not spec.params:
            ref = reference_predictions("svm", spec.name, cache)
        elif not args.no_reference:
            ref = np.empty_like(y)
            for f, (Xtr, ytr, Xte, test) in enumerate(parts):
                ref[test] = tuned_rbf_svc(f).fit(Xtr, ytr).predict(Xte)
        if ref is not None:
            print(f"{name}: reference (tuned RBF SVC) {100 * np.mean(ref == y):.1f} %")
        for kernel in args.kernels:
            case = Case(f"kernel_svm-{kernel}-{config.name}", "kernel_svm", "svm",
                        params[kernel])
            pred = np.empty_like(y)
            per_fold, t0 = [], time.perf_counter()
            for f, (Xtr, ytr, Xte, test) in enumerate(parts):
                learner = fitted_learner(case, Xtr, ytr, f, K)
                pred[test] = learner.predict(Xte)
                per_fold.append(100 * np.mean(pred[test] == y[test]))
            acc = 100 * np.mean(pred == y)
            counts = np.bincount(y, minlength=K)
            demanded = set(np.flatnonzero(counts >= FOLDS).tolist())
            if ref is not None:
                demanded &= set(y[ref == y].tolist())
            missing = sorted(demanded - set(pred.tolist()))
            verdict = ""
            if ref is not None:
                ok = acc >= 100 * np.mean(ref == y) - MARGINS["svm"] and not missing
                verdict = "passes" if ok else "fails"
            print(f"{name} {kernel}: {acc:.1f} % (folds "
                  f"{' / '.join(f'{a:.1f}' for a in per_fold)}), classes never predicted "
                  f"{missing or 'none'}, {time.perf_counter() - t0:.0f} s {verdict}", flush=True)


if __name__ == "__main__":
    main()
