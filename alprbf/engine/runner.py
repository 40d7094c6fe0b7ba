"""Run an experiment: plan the grid, load the data, fan the tasks out, write their files.

This module orchestrates; the fan-out is :mod:`alprbf.engine.execution`, one task is
:mod:`alprbf.engine.protocol`, the task files are :mod:`alprbf.store.results`.

Results layout (``out`` defaults to ``results/<name>``, or ``results/<name>-<scale>``)::

    out/run.json               config, digest, versions, git commit, data checksums, seeds
    out/reference.csv          copy of the config's reference file (published numbers), if any
    out/tasks/<task_id>.parquet
    out/checkpoints/<task_id>.pkl   loop state of a task in flight (deleted when it finishes,
                                    the directory with it once the run leaves it empty)
    out/failures/<task_id>.json     record of a task that failed or timed out (and .log: its
                                    traceback); removed when a later run finishes the task

A task that raises, or runs past ``task_timeout``, does not stop the run
(:mod:`alprbf.engine.execution`): it is recorded under ``failures/``, named on one line of stderr,
and the other tasks go on; :class:`RunSummary` lists the failures (the CLI then exits with
code 3).  A failed task has no task file, so running again retries the failed tasks (and only
them, once every other task has finished).

Every finished task is written atomically (temporary file + rename); running again into the
same directory skips finished tasks, also when the config now has more data sets or methods
(the new tasks run beside the old ones; ``run.json`` lists the earlier config digests under
``extends``).  After a change of some data sets or methods, ``rerun_changed`` keeps the
tasks the two configs define alike and re-runs only the changed ones.  A task in flight
saves its loop state every ``checkpoint_every`` seconds (:mod:`alprbf.engine.checkpoint`), so a run
that dies loses at most that much work per task in flight: the next run resumes those tasks
where they were saved.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

import numpy as np

from .. import __version__
from ..datasets import DATASETS, Dataset
from ..errors import DataWarning, UserError
from ..models import MODELS
from ..store.fileio import DirectoryBusy, exclusive_lock, remove_stale_temporaries, write_atomic
from ..store.results import (
    TASKS_DIR,
    checksum_file,
    clear_failure,
    run_digests,
    run_metadata,
    task_config_digest,
    task_file,
    task_files,
    task_problem,
    write_failure,
    write_task,
)
from .checkpoint import CHECKPOINTS_DIR, checkpoint_file, progress_file
from .config import Config
from .cpu import kernel_report
from .execution import (
    BACKENDS,
    CheckpointPlan,
    TaskFailure,
    default_task_threads,
    fan_out,
    sigterm_as_interrupt,
)
from .protocol import Task, check_data, check_task_ids, split_rows, task_seeds
from .seeding import derive_seed


def default_out_dir(cfg: Config, root: str | Path = "results") -> Path:
    suffix = "" if cfg.scale == "full" else f"-{cfg.scale}"
    return Path(root) / f"{cfg.name}{suffix}"


def experiment_name(cfg: Config) -> str:
    return cfg.name if cfg.scale == "full" else f"{cfg.name}-{cfg.scale}"


def plan(cfg: Config) -> list[Task]:
    """All tasks of the grid: dataset x model x strategy x repetition x fold."""
    name = experiment_name(cfg)
    protocols = {d.label: cfg.protocol_for(d) for d in cfg.datasets}
    return [Task(name, d, m, s, r, f)
            for d in cfg.datasets for m, s in cfg.methods
            for r in range(protocols[d.label].repetitions)
            for f in range(protocols[d.label].n_folds)]


def subsample(ds: Dataset, max_rows: int, seed: np.random.SeedSequence) -> Dataset:
    """A stratified random subset of at most ``max_rows`` rows (every class keeps >= 1 row)."""
    if max_rows <= 0 or ds.n_samples <= max_rows:
        return ds
    counts = np.bincount(ds.y, minlength=ds.n_classes)
    quota = np.maximum(1, np.floor(counts * max_rows / ds.n_samples)).astype(int)
    return _keep_per_class(ds, np.minimum(quota, counts), seed)


def _keep_per_class(ds: Dataset, sizes: np.ndarray, seed: np.random.SeedSequence) -> Dataset:
    """``sizes[k]`` rows of each class ``k`` drawn without replacement, in their original
    order (the one stratified draw of :func:`subsample` and :func:`draw_database`)."""
    rng = np.random.default_rng(seed)
    keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(ds.y == k), size=n, replace=False)
                                   for k, n in enumerate(sizes) if n]))
    split = None if ds.split is None else ds.split[keep]
    return replace(ds, X=ds.X[keep], y=ds.y[keep], split=split)


def draw_database(ds: Dataset, rows: int, seed: np.random.SeedSequence, label: str) -> Dataset:
    """Exactly ``rows`` rows drawn without replacement, stratified by class (largest-remainder
    quotas), in their original order."""
    if rows > ds.n_samples:
        raise UserError(f"dataset '{label}': rows = {rows} exceeds the {ds.n_samples} rows of "
                        f"'{ds.name}'")
    if rows == ds.n_samples:
        return ds
    counts = np.bincount(ds.y, minlength=ds.n_classes)
    exact = counts * rows / ds.n_samples
    quota = np.floor(exact).astype(int)
    short = rows - quota.sum()
    quota[np.argsort(-(exact - quota), kind="stable")[:short]] += 1
    return _keep_per_class(ds, quota, seed)


def one_vs_rest(ds: Dataset, positive: str, label: str) -> Dataset:
    """Two classes: ``rest`` (code 0) and the original class ``positive`` (code 1)."""
    if positive not in ds.classes:
        raise UserError(f"dataset '{label}': one_vs_rest class '{positive}' is not a class of "
                        f"'{ds.name}'; classes: {', '.join(ds.classes)}")
    y = (ds.y == ds.classes.index(positive)).astype(np.int64)
    return replace(ds, y=y, classes=("rest", positive))


def load_datasets(cfg: Config) -> dict[str, Dataset]:
    """Load every dataset of the grid once, globally preprocessed: a drawn database of
    ``rows`` rows, then ``one_vs_rest`` targets, then the protocol's ``max_rows`` cap.

    Data the loop cannot learn from is refused as loaded
    (:func:`alprbf.engine.protocol.check_data`), before preprocessing could hide it (z-scoring
    turns an infinite value into nan).
    """
    out = {}
    root = cfg.protocol.seed
    for spec in cfg.datasets:
        loader = DATASETS[spec.name](**spec.params)
        ds = loader.load(derive_seed(root, "dataset", spec.label))
        check_data(spec.label, ds)
        if spec.rows:
            params = json.dumps(spec.params, sort_keys=True, default=str)
            ds = draw_database(ds, spec.rows, derive_seed(root, "database", spec.name, params,
                                                          spec.rows), spec.label)
        if spec.one_vs_rest is not None:
            ds = one_vs_rest(ds, spec.one_vs_rest, spec.label)
            check_data(spec.label, ds)
        ds = subsample(ds, cfg.protocol_for(spec).max_rows,
                       derive_seed(root, "subsample", spec.label))
        out[spec.label] = spec.preprocessing.apply_global(ds, derive_seed(root, "impute",
                                                                          spec.label))
    return out


def validate(cfg: Config, datasets: dict[str, Dataset]) -> dict[str, int]:
    """Checks that need the data: task file names (:func:`alprbf.engine.protocol.check_task_ids`),
    on the folds of the first repetition that the folds are feasible and every training part
    holds the initial set and the budget (:func:`alprbf.engine.protocol.split_rows`), and that every
    model can fit the smallest training part (:func:`check_models`).

    Returns
    -------
    dict
        Dataset label -> label queries of a task (of its first fold; folds differ by a row at
        most, so this is for progress reporting).

    Raises
    ------
    UserError
        Naming the problem and the data set.
    """
    check_task_ids(plan(cfg))
    queries = {}
    for spec in cfg.datasets:
        p, ds = cfg.protocol_for(spec), datasets[spec.label]
        try:
            splits = split_rows(ds, p, derive_seed(p.seed, "folds", spec.label, 0))
        except UserError as exc:
            raise UserError(f"{exc} (dataset '{spec.label}')") from None
        check_models(cfg, spec.label, ds.n_classes, min(len(train) for train, _ in splits))
        queries[spec.label] = p.queries(len(splits[0][0]), ds.n_classes)
        for _, strategy in cfg.methods:
            batch = strategy.batch_size or p.batch_size
            if 0 < queries[spec.label] < batch:
                raise UserError(f"strategy '{strategy.label}': batch_size = {batch} exceeds "
                                f"the {queries[spec.label]} queries of the budget (dataset "
                                f"'{spec.label}'); valid: a batch of at most "
                                f"{queries[spec.label]}")
    return queries


def check_models(cfg: Config, label: str, n_classes: int, n_train: int) -> None:
    """Ask every model of the grid whether it can fit a training part of ``n_train`` rows
    (:meth:`alprbf.models.base.Learner.check_training_size`); its ``ValueError`` becomes the
    one-line UserError naming the model and the data set ``label``."""
    for name, model in {m.label: m for m, _ in cfg.methods}.items():
        learner = MODELS[model.name](n_classes=n_classes, random_state=0, **model.params)
        try:
            learner.check_training_size(n_train)
        except ValueError as exc:
            raise UserError(f"model '{name}': {exc} (dataset '{label}')") from None


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


def code_version() -> str:
    """The code a checkpoint belongs to: the package version and, in a git checkout, the commit
    (``-dirty`` when tracked files differ from it).  A checkpoint written by other code is
    ignored (:class:`~alprbf.engine.execution.CheckpointPlan`): a task is computed by one
    commit, and a model pickled by older code may lack parameters added since."""
    commit = _git_commit()
    return __version__ if commit is None else f"{__version__}+{commit}"


def _earlier_commits(out: Path, commit: str | None) -> list[str]:
    """The commits named by ``out/run.json`` (its ``earlier_commits``, then its ``git_commit``)
    other than ``commit``, oldest first, each once; [] without a run.json."""
    prev = run_metadata(out)
    named = [*prev.get("earlier_commits", []), prev.get("git_commit")]
    return [c for i, c in enumerate(named)
            if isinstance(c, str) and c != commit and c not in named[:i]]


def write_metadata(cfg: Config, out: Path, datasets: dict[str, Dataset], tasks: list[Task],
                   extends: Sequence[str] = ()) -> None:
    """Write ``out/run.json``; ``extends``: digests of the configs whose results ``out`` keeps
    (this config adds data sets or methods to theirs).

    ``git_commit`` is the commit of this run; when ``out`` already holds results computed at
    other commits, those are kept in ``earlier_commits`` (oldest first), so a directory built
    over several runs names (at least) every commit its task files come from.
    """
    commit = _git_commit()
    earlier = _earlier_commits(out, commit)
    meta = {
        "experiment": experiment_name(cfg),
        "config_digest": cfg.digest(),
        **({"extends": list(extends)} if extends else {}),
        "config_file": cfg.source,
        "config": cfg.to_dict(),
        "versions": _versions(),
        "git_commit": commit,
        **({"earlier_commits": earlier} if earlier else {}),
        "datasets": {label: {"name": ds.name, "shape": list(ds.X.shape),
                             "n_classes": ds.n_classes, "content_sha256": ds.content_sha256(),
                             "files_sha256": ds.sha256, "source": ds.source}
                     for label, ds in datasets.items()},
        "seed": cfg.protocol.seed,
        "seeding": "numpy SeedSequence(seed, spawn_key=sha256-derived words of the task identity)",
        "kernels": kernel_report(),
        "task_seeds": {t.task_id: {k: v for k, v in task_seeds(t, cfg.protocol).items()
                                   if k != "strategy_seed"} for t in tasks},
    }
    write_atomic(out / "run.json", json.dumps(meta, indent=2, default=str).encode())
    if cfg.reference:
        shutil.copyfile(cfg.reference, out / "reference.csv")


# --------------------------------------------------------------------------- the run


@dataclass
class RunSummary:
    out_dir: Path
    n_tasks: int
    n_skipped: int
    n_done: int
    seconds: float
    #: digest of the config whose results this run extended (data sets or methods added)
    #: or, with ``rerun_changed``, kept in part
    extended: str | None = None
    #: with ``rerun_changed`` when the config had changed: task files of the directory's
    #: earlier config deleted as no longer results of this one (None: nothing re-run)
    dropped: int | None = None
    #: the failure records (:func:`alprbf.store.results.write_failure`) of this run's failed tasks
    failures: list[dict] = field(default_factory=list)


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
                   task_threads: int | None = None,
                   rerun_changed: bool = False,
                   task_timeout: float | None = None) -> RunSummary:
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
        parallel); the results do not depend on it.  None:
        :func:`alprbf.engine.execution.default_task_threads`.
    rerun_changed : bool
        When ``out`` holds the results of another config that differs from ``cfg`` in its
        data sets and methods only, keep the task files of the tasks both define alike (and
        those ``cfg`` itself wrote, e.g. copied in from another directory), delete the
        others and run them again: re-running a changed method re-runs its tasks alone.
        Without it such a directory is refused (unless ``cfg`` only adds to the grid).
    task_timeout : float, optional
        Seconds a task may run (this attempt); a task past it stops and is recorded as
        timed out like a failed one (see :mod:`alprbf.engine.execution` for how and how exactly
        it is enforced).  None: no limit.
    """
    if backend not in BACKENDS:
        raise UserError(f"unknown backend '{backend}'; valid backends: {', '.join(BACKENDS)}")
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")
    if task_threads is None:
        task_threads = default_task_threads(jobs, backend, scheduler)
    if task_threads < 1:
        raise UserError(f"--task-threads must be >= 1, got {task_threads}")
    if checkpoint_every is not None and not checkpoint_every >= 0:
        raise UserError(f"--checkpoint-every must be >= 0 seconds, got {checkpoint_every}")
    if task_timeout is not None and not task_timeout > 0:
        raise UserError(f"--task-timeout must be > 0 seconds, got {task_timeout}")
    if force and rerun_changed:
        raise UserError("--force (run every task again) and --rerun-changed (keep the tasks "
                        "defined alike) exclude each other; give one")
    out = Path(out) if out is not None else default_out_dir(cfg)
    all_tasks = plan(cfg)
    tasks = select_tasks(all_tasks, only)
    ckpt_dir = out / CHECKPOINTS_DIR
    checkpoints = None if checkpoint_every is None else CheckpointPlan(
        ckpt_dir, code_version(), float(checkpoint_every))
    with _output_errors(out):
        (out / TASKS_DIR).mkdir(parents=True, exist_ok=True)
        if checkpoints is not None:                # removed again below once left empty
            ckpt_dir.mkdir(exist_ok=True)
    with _locked(out, cfg):
        before = run_digests(out)[:1]
        extends, stale, dropped = _check_previous_config(out, cfg, force, rerun_changed)
        extended = before[0] if extends and before[0] != cfg.digest() else None
        datasets = load_datasets(cfg)
        queries = validate(cfg, datasets)
        # only a config that loaded and validated deletes anything: a refused one leaves
        # the directory as it found it
        with _output_errors(out):
            for d in (out, out / TASKS_DIR, ckpt_dir):
                remove_stale_temporaries(d)
            for task_id in stale:
                _remove_task(out, task_id)
            if force:
                for t in tasks:
                    _remove_task(out, t.task_id)
                    clear_failure(out, t.task_id)
                    checkpoint_file(ckpt_dir, t.task_id).unlink(missing_ok=True)
                    progress_file(ckpt_dir, t.task_id).unlink(missing_ok=True)
        todo = [t for t in tasks if not _finished(out, t.task_id)]
        if todo or not (out / "run.json").is_file() or extended:
            # a run with nothing left to do leaves run.json (the commit that computed the
            # results) as it is: resuming a finished record does not re-stamp it; a run of
            # another config (extended, or changed methods re-run) always names it
            with _output_errors(out):
                write_metadata(cfg, out, datasets, all_tasks, extends)
        skipped = len(tasks) - len(todo)

        execution = {"jobs": jobs, "backend": backend, "task_threads": task_threads}
        t0 = time.perf_counter()
        done = 0
        failures: list[dict] = []
        n_queries = sum(queries[t.dataset.label] for t in todo)
        protocols = {d.label: cfg.protocol_for(d) for d in cfg.datasets}
        with sigterm_as_interrupt(), _Progress(progress, len(tasks), skipped, n_queries) as bar:
            for task, df, secs in fan_out(todo, datasets, protocols, jobs, backend,
                                          scheduler, on_query=bar.query,
                                          checkpoints=checkpoints, threads=task_threads,
                                          timeout=task_timeout):
                with _output_errors(out):
                    if isinstance(df, TaskFailure):
                        failures.append(_record_failure(out, task, df, secs, cfg.digest()))
                    else:
                        write_task(df, task_file(out, task.task_id), execution, cfg.digest())
                        clear_failure(out, task.task_id)
                if checkpoints is not None and not isinstance(df, TaskFailure):
                    checkpoints.for_task(task, protocols[task.dataset.label]).clear()
                done += not isinstance(df, TaskFailure)
                bar.task_done(task, queries[task.dataset.label])
        with contextlib.suppress(OSError):     # no task in flight left: nothing to resume
            ckpt_dir.rmdir()                   # (fails, and stays, while one is not empty)
    return RunSummary(out, len(tasks), skipped, done, time.perf_counter() - t0, extended,
                      dropped, failures)


def _record_failure(out: Path, task: Task, failure: TaskFailure, seconds: float,
                    digest: str) -> dict:
    """Write the failure record of ``task`` (:func:`alprbf.store.results.write_failure`), name it
    on one line of stderr, and return the record.  A checkpoint the task saved stays: the
    retry resumes from it (a deterministic failure then recurs where it was)."""
    record = {"task_id": task.task_id, "dataset": task.dataset.label,
              "model": task.model.label, "strategy": task.strategy.label,
              "repetition": task.repetition, "fold": task.fold, "kind": failure.kind,
              "error": failure.error, "message": failure.message,
              "seconds": round(seconds, 3),
              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "config_digest": digest}
    log = write_failure(out, record, failure.traceback)
    what = "timed out" if failure.kind == "timeout" else "failed"
    print(f"{what}: {task.task_id}: {failure.error}: {failure.message} (traceback: {log})",
          file=sys.stderr, flush=True)
    return {**record, "log": str(log)}


def _output_error(out: Path, exc: OSError) -> UserError:
    where = exc.filename or out
    return UserError(f"cannot write results to {out}: {exc.strerror or exc} ({where}); "
                     "choose a writable directory with --out")


@contextlib.contextmanager
def _output_errors(out: Path) -> Iterator[None]:
    """Turn a failure to write under ``out`` into a one-line user error."""
    try:
        yield
    except OSError as exc:
        raise _output_error(out, exc) from None


@contextlib.contextmanager
def _locked(out: Path, cfg: Config) -> Iterator[None]:
    """Hold the run's exclusive lock on ``out``; a second run gets a one-line error naming
    the holder."""
    holder = (f"alprbf run of config '{cfg.name}' (pid {os.getpid()} on "
              f"{socket.gethostname()}, since {time.strftime('%Y-%m-%d %H:%M:%S')})")
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(out, holder))
        except DirectoryBusy as busy:
            raise UserError(f"{out} is in use by another {busy}; wait for it to finish or "
                            "use another --out") from None
        except OSError as exc:
            raise _output_error(out, exc) from None
        yield


def holds_results_of(out: str | Path, cfg: Config) -> bool:
    """Whether the results in ``out`` (if any) are results of ``cfg``: made with it, or with
    a config that ``cfg`` extends by data sets or methods alone (:meth:`Config.extends`)."""
    prev = run_digests(out)
    return (not prev or prev[0] == cfg.digest()
            or cfg.extends(run_metadata(out).get("config", {}), prev[0]))


def _check_previous_config(out: Path, cfg: Config, force: bool, rerun_changed: bool = False
                           ) -> tuple[tuple[str, ...], list[str], int | None]:
    """Refuse a directory that holds another config's results (``--force`` clears them).

    A config that only adds data sets or methods to the directory's (:meth:`Config.extends`)
    keeps its results and runs the new tasks beside them; with ``rerun_changed`` a config
    that changes data sets or methods keeps the tasks both define alike
    (:func:`_changed_tasks`).  Deletes nothing itself: returns the digests of the configs
    this directory's results come from besides ``cfg`` (``run.json``'s ``extends``), the ids
    of the task files to delete before running (the other config's, or its changed tasks')
    and how many of them ``rerun_changed`` marked as changed (None otherwise).
    """
    prev = run_digests(out)
    if not prev or prev[0] == cfg.digest():
        return prev[1:], [], None
    if not force and holds_results_of(out, cfg):
        return (*prev[1:], prev[0]), [], None
    if not force and rerun_changed:
        changed = _changed_tasks(out, cfg, prev[0])
        return (*prev[1:], prev[0]), changed, len(changed)
    if not force:
        raise UserError(f"{out} holds results of a different config (digest {prev[0]} != "
                        f"{cfg.digest()}), which this one does not extend by data sets or "
                        "methods alone; use --rerun-changed to keep the tasks both define "
                        "alike and run the others again, --force to overwrite, or --out for "
                        "a new directory")
    # another config's tasks never mix with this one's
    return (), [p.stem for p in task_files(out)], None


def _changed_tasks(out: Path, cfg: Config, old_digest: str) -> list[str]:
    """The ids of the task files of ``out`` that are not results of ``cfg``.

    A file is kept when ``cfg`` wrote it (its recorded digest) or when its task is one that
    ``cfg`` and the directory's config (``run.json``) define alike
    (:meth:`Config.shared_grid`); the tasks of changed or removed data sets and methods go.
    """
    shared = cfg.shared_grid(run_metadata(out).get("config", {}), old_digest)
    if shared is None:
        raise UserError(f"{out} holds results of config {old_digest}, which differs from this "
                        "one beyond its data sets and methods (name, protocol or seed), so "
                        "none of its tasks is a task of this config; use --force to overwrite "
                        "or --out for a new directory")
    alike = {t.task_id for t in plan(cfg)
             if shared.holds(t.dataset.label, t.model.label, t.strategy.label)}
    return [p.stem for p in task_files(out)
            if p.stem not in alike and task_config_digest(p) != cfg.digest()]


def _remove_task(out: Path, task_id: str) -> None:
    path = task_file(out, task_id)
    path.unlink(missing_ok=True)
    checksum_file(path).unlink(missing_ok=True)


def _finished(out: Path, task_id: str) -> bool:
    """A task is finished when its file exists and matches its checksum; a file that fails
    is reported, removed and its task run again."""
    path = task_file(out, task_id)
    if not path.exists():
        return False
    problem = task_problem(path)
    if problem is None:
        return True
    warnings.warn(f"task file {path} {problem}: running the task again", DataWarning,
                  stacklevel=2)
    _remove_task(out, task_id)
    return False


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


__all__ = ["RunSummary", "default_out_dir", "load_datasets", "plan", "run_experiment",
           "select_tasks", "validate"]
