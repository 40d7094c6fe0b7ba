"""The sanity suite's check with every label, for the kernel SVMs of any table-003 config.

`tests/test_model_sanity.py` checks the corrected config's kernels; a reading declared beside it
(a decision record and its config, e.g. decision 0312) is measured here with the suite's own
folds, helpers and margin before any verdict of that reading is stated.  For each data set it
prints the pooled out-of-fold accuracy (%) of the config's SVMs, per fold and pooled, and of
the suite's reference (the tuned RBF SVC), and whether every class the suite demands is
predicted.  Cost: one fit per fold and kernel with every pool row labeled (satimage: minutes).

Usage::

    ALPRBF_DATA_MIRROR=... python benchmarks/reitmaier2016_sanity_reading.py \
        configs/experiments/reitmaier2016_m0_0312.yaml --kernels rwm gmm --datasets ecoli pima
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from alprbf.engine.config import load_config  # noqa: E402
from tests.test_model_sanity import (  # noqa: E402
    FOLDS,
    MARGINS,
    Case,
    dataset,
    fitted_learner,
    folds,
    reference_predictions,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--kernels", nargs="+", default=["rwm", "gmm"])
    ap.add_argument("--datasets", nargs="+", required=True)
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the tuned RBF SVC (its figures are in docs/sanity.md)")
    args = ap.parse_args()
    config = load_config(args.config)
    params = {m.label: m.params for m, _ in config.methods if m.name == "kernel_svm"}
    cache = Path(tempfile.mkdtemp(prefix="sanity-reading-"))
    for name in args.datasets:
        X, y = dataset(name)
        K = int(y.max()) + 1
        ref = None if args.no_reference else reference_predictions("svm", name, cache)
        if ref is not None:
            print(f"{name}: reference (tuned RBF SVC) {100 * np.mean(ref == y):.1f} %")
        for kernel in args.kernels:
            case = Case(f"kernel_svm-{kernel}-{config.name}", "kernel_svm", "svm",
                        params[kernel])
            pred = np.empty_like(y)
            per_fold, t0 = [], time.perf_counter()
            for f, (Xtr, ytr, Xte, test) in enumerate(folds(name)):
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
