"""Run an experiment: expand the grid, fan tasks out, write one Parquet file per task.

Results layout (``out`` defaults to ``results/<name>``, or ``results/<name>-<scale>``)::

    out/run.json               config, digest, versions, git commit, data checksums, seeds
    out/reference.csv          copy of the config's reference file (published numbers), if any
    out/tasks/<task_id>.parquet
    out/checkpoints/<task_id>.pkl   loop state of a task in flight (deleted when it finishes)

Every finished task is written atomically (temporary file + rename); running again into the
same directory skips finished tasks.  A task in flight saves its loop state every
``checkpoint_every`` seconds (:mod:`alprbf.checkpoint`), so a run that dies loses at most that
much work per task in flight: the next run resumes those tasks where they were saved.
"""

from __future__ import annotations

import fnmatch
import json
import platform
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from joblib import Parallel, cpu_count, delayed, parallel_config
from threadpoolctl import threadpool_limits

from . import __version__
from .checkpoint import Checkpoint, checkpoint_file
from .config import Config
from .datasets import DATASETS, Dataset
from .errors import UserError
from .fileio import write_atomic
from .protocol import Task, check_budget, make_folds, run_task, task_seeds
from .schema import SCHEMA
from .seeding import derive_seed

BACKENDS = ("loky", "dask")
EXECUTION_KEY = b"alprbf.execution"
"""Parquet key-value metadata of a task file: JSON of how the task ran (see :func:`write_task`)."""


def default_out_dir(cfg: Config, root: str | Path = "results") -> Path:
    suffix = "" if cfg.scale == "full" else f"-{cfg.scale}"
    return Path(root) / f"{cfg.name}{suffix}"


def experiment_name(cfg: Config) -> str:
    return cfg.name if cfg.scale == "full" else f"{cfg.name}-{cfg.scale}"


def plan(cfg: Config) -> list[Task]:
    """All tasks of the grid: dataset x model x strategy x repetition x fold."""
    name = experiment_name(cfg)
    return [Task(name, d, m, s, r, f)
            for d in cfg.datasets for m, s in cfg.methods
            for r in range(cfg.protocol.repetitions) for f in range(cfg.protocol.folds)]


def subsample(ds: Dataset, max_rows: int, seed: np.random.SeedSequence) -> Dataset:
    """A stratified random subset of at most ``max_rows`` rows (every class keeps >= 1 row)."""
    if max_rows <= 0 or ds.n_samples <= max_rows:
        return ds
    rng = np.random.default_rng(seed)
    counts = np.bincount(ds.y, minlength=ds.n_classes)
    quota = np.maximum(1, np.floor(counts * max_rows / ds.n_samples)).astype(int)
    keep = np.concatenate([rng.choice(np.flatnonzero(ds.y == k), size=min(q, c), replace=False)
                           for k, (q, c) in enumerate(zip(quota, counts, strict=True)) if c])
    keep.sort()
    split = None if ds.split is None else ds.split[keep]
    return replace(ds, X=ds.X[keep], y=ds.y[keep], split=split)


def load_datasets(cfg: Config) -> dict[str, Dataset]:
    """Load every dataset of the grid once (subsampled if ``max_rows``), globally preprocessed."""
    out = {}
    root = cfg.protocol.seed
    for spec in cfg.datasets:
        loader = DATASETS[spec.name](**spec.params)
        ds = loader.load(derive_seed(root, "dataset", spec.label))
        ds = subsample(ds, cfg.protocol.max_rows, derive_seed(root, "subsample", spec.label))
        out[spec.label] = spec.preprocessing.apply_global(ds)
    return out


def validate(cfg: Config, datasets: dict[str, Dataset]) -> None:
    """Checks that need the data: fold feasibility, initial-set size and budget vs. pool."""
    p = cfg.protocol
    for spec in cfg.datasets:
        ds = datasets[spec.label]
        folds = make_folds(ds.y, p.folds, p.stratified, derive_seed(p.seed, "folds", spec.label, 0))
        n_train = ds.n_samples - max(len(f) for f in folds)
        if p.initial.method == "all":
            continue
        n_init = p.initial.size * (ds.n_classes if p.initial.method == "per_class" else 1)
        if n_init > n_train:
            raise UserError(f"protocol.initial.size: {n_init} initial labels exceed the {n_train} "
                            f"training rows of a fold of '{spec.label}'")
        try:
            check_budget(n_train, n_init, p)
        except UserError as exc:
            raise UserError(f"{exc} (dataset '{spec.label}')") from None


# --------------------------------------------------------------------------- metadata


def _versions() -> dict[str, str]:
    pkgs = ["alprbf", "numpy", "scipy", "scikit-learn", "pandas", "pyarrow", "joblib"]
    out = {"python": platform.python_version()}
    for p in pkgs:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if rev.returncode != 0:
        return None
    return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def write_metadata(cfg: Config, out: Path, datasets: dict[str, Dataset], tasks: list[Task]) -> None:
    meta = {
        "experiment": experiment_name(cfg),
        "config_digest": cfg.digest(),
        "config_file": cfg.source,
        "config": cfg.to_dict(),
        "versions": _versions(),
        "git_commit": _git_commit(),
        "datasets": {label: {"name": ds.name, "shape": list(ds.X.shape),
                             "n_classes": ds.n_classes, "content_sha256": ds.content_sha256(),
                             "files_sha256": ds.sha256, "source": ds.source}
                     for label, ds in datasets.items()},
        "seed": cfg.protocol.seed,
        "seeding": "numpy SeedSequence(seed, spawn_key=sha256-derived words of the task identity)",
        "task_seeds": {t.task_id: {k: v for k, v in task_seeds(t, cfg.protocol).items()
                                   if k != "strategy_seed"} for t in tasks},
    }
    write_atomic(out / "run.json", json.dumps(meta, indent=2, default=str).encode())
    if cfg.reference:
        shutil.copyfile(cfg.reference, out / "reference.csv")


def write_task(df: pd.DataFrame, path: Path, execution: dict | None = None) -> None:
    """Write one task's rows atomically as Parquet.

    ``execution`` (how the task ran: workers, backend, threads per task) goes into the file's
    key-value metadata under ``alprbf.execution``: it explains the timing columns, and unlike
    ``run.json``, which the last invocation rewrites, it stays with the task's rows.
    """
    table = pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)
    if execution is not None:
        meta = dict(table.schema.metadata or {})
        meta[EXECUTION_KEY] = json.dumps(execution, sort_keys=True).encode()
        table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(path, sink.getvalue().to_pybytes())


# --------------------------------------------------------------------------- execution


@dataclass(frozen=True)
class CheckpointPlan:
    """Where the tasks of a run keep their checkpoints, under which key, how often."""

    directory: Path
    key: str
    every_seconds: float

    def for_task(self, task: Task) -> Checkpoint:
        return Checkpoint(checkpoint_file(self.directory, task.task_id), self.key,
                          self.every_seconds)


def _execute(task: Task, ds: Dataset, protocol, on_query=None,
             checkpoints: CheckpointPlan | None = None, threads: int = 1
             ) -> tuple[Task, pd.DataFrame, float]:
    """Run a task with single-threaded BLAS (parallelism comes from the task fan-out and,
    inside a query, from ``threads`` Python threads)."""
    t0 = time.perf_counter()
    ckpt = checkpoints.for_task(task) if checkpoints is not None else None
    with threadpool_limits(limits=1):
        df = run_task(task, ds, protocol, on_query=on_query, checkpoint=ckpt, threads=threads)
    return task, df, time.perf_counter() - t0


@dataclass
class RunSummary:
    out_dir: Path
    n_tasks: int
    n_skipped: int
    n_done: int
    seconds: float


def default_task_threads(jobs: int, backend: str, scheduler: str | None) -> int:
    """Threads per task when the user does not say: this machine's CPUs shared by the ``jobs``
    workers (1 on a remote dask scheduler, whose machines we cannot see)."""
    if backend == "dask" and scheduler:
        return 1
    return max(1, cpu_count() // max(jobs, 1))


def fan_out(todo: list[Task], datasets: dict[str, Dataset], protocol, jobs: int, backend: str,
            scheduler: str | None, on_query=None, checkpoints: CheckpointPlan | None = None,
            threads: int = 1) -> Iterator[tuple[Task, pd.DataFrame, float]]:
    """The one place where tasks are distributed: yields results as they finish."""
    if jobs == 1 and backend == "loky":
        for t in todo:  # in-process: per-query progress and plain tracebacks
            yield _execute(t, datasets[t.dataset.label], protocol, on_query, checkpoints,
                           threads)
        return
    calls = (delayed(_execute)(t, datasets[t.dataset.label], protocol, None, checkpoints,
                               threads)
             for t in todo)
    if backend == "loky":
        yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(calls)
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UserError("backend 'dask' needs the dask extra: pip install 'alprbf[dask]'") from None
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout=10)
        except (OSError, TimeoutError) as exc:
            raise UserError(f"cannot reach the dask scheduler at {scheduler}: {exc}") from None
    else:
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        with parallel_config(backend="dask"):
            yield from Parallel(n_jobs=-1, return_as="generator_unordered")(calls)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def select_tasks(tasks: list[Task], only: Sequence[str] | None) -> list[Task]:
    """The tasks whose id matches one of the ``fnmatch`` patterns ``only`` (all if None)."""
    if not only:
        return tasks
    chosen = [t for t in tasks if any(fnmatch.fnmatchcase(t.task_id, p) for p in only)]
    if not chosen:
        examples = ", ".join(t.task_id for t in tasks[:3])
        raise UserError(f"--only {' '.join(only)} matches none of the {len(tasks)} task ids "
                        f"(e.g. {examples}); patterns use * and ?, e.g. '*__f0'")
    return chosen


def run_experiment(cfg: Config, out: str | Path | None = None, *, jobs: int = 1,
                   backend: str = "loky", scheduler: str | None = None, force: bool = False,
                   progress: bool = True, only: Sequence[str] | None = None,
                   checkpoint_every: float | None = 300.0,
                   task_threads: int | None = None) -> RunSummary:
    """Run (or resume) an experiment and write its results.

    Parameters
    ----------
    cfg : Config
        Already scaled (see :meth:`Config.with_scale`).
    out : path, optional
        Results directory; default :func:`default_out_dir`.
    jobs : int
        Parallel workers (each with single-threaded BLAS).
    backend : {"loky", "dask"}
    scheduler : str, optional
        Address of a running dask scheduler; without it the dask backend starts a LocalCluster.
    force : bool
        Delete existing task files and run everything again (only the selected tasks with
        ``only``).
    only : sequence of str, optional
        Shell-style patterns (``fnmatch``) on task ids, e.g. ``"*__f0"`` or ``"pendigits__*"``:
        run just the matching tasks (a later run without ``only`` fills in the rest).
    checkpoint_every : float or None
        Seconds between two checkpoints of a task in flight (``out/checkpoints/``); a later
        run resumes an unfinished task from its checkpoint.  None: no checkpoints.
    task_threads : int or None
        Threads each task may use inside a query (the QBC committee trains its members in
        parallel); the results do not depend on it.  None: :func:`default_task_threads`.
    """
    if backend not in BACKENDS:
        raise UserError(f"unknown backend '{backend}'; valid backends: {', '.join(BACKENDS)}")
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")
    if task_threads is None:
        task_threads = default_task_threads(jobs, backend, scheduler)
    if task_threads < 1:
        raise UserError(f"--task-threads must be >= 1, got {task_threads}")
    out = Path(out) if out is not None else default_out_dir(cfg)
    tasks_dir = out / "tasks"
    old = out / "run.json"
    if old.exists() and not force:
        prev = json.loads(old.read_text()).get("config_digest")
        if prev != cfg.digest():
            raise UserError(f"{out} holds results of a different config (digest {prev} != "
                            f"{cfg.digest()}); use --force to overwrite or --out for a new "
                            "directory")
    all_tasks = plan(cfg)
    tasks = select_tasks(all_tasks, only)
    if checkpoint_every is not None and not checkpoint_every >= 0:
        raise UserError(f"--checkpoint-every must be >= 0 seconds, got {checkpoint_every}")
    ckpt_dir = out / "checkpoints"
    checkpoints = None if checkpoint_every is None else CheckpointPlan(
        ckpt_dir, f"{cfg.digest()}:{__version__}", float(checkpoint_every))
    if force:
        for t in tasks:
            (tasks_dir / f"{t.task_id}.parquet").unlink(missing_ok=True)
            checkpoint_file(ckpt_dir, t.task_id).unlink(missing_ok=True)
    tasks_dir.mkdir(parents=True, exist_ok=True)
    if checkpoints is not None:
        checkpoints.directory.mkdir(exist_ok=True)

    datasets = load_datasets(cfg)
    validate(cfg, datasets)
    write_metadata(cfg, out, datasets, all_tasks)
    todo = [t for t in tasks if not (tasks_dir / f"{t.task_id}.parquet").exists()]
    skipped = len(tasks) - len(todo)

    execution = {"jobs": jobs, "backend": backend, "task_threads": task_threads}
    t0 = time.perf_counter()
    done = 0
    with _Progress(progress, len(tasks), skipped, len(todo) * cfg.protocol.budget) as bar:
        for task, df, _secs in fan_out(todo, datasets, cfg.protocol, jobs, backend, scheduler,
                                       on_query=bar.query, checkpoints=checkpoints,
                                       threads=task_threads):
            write_task(df, tasks_dir / f"{task.task_id}.parquet", execution)
            if checkpoints is not None:
                checkpoints.for_task(task).clear()
            done += 1
            bar.task_done(task, cfg.protocol.budget)
    return RunSummary(out, len(tasks), skipped, done, time.perf_counter() - t0)


class _Progress:
    """Two rich progress bars (tasks, queries) with ETA; silent when disabled."""

    def __init__(self, enabled: bool, n_tasks: int, skipped: int, n_queries: int) -> None:
        self.enabled = enabled
        self.n_tasks, self.skipped, self.n_queries = n_tasks, skipped, n_queries
        self._queried_in_task = 0

    def __enter__(self):
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            self.p = Progress(TextColumn("{task.description:>8}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                              TimeRemainingColumn())
            self.p.__enter__()
            self.t_tasks = self.p.add_task("tasks", total=self.n_tasks, completed=self.skipped)
            self.t_queries = self.p.add_task("queries", total=max(self.n_queries, 1),
                                             visible=self.n_queries > 0)
        return self

    def query(self, n: int) -> None:
        self._queried_in_task += n
        if self.enabled:
            self.p.advance(self.t_queries, n)

    def task_done(self, task: Task, budget: int) -> None:
        if self.enabled:
            self.p.advance(self.t_tasks, 1)
            self.p.advance(self.t_queries, budget - self._queried_in_task)
        self._queried_in_task = 0

    def __exit__(self, *exc):
        if self.enabled:
            self.p.__exit__(*exc)
        return False


def read_results(out: str | Path) -> pd.DataFrame:
    """All task rows of one results directory (helper for tests and notebooks)."""
    files = sorted(Path(out).glob("tasks/*.parquet"))
    if not files:
        return pd.DataFrame(columns=SCHEMA.names)
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


__all__ = ["RunSummary", "default_out_dir", "fan_out", "load_datasets", "plan", "read_results",
           "run_experiment", "validate", "write_task"]
