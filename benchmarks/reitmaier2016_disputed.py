"""Reitmaier et al. 2016's transductive refinement: how many of M0's components the labels dispute.

§5.2 of the paper reports that on Clouds (four generating Gaussians, modelled by four
components) no component was recognised as disputed during the whole run shown there (up to
120 labels), so the model was never revised.  Our reconstruction of "disputed" (refinement.py:
the labeled members of the component carry two classes or more) can be held against that
statement: this script fits the corrected pipeline's M0 (the RWM SVM's density model) to a
fold's pool, draws random labeled sets of several sizes and reports, per size and draw, the
disputed components, the class purity of each component's labeled members and the J of the
refined model.  Training side only: no test row is read, no SVM is fitted after M0.

Usage::

    python benchmarks/reitmaier2016_disputed.py clouds --labels 20 40 120 400 --draws 3
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
from alprbf.svm_kernels.density import DensityOptions, covariance_of, responsibilities
from alprbf.svm_kernels.refinement import refine_density

ROOT = Path(__file__).resolve().parents[1]
CORRECTED = ROOT / "configs" / "experiments" / "reitmaier2016_corrected.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--labels", type=int, nargs="+", default=[20, 40, 120, 400])
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--fold", type=int, default=0)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="The least populated class")
    source = DATASETS[args.dataset]()
    ds = source.load_files(allow_download=False, progress=False) \
        if hasattr(source, "load_files") else source.load()
    X, y = ds.X.astype(np.float64), ds.y.astype(np.int64)
    folds = StratifiedKFold(5, shuffle=True, random_state=2013).split(X, y)
    pool = list(folds)[args.fold][0]
    Xp, yp, K = StandardScaler().fit_transform(X[pool]), y[pool], int(y.max()) + 1
    params = next(m.params for m, _ in load_config(CORRECTED).methods if m.label == "rwm")
    svm = MODELS["kernel_svm"](n_classes=K, random_state=0, **params)
    start = np.full(len(yp), np.nan)
    first = np.random.default_rng(0).choice(len(yp), 4 * K, replace=False)
    start[first] = yp[first]
    svm.fit(Xp, start)
    m0 = svm.estimator_.density_
    members = np.argmax(responsibilities(m0, Xp), axis=1)
    print(f"{args.dataset} fold {args.fold}: M0 J = {m0.n_components}, members "
          f"{np.bincount(members, minlength=m0.n_components).tolist()}")
    est = svm.estimator_
    density = {k: tuple(v) if isinstance(v, list) else v for k, v in params["density"].items()}
    options = DensityOptions(n_components=min(est.n_components, len(Xp)),
                             responsibility_rule=est.responsibility_rule, **density)
    for n in args.labels:
        for draw in range(args.draws):
            codes = np.full(len(yp), -1)
            chosen = np.random.default_rng(draw).choice(len(yp), n, replace=False)
            codes[chosen] = yp[chosen]
            refined = refine_density(m0, Xp, codes, K, options=options,
                                     covariance_prior=covariance_of(Xp), random_state=0)
            purity = []
            for j in range(m0.n_components):
                c = codes[(members == j) & (codes >= 0)]
                purity.append(f"{np.bincount(c).max() / len(c):.2f}" if len(c) else "-")
            print(f"  {n:4d} labels, draw {draw}: disputed {len(refined.disputed)} of "
                  f"{m0.n_components}; labeled purity {' '.join(purity)}; refined J "
                  f"{refined.density.n_components}")


if __name__ == "__main__":
    main()
