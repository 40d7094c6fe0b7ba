"""One PRBF EM iteration vs one sklearn GaussianMixture EM iteration (issue 4 benchmark).

Both sides run on the same data, number of components and covariance type, from the same
parameters, with a single BLAS thread (threadpoolctl).  One iteration = E-step + M-step:
``alprbf.prbf.m_step`` + the E-step as ``run_em`` takes it (K classes, all rows labeled; by
blocks of rows, ``blocked_e_step``, where that keeps the bits, else ``e_step`` into the spent
arrays; it carries the M-step's moments) against
``GaussianMixture._e_step`` + ``_m_step``.  The per-fit setup of alprbf (``prepare_data``:
centring and, for "full", the cached quadratic features) is timed separately; it is paid once
per EM run, not per iteration.  Optionally (``--ssl``) half of the rows are unlabeled.

Usage::

    nice .venv/bin/python benchmarks/bench_em.py            # both sizes, three covariance types
    # every case of the goal in one run: supervised and half unlabeled, as alprbf runs
    nice .venv/bin/python benchmarks/bench_em.py --repeat 20 --unlabeled 0 0.5 --kernels pinned
    nice .venv/bin/python benchmarks/bench_em.py --repeat 20 --cov full
    # each side timed over consecutive calls, as inside its own EM loop (warm caches)
    nice .venv/bin/python benchmarks/bench_em.py --repeat 4 --block 5
    # each call from caches another 16 MiB of data went through (both sides)
    nice .venv/bin/python benchmarks/bench_em.py --repeat 20 --flush 16
    # the regime of a QBC member late in a pen-digits fold (issue 5): 150-270 diagonal nodes,
    # 96 % of the rows unlabeled
    nice .venv/bin/python benchmarks/bench_em.py --cov diag --components 20 150 270 \
        --unlabeled 0.96

Prints one line per case with the median times (ms) and the ratio ours / sklearn (goal <= 0.5),
to three decimals.

Kernels.  By default both sides run with the CPU's own NumPy and OpenBLAS kernels (on an
AVX-512 CPU: NumPy's AVX-512 ``exp``, about 1 ns per value).  ``--kernels pinned`` pins them to
the AVX2 level first, as every ``alprbf`` command does (:mod:`alprbf.engine.cpu`): then NumPy's
``exp`` is the C library's, 4-5 ns per value (sklearn's side), and ours its compiled copy, 1.6 ns
(:mod:`alprbf.prbf.fast.exp`).

Allocator state.  sklearn's iteration allocates several (n, M) temporaries; glibc serves an
allocation above its mmap threshold with fresh pages (a page fault per 4 KiB) and raises that
threshold the first time such a block is freed, so the same sklearn iteration took 4 ms or
9-12 ms (diag, 8 800 x 16) depending on which cases had run before it in the process.  The
benchmark therefore fixes the state before any case: ``--malloc heap`` (default) sets glibc's
mmap and trim thresholds to 1 GiB with ``mallopt`` -- the state a long-running process reaches
by itself, and what both sides get -- and ``--malloc default`` leaves glibc's dynamic rule
(ratios then depend on the order of the cases).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import time
import warnings

from alprbf.engine import cpu

# --kernels is read before NumPy is imported (pinning must precede it); main's parser
# inherits the same option
KERNELS = argparse.ArgumentParser(add_help=False)
KERNELS.add_argument("--kernels", choices=["native", "pinned"], default="native",
                     help="native: the CPU's own kernels for NumPy and OpenBLAS (both sides); "
                          "pinned: the AVX2 kernels every `alprbf` command runs with "
                          "(alprbf.engine.cpu)")
if KERNELS.parse_known_args()[0].kernels == "pinned":
    cpu.pin_kernels()          # as the command line does

import numpy as np  # noqa: E402
from sklearn.mixture import GaussianMixture  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from alprbf import prbf  # noqa: E402
from alprbf.prbf import PRBFParams, e_step, m_step, prepare_data  # noqa: E402

CASES = [(8800, 16, 20, 10), (4500, 62, 20, 10)]   # (N, d, M, K): pen digits / optical digits


def fix_allocator(mode: str) -> str:
    """Put glibc's allocator in a fixed state (see the module docstring); returns what was done."""
    if mode == "default":
        return "glibc default (dynamic mmap threshold)"
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        ok = libc.mallopt(-3, 1 << 30) and libc.mallopt(-1, 1 << 30)  # M_MMAP/M_TRIM_THRESHOLD
    except (OSError, AttributeError, TypeError):
        ok = 0
    return "heap (mallopt thresholds 1 GiB)" if ok else "glibc default (mallopt unavailable)"


def make_data(n: int, d: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(K, size=n)
    centers = rng.normal(scale=3.0, size=(K, d))
    return rng.normal(size=(n, d)) + centers[y], y


def median_times(fns, repeat: int, block: int = 1, flush_mb: float = 0.0) -> list[float]:
    """Median wall time of each function over ``repeat`` rounds of ``block`` consecutive calls
    each; the rounds alternate between the functions so that load drifts hit all.

    ``block = 1`` interleaves single calls: every call starts with the caches left by the
    other side's.  ``block > 1`` also times calls that follow a call of the same function, as
    iterations do inside an EM loop (both sides: run_em and GaussianMixture.fit).
    ``flush_mb > 0`` reads that many MiB of other data, untimed, before every timed call
    (both sides): each call then starts from caches holding little of its own data.
    """
    junk = np.ones(int(flush_mb * 131072)) if flush_mb > 0 else None
    for fn in fns:
        fn()  # warm-up
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times, strict=True):
            for _ in range(block):
                if junk is not None:
                    junk.sum()
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
    return [float(np.median(ts)) for ts in times]


def bench_case(n, d, M, K, ct, repeat, unlabeled=0.0, block=1, flush_mb=0.0):
    X, y = make_data(n, d, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = GaussianMixture(M, covariance_type=ct, max_iter=1, random_state=0).fit(X)
    codes = np.where(np.random.default_rng(1).random(n) < unlabeled, -1, y)
    t0 = time.perf_counter()
    data = prepare_data(X, codes, K, ct)
    setup = time.perf_counter() - t0
    params = PRBFParams(gm.means_.copy(), gm.covariances_.copy(), gm.precisions_cholesky_.copy(),
                        np.tile(gm.weights_[:, None], (1, K)), np.bincount(y, minlength=K) / n, ct)

    box = [e_step(data, params)]
    spent = box[0]
    # as in run_em: the E-steps between M-steps by blocks of rows where that keeps the bits
    # (commits before the blocked E-step: the whole one into the spent arrays)
    blocked = getattr(prbf, "blocked_e_step", lambda data, params, blocks: None)
    blocks = prbf.e_step_blocks(data, M) if hasattr(prbf, "e_step_blocks") else None

    def ours():   # M-step from the last E-step, then the next E-step
        m_step(data, box[0], params, reg_covar=1e-6)
        box[0] = blocked(data, params, blocks) or e_step(data, params, reuse=spent)

    state = {k: getattr(gm, k) for k in ("weights_", "means_", "covariances_",
                                          "precisions_cholesky_")}

    def theirs():
        _, log_resp = gm._e_step(X)
        gm._m_step(X, log_resp)
        for k, v in state.items():       # restart from the same parameters every time
            setattr(gm, k, v)

    t_ours, t_sk = median_times([ours, theirs], repeat, block, flush_mb)
    return t_ours, t_sk, setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], parents=[KERNELS])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--cov", nargs="*", default=["full", "diag", "spherical"])
    ap.add_argument("--ssl", action="store_true", help="half of the rows unlabeled")
    ap.add_argument("--unlabeled", type=float, nargs="+", default=None,
                    help="fractions of unlabeled rows, each a set of cases (overrides --ssl; "
                         "'--unlabeled 0 0.5': supervised and semi-supervised in one run)")
    ap.add_argument("--components", type=int, nargs="*", default=None,
                    help="numbers of components M to run instead of the default 20")
    ap.add_argument("--block", type=int, default=1,
                    help="consecutive calls of one side per round (1: strictly interleaved, "
                         "each call after the other side's; see median_times)")
    ap.add_argument("--flush", type=float, default=0.0, metavar="MIB",
                    help="read this many MiB of other data before every timed call, both "
                         "sides (0: none; see median_times)")
    ap.add_argument("--malloc", choices=["heap", "default"], default="heap",
                    help="allocator state for both sides (see the module docstring)")
    args = ap.parse_args()
    if args.block < 1:
        ap.error(f"--block must be >= 1, got {args.block}")
    if args.flush < 0:
        ap.error(f"--flush must be >= 0, got {args.flush}")
    print(f"allocator: {fix_allocator(args.malloc)}")
    print(f"timing: {args.repeat} rounds of {args.block} consecutive call(s) per side, "
          "rounds interleaved"
          + (f"; {args.flush:g} MiB of other data read before each call" if args.flush else ""))
    report = cpu.kernel_report()
    blas = ", ".join(report["blas"])
    print(f"kernels: {args.kernels} (pinned: {report['pinned']}; BLAS: {blas})")
    fracs = args.unlabeled if args.unlabeled is not None else [0.5 if args.ssl else 0.0]
    if any(not 0.0 <= f < 1.0 for f in fracs):
        ap.error(f"--unlabeled fractions must be in [0, 1), got {fracs}")
    cases = [(n, d, m, K) for n, d, M, K in CASES for m in (args.components or [M])]
    print(f"{'unl':>4} {'N':>6} {'d':>3} {'M':>3} {'K':>3} {'cov':>9} {'ours ms':>9} "
          f"{'sklearn ms':>10} {'ratio':>6} {'setup ms':>9}")
    with threadpool_limits(limits=1):
        for frac in fracs:
            for n, d, M, K in cases:
                for ct in args.cov:
                    t_o, t_s, setup = bench_case(n, d, M, K, ct, args.repeat, frac, args.block,
                                                 args.flush)
                    print(f"{frac:>4.2f} {n:>6} {d:>3} {M:>3} {K:>3} {ct:>9} {1e3 * t_o:>9.2f} "
                          f"{1e3 * t_s:>10.2f} {t_o / t_s:>6.3f} {1e3 * setup:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
