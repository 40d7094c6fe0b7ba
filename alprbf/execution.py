"""The fan-out: where the tasks of a run execute (in process, loky workers or dask).

:func:`fan_out` is the one place where tasks are distributed.  Each task runs with
single-threaded BLAS (the parallelism comes from the workers and, inside a query, from the
task's own threads) and keeps its checkpoints where a :class:`CheckpointPlan` says.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from joblib import Parallel, cpu_count, delayed, parallel_config
from threadpoolctl import threadpool_limits

from .checkpoint import Checkpoint, checkpoint_file
from .config import Protocol
from .datasets import Dataset
from .errors import UserError, one_line_warning
from .protocol import Task, run_task, task_digest

BACKENDS = ("loky", "dask")


@dataclass(frozen=True)
class CheckpointPlan:
    """Where the tasks of a run keep their checkpoints, under which key, how often.

    A task's key is :func:`checkpoint_key`: its own definition and the code ``version``, so
    that a checkpoint outlives changes of the config that leave the task alone (data sets or
    methods added) and is ignored after any change of the task or of the code.
    """

    directory: Path
    version: str
    every_seconds: float

    def for_task(self, task: Task, protocol: Protocol) -> Checkpoint:
        """The checkpoint of ``task`` (run under ``protocol``)."""
        return Checkpoint(checkpoint_file(self.directory, task.task_id),
                          checkpoint_key(task, protocol, self.version), self.every_seconds)


def checkpoint_key(task: Task, protocol: Protocol, version: str) -> str:
    """The key a checkpoint of ``task`` is saved under (and must carry to be resumed)."""
    return f"{task_digest(task, protocol)}:{version}"


def default_task_threads(jobs: int, backend: str, scheduler: str | None) -> int:
    """Threads per task when the user does not say: this machine's CPUs shared by the ``jobs``
    workers (1 on a remote dask scheduler, whose machines we cannot see)."""
    if backend == "dask" and scheduler:
        return 1
    return max(1, cpu_count() // max(jobs, 1))


def _execute(task: Task, ds: Dataset, protocol, on_query=None,
             checkpoints: CheckpointPlan | None = None, threads: int = 1
             ) -> tuple[Task, pd.DataFrame, float]:
    """Run a task with single-threaded BLAS (parallelism comes from the task fan-out and,
    inside a query, from ``threads`` Python threads)."""
    t0 = time.perf_counter()
    ckpt = checkpoints.for_task(task, protocol) if checkpoints is not None else None
    with threadpool_limits(limits=1):
        df = run_task(task, ds, protocol, on_query=on_query, checkpoint=ckpt, threads=threads)
    return task, df, time.perf_counter() - t0


def _execute_in_worker(*args) -> tuple[Task, pd.DataFrame, float]:
    """:func:`_execute` in a worker process, whose warnings are one line each as the CLI's."""
    warnings.showwarning = one_line_warning
    return _execute(*args)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM stops the run as Ctrl-C does.

    Python's default SIGTERM ends the main process at once, and the loky workers it started
    live on with their tasks; raised as ``KeyboardInterrupt`` instead, it unwinds the fan-out,
    which stops the workers.  Only the main thread can install the handler; elsewhere this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def fan_out(todo: list[Task], datasets: dict[str, Dataset], protocols, jobs: int, backend: str,
            scheduler: str | None, on_query=None, checkpoints: CheckpointPlan | None = None,
            threads: int = 1) -> Iterator[tuple[Task, pd.DataFrame, float]]:
    """Run the tasks ``todo`` and yield ``(task, rows, seconds)`` as they finish.

    Parameters
    ----------
    todo : list of Task
    datasets : dict
        Dataset label -> :class:`~alprbf.datasets.Dataset` (globally preprocessed).
    protocols : dict
        Dataset label -> :class:`~alprbf.config.Protocol` (a data set may have its own).
    jobs : int
        Workers; ``jobs == 1`` with loky runs in this process (per-query progress through
        ``on_query``, plain tracebacks).
    backend : {"loky", "dask"}
    scheduler : str, optional
        Address of a running dask scheduler; without it the dask backend starts a LocalCluster.
    on_query : callable, optional
        Progress callback (in-process runs only).
    checkpoints : CheckpointPlan, optional
    threads : int
        Threads per task inside a query.
    """
    if jobs == 1 and backend == "loky":
        for t in todo:  # in-process: per-query progress and plain tracebacks
            yield _execute(t, datasets[t.dataset.label], protocols[t.dataset.label], on_query,
                           checkpoints, threads)
        return
    calls = (delayed(_execute_in_worker)(t, datasets[t.dataset.label],
                                         protocols[t.dataset.label], None, checkpoints, threads)
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


__all__ = ["BACKENDS", "CheckpointPlan", "default_task_threads", "fan_out"]
