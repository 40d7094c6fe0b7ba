"""Reitmaier et al. 2016's kernels: RWM against sklearn's RBF, LAP shortcut against direct, RWM SVM
per query.

Three measurements, each ratio taken within one run (same process, same load):

1. **RWM** (``alprbf.svm_kernels.gram.rwm_gram``): the Gram matrix between a 5 000-row pool and
   500 labeled rows, J = 20 full covariances, d = 36, against ``sklearn.metrics.pairwise.
   rbf_kernel`` of the same shape times J (goal: ratio <= 2). Medians of interleaved repeats.
2. **LAP** (``LaplacianDeformation``): N = 4 000 pool rows, d = 36, an RBF base kernel, l = 500
   labeled rows; the deformed Gram matrix over the labeled rows for every point of a 4 x 4
   (gamma_I, gamma_A) grid. "shortcut" = the one decomposition (graph factor, congruence, band
   reduction) + projecting the labeled rows + 16 banded solves; "direct" = one evaluation of
   the definition (one LU of I + M K, ``deformed_gram_direct``) for a single grid point. Both
   start from the same base Gram matrix and graph (their cost is printed apart). The goal
   asked for is shortcut <= 1.5 x one direct deformation; two direct references are timed:
   the full N x N deformed Gram matrix ``K - K (I + M K)^{-1} M K`` (what deforming the kernel
   produces; the textbook formula) and the cheapest direct evaluation of the labeled x labeled
   block alone (one LU and l right-hand sides). The printed ratios also compare with the direct
   grid. Then the block the SVM scores the pool with, pool x labeled at one point, both ways.
3. **RWM SVM per query on satimage** (``kernel_svm`` learner, kernel "rwm", defaults: J from 20
   components, C and gamma tuned by inner 4-fold CV on the first labeled set): the training
   part of fold 0 of a stratified 5-fold split (5 148 rows, z-scored) is the pool; 4 labels
   per class to start; then uncertainty queries (smallest gap between the two largest decision
   values), each = one fit (warm: density model and tuned values reused) + the decision values
   of the whole pool. Timed after the first fit and again after growing the labeled set to
   ``--late`` rows (random labels). Data from the project's loader
   (``ALPRBF_DATA_MIRROR``, default ``/work/shared/datasets`` when unset).

Usage::

    nice .venv/bin/python benchmarks/bench_kernels.py                 # all three, 1 BLAS thread
    nice .venv/bin/python benchmarks/bench_kernels.py --threads 2 --lap-n 2000
    nice .venv/bin/python benchmarks/bench_kernels.py --only rwm --repeat 7
    nice .venv/bin/python benchmarks/bench_kernels.py --only svm --queries 5 --late 500
    nice .venv/bin/python benchmarks/bench_kernels.py --eigh   # also time eigh of A (slow)
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import time

import numpy as np
from bench_em import median_times  # the benchmarks' interleaved-median timer
from sklearn.metrics.pairwise import rbf_kernel
from threadpoolctl import threadpool_limits

from alprbf.models import MODELS
from alprbf.svm_kernels.gram import (
    LaplacianDeformation,
    deformed_gram_direct,
    gmm_gram,
    knn_laplacian,
    rbf_gram,
    rwm_gram,
)


def timed(fn):
    """(result, wall seconds, CPU seconds of this process).

    CPU time is the robust measure on a shared machine with one BLAS thread: other processes'
    load stretches the wall time, not this process's CPU time.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_rwm(n: int, m: int, d: int, J: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    RX, RZ = rng.dirichlet(np.ones(J), n), rng.dirichlet(np.ones(J), m)
    A = rng.normal(size=(J, d, d))
    P = np.linalg.cholesky(np.linalg.inv(A @ A.transpose(0, 2, 1) / d + np.eye(d)))
    common = {"resp_X": RX, "resp_Z": RZ, "precisions_cholesky": P, "gamma": 0.05}
    t_rbf, t_dist, t_sq, t_gmm = median_times([
        lambda: rbf_kernel(X, Z, gamma=0.05),
        lambda: rwm_gram(X, Z, **common),
        lambda: rwm_gram(X, Z, **common, combine="squared"),
        lambda: gmm_gram(X, Z, **common),
    ], repeat)
    print(f"\nRWM Gram matrix {n} x {m}, J = {J} full covariances, d = {d} "
          f"(median of {repeat})")
    print(f"{'kernel':<34}{'seconds':>10}{'/ (J x rbf)':>14}")
    print(f"{'sklearn rbf_kernel (x1)':<34}{t_rbf:>10.4f}{1 / J:>14.3f}")
    for name, t in (("rwm_gram, combine='distance'", t_dist),
                    ("rwm_gram, combine='squared'", t_sq),
                    ("gmm_gram (project-defined)", t_gmm)):
        print(f"{name:<34}{t:>10.4f}{t / (J * t_rbf):>14.3f}")
    print("goal: rwm_gram / (J x rbf_kernel) <= 2")


def bench_lap(N: int, d: int, l: int, eigh: bool) -> None:
    rng = np.random.default_rng(1)
    centers = rng.normal(scale=2.0, size=(8, d))
    X = centers[rng.integers(8, size=N)] + rng.normal(size=(N, d))
    labeled = rng.choice(N, size=l, replace=False)
    base = functools.partial(rbf_gram, gamma=1.0 / d)
    grid = list(itertools.product(10.0 ** np.arange(-4, 4, 2), 10.0 ** np.arange(-4, 4, 2)))

    steps = {}

    def step(name, fn):
        out, wall, cpu = timed(fn)
        steps[name] = (wall, cpu)
        return out

    K, L = step("base Gram matrix + kNN graph (both methods)",
                lambda: (base(X), knn_laplacian(X, n_neighbors=7)))
    K_pool_L = K[:, labeled]
    point = max(range(len(grid)), key=lambda i: grid[i][0] / grid[i][1])  # strongest deformation
    gi, ga = grid[point]
    ref = step("direct: one grid point (LU of I + M K)", lambda: deformed_gram_direct(
        K, L, K_pool_L, K_pool_L, K[np.ix_(labeled, labeled)], gi / (ga * N ** 2)))
    lap = step("shortcut: decomposition (once per base kernel)", lambda: LaplacianDeformation(
        X, lambda a, b: K if a is b else base(a, b), laplacian=L))
    rows = step("shortcut: project the labeled rows (once)",
                lambda: lap.project(lap.rows(index=labeled)))
    grams = step(f"shortcut: {len(grid)} grid points", lambda: [
        lap.gram(rows, gamma_I=g_i, gamma_A=g_a) for g_i, g_a in grid])
    parts = [v for k, v in steps.items() if k.startswith("shortcut")]
    steps["shortcut: whole grid (the three above)"] = tuple(map(sum, zip(*parts, strict=True)))
    n_ratio = len({g_i / g_a for g_i, g_a in grid})
    one = steps["direct: one grid point (LU of I + M K)"]
    steps[f"direct: whole grid ({len(grid)} x one point)"] = (len(grid) * one[0],
                                                              len(grid) * one[1])
    steps[f"direct: {n_ratio} distinct gamma_I/gamma_A (x one point)"] = (n_ratio * one[0],
                                                                         n_ratio * one[1])
    full = step("direct: the full N x N deformed Gram matrix (one point)",
                lambda: deformed_gram_direct(K, L, K, K, K, gi / (ga * N ** 2)))
    del full
    if eigh:
        A = np.random.default_rng(2).normal(size=(N, N))
        step("eigh of an N x N symmetric matrix (not used)", lambda: np.linalg.eigh(A + A.T))
    ref_pool = step("direct: pool x labeled at that point (LU)", lambda: deformed_gram_direct(
        K, L, K, K_pool_L, K_pool_L, gi / (ga * N ** 2)))
    pool_rows = lap.rows(index=np.arange(N))
    pool = step("shortcut: pool x labeled at that point", lambda: lap.gram(
        pool_rows, rows, gamma_I=gi, gamma_A=ga))
    err_pool = float(np.abs(pool - ref_pool).max())
    err = float(np.abs(grams[point] - ref).max())
    print(f"\nLAP deformation, N = {N}, d = {d}, {l} labeled rows, {len(grid)}-point grid "
          f"({n_ratio} distinct gamma_I / gamma_A)")
    print(f"{'step':<52}{'wall s':>9}{'CPU s':>9}{'CPU / direct':>14}")
    for name, (wall, cpu) in steps.items():
        print(f"{name:<52}{wall:>9.3f}{cpu:>9.3f}{cpu / one[1]:>14.2f}")
    print(f"max |shortcut - direct| at gamma_I={gi:g}, gamma_A={ga:g}: {err:.2e} "
          f"(labeled x labeled), {err_pool:.2e} (pool x labeled)")
    whole = steps["shortcut: whole grid (the three above)"][1]
    full_cpu = steps["direct: the full N x N deformed Gram matrix (one point)"][1]
    print("goal asked: shortcut whole grid <= 1.5 x one direct deformation")
    print(f"  against the full deformed kernel matrix (N x N, the textbook formula): "
          f"{whole / full_cpu:.2f}")
    print(f"  against the cheapest direct evaluation (labeled x labeled only): "
          f"{whole / one[1]:.2f}")
    learner = whole + steps["shortcut: pool x labeled at that point"][1]
    print(f"  whole grid + the pool x labeled block at the chosen point (all the learner "
          f"needs), against the full deformed kernel matrix: {learner / full_cpu:.2f}")


def bench_svm(n_queries: int, late: int, kernel: str = "rwm") -> None:
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from alprbf.datasets import DATASETS

    os.environ.setdefault("ALPRBF_DATA_MIRROR", "/work/shared/datasets")
    ds = DATASETS["satimage"]().load(None)
    train, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(ds.X, ds.y))
    X = StandardScaler().fit_transform(ds.X[train])
    y, K = ds.y[train], ds.n_classes
    rng = np.random.default_rng(0)
    y_obs = np.full(len(y), np.nan)
    first = np.concatenate([rng.choice(np.flatnonzero(y == k), 4, replace=False)
                            for k in range(K)])
    y_obs[first] = y[first]
    learner = MODELS["kernel_svm"](n_classes=K, random_state=0, kernel=kernel)

    def query_round():
        """One query: pick the pool row with the smallest margin, label it, refit, score."""
        _, wall_f, cpu_f = timed(lambda: learner.fit(X, y_obs))
        f, wall_s, cpu_s = timed(lambda: learner.estimator_.scores(X))
        top = np.sort(f, axis=1)[:, -2:]
        margin = np.where(np.isnan(y_obs), top[:, 1] - top[:, 0], np.inf)
        pick = int(np.argmin(margin))
        y_obs[pick] = y[pick]
        return wall_f, cpu_f, wall_s, cpu_s

    def report(title, rounds):
        wf, cf, ws, cs = (float(np.median(c)) for c in zip(*rounds, strict=True))
        print(f"{title:<44}{wf:>10.3f}{cf:>10.3f}{ws:>10.3f}{cs:>10.3f}{wf + ws:>10.3f}")

    print(f"\nSVM ({kernel} kernel) per query on satimage: pool {len(X)} rows x {X.shape[1]}, "
          f"{K} classes, medians of {n_queries} queries (seconds)")
    print(f"{'':<44}{'fit wall':>10}{'fit CPU':>10}{'pool wall':>10}{'pool CPU':>10}"
          f"{'wall':>10}")
    report(f"first fit, {len(first)} labels (density + tuning)", [query_round()])
    report(f"per query, {len(first) + 1}-{len(first) + n_queries} labels",
           [query_round() for _ in range(n_queries)])
    more = rng.choice(np.flatnonzero(np.isnan(y_obs)), max(0, late - int((~np.isnan(y_obs))
                                                                    .sum())), replace=False)
    y_obs[more] = y[more]
    n_lab = int((~np.isnan(y_obs)).sum())
    report(f"per query, {n_lab + 1}-{n_lab + n_queries} labels",
           [query_round() for _ in range(n_queries)])
    est = learner.estimator_
    print(f"tuned C = {est.C_:g}, gamma = {est.gamma_:g}; J = {est.density_.n_components} "
          f"components; {est.n_support_vectors_} support vectors at the end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["rwm", "lap", "svm"])
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    parser.add_argument("--repeat", type=int, default=5, help="RWM repeats (median)")
    parser.add_argument("--lap-n", type=int, default=4000)
    parser.add_argument("--eigh", action="store_true", help="also time one N x N eigh")
    parser.add_argument("--queries", type=int, default=5, help="SVM queries timed (median)")
    parser.add_argument("--late", type=int, default=500, help="labels for the late SVM queries")
    args = parser.parse_args()
    with threadpool_limits(args.threads):
        print(f"BLAS threads: {args.threads}")
        if args.only in (None, "rwm"):
            bench_rwm(5000, 500, 36, 20, args.repeat)
        if args.only in (None, "lap"):
            bench_lap(args.lap_n, 36, 500, args.eigh)
        if args.only in (None, "svm"):
            bench_svm(args.queries, args.late)


if __name__ == "__main__":
    main()
