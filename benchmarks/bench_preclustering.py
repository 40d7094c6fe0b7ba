"""Per-query cost of the pre-clustering method (Nguyen & Smeulders 2004) on MNIST raw pixels, by
part.

One task as Fig. 6 runs it: a database of ``n`` training images (default 5 000, drawn at random),
one digit against the rest, an initial set of ``0.4 % n`` labels (half of them the digit), then
one query at a time.  Every query is a refit of the ``preclustering`` learner (the clustering is
reused from the previous fit unless the scale shrinks) and a ``preclustering`` query.  Printed:
the first fit (the initial clustering), then per query the wall time split into clustering
(fission, priors, memberships after a shrink), Newton (the label model) and selection (the
coarse-to-fine check in the fit plus the strategy's scoring and argmax), with sigma and the
number of clusters as they evolve; and for comparison the linear SVM with closest-to-boundary.

Usage::

    ALPRBF_DATA_MIRROR=/work/shared/datasets nice .venv/bin/python benchmarks/bench_preclustering.py
    ... bench_preclustering.py --n 1250 --queries 155 --digit 3     # a whole Fig. 6 task

BLAS is limited to ``--threads`` (default 1).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from alprbf.datasets import DATASETS
from alprbf.models import MODELS
from alprbf.strategies import STRATEGIES


def task(n: int, digit: int, seed: int):
    data = DATASETS["mnist"](subset="train").load()
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(data.X), n, replace=False)
    X = data.X[rows]
    y = (data.y[rows] == digit).astype(float)
    n_init = max(2, round(0.004 * n))
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    init = np.concatenate([rng.choice(pos, n_init // 2, replace=False),
                           rng.choice(neg, n_init - n_init // 2, replace=False)])
    y_obs = np.full(n, np.nan)
    y_obs[init] = y[init]
    return X, y, y_obs


def run_preclustering(X, y, y_obs, queries: int, seed: int) -> None:
    learner = MODELS["preclustering"](n_classes=2, random_state=seed)
    strategy = STRATEGIES["preclustering"]()
    rng = np.random.default_rng(seed)
    tic = time.perf_counter()
    learner.fit(X, y_obs)
    first = time.perf_counter() - tic
    est = learner.estimator_
    print(f"first fit {first:.2f} s  (clustering {est.timings_['clustering']:.2f} s, "
          f"{est.partition_.n_clusters} clusters, sigma {est.sigma_:.1f}, "
          f"max score {est.max_score_:.3f})")
    parts = np.zeros((queries, 4))          # clustering, newton, selection, total
    print(" query  total_ms  clust_ms  newton_ms  select_ms  sigma    K  max_score  error")
    for q in range(queries):
        tic = time.perf_counter()
        t_sel = time.perf_counter()
        pick = strategy.query(X, y_obs, learner, 1, rng)
        t_sel = time.perf_counter() - t_sel
        y_obs[pick] = y[pick]
        learner.fit(X, y_obs)
        total = time.perf_counter() - tic
        est = learner.estimator_
        t = est.timings_
        parts[q] = (t["clustering"], t["newton"], t["selection"] + t_sel, total)
        pool = np.isnan(y_obs)
        err = np.mean(learner.predict(X[pool]) != y[pool]) * pool.sum() / len(y)
        if q < 10 or (q + 1) % 10 == 0 or t["clustering"] > 0.05:
            print(f"{q + 1:6d} {1e3 * total:9.1f} {1e3 * parts[q, 0]:9.1f} "
                  f"{1e3 * parts[q, 1]:10.1f} {1e3 * parts[q, 2]:10.1f} {est.sigma_:7.1f} "
                  f"{est.partition_.n_clusters:4d} {est.max_score_:10.3f} {err:6.3f}")
    mean = parts.mean(axis=0)
    share = parts[:, :3].sum(axis=0) / parts[:, 3].sum()
    print(f"mean per query {1e3 * mean[3]:.1f} ms: clustering {1e3 * mean[0]:.1f} ms "
          f"({100 * share[0]:.0f} %), Newton {1e3 * mean[1]:.1f} ms ({100 * share[1]:.0f} %), "
          f"selection {1e3 * mean[2]:.1f} ms ({100 * share[2]:.0f} %), "
          f"other {100 * (1 - share.sum()):.0f} %; shrinks {est.n_shrinks_}")
    fits = learner.estimator_.fits_
    print(f"last label fit: {fits[0].n_iter} Newton steps, converged {fits[0].converged}")


def run_svm(X, y, y_obs, queries: int, seed: int) -> None:
    learner = MODELS["linear_svm"](n_classes=2).fit(X, y_obs)
    strategy = STRATEGIES["closest_boundary"]()
    rng = np.random.default_rng(seed)
    tic = time.perf_counter()
    for _ in range(queries):
        pick = strategy.query(X, y_obs, learner, 1, rng)
        y_obs[pick] = y[pick]
        learner.fit(X, y_obs)
    per = (time.perf_counter() - tic) / queries
    pool = np.isnan(y_obs)
    err = np.mean(learner.predict(X[pool]) != y[pool]) * pool.sum() / len(y)
    print(f"linear SVM + closest-to-boundary: {1e3 * per:.1f} ms per query, error {err:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--digit", type=int, default=3)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    X, y, y_obs = task(args.n, args.digit, args.seed)
    print(f"MNIST train, n = {args.n}, digit {args.digit} vs rest, {int((~np.isnan(y_obs)).sum())}"
          f" initial labels, {args.queries} queries, {args.threads} BLAS thread(s)")
    with threadpool_limits(args.threads):
        run_preclustering(X, y, y_obs.copy(), args.queries, args.seed)
        run_svm(X, y, y_obs.copy(), args.queries, args.seed)


if __name__ == "__main__":
    main()
