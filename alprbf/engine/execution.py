"""The fan-out: where the tasks of a run execute (in process, loky workers or dask).

:func:`fan_out` is the one place where tasks are distributed.  Each task runs with
single-threaded BLAS (the parallelism comes from the workers and, inside a query, from the
task's own threads) and keeps its checkpoints where a :class:`CheckpointPlan` says.

Failure isolation.  A task that raises (any ``Exception``) does not stop the others: where
it ran (in process, loky worker or dask worker alike) the exception is caught and the task
comes back as a :class:`TaskFailure` with its traceback; the runner records it.  Only
``KeyboardInterrupt`` / ``SystemExit`` (Ctrl-C, SIGTERM) stop the run.

Time limit.  With ``timeout`` seconds a task that runs longer is stopped and comes back as a
:class:`TaskFailure` of kind ``"timeout"``.  Two mechanisms, by where the task runs:

* in the main thread of its process (``--jobs 1`` in process, and loky workers, which run
  their calls in their main thread): a ``SIGALRM`` interval timer raises
  :class:`~alprbf.engine.protocol.TaskTimeout` wherever the task is.  Python delivers a signal
  between bytecodes only, so a single long call into compiled code (one BLAS/LAPACK call,
  one libsvm fit) is stopped when it returns, not during it;
* elsewhere (dask workers run tasks in threads, where no signal handler can be installed;
  platforms without ``setitimer``): the loop of :func:`~alprbf.engine.protocol.run_task` checks
  the clock after every fit, evaluation and query, so a task stops at the first check past
  its limit: one fit or query late at most.

Neither kills a process: a task stuck in compiled code that never returns keeps its worker
(the run's own end, Ctrl-C, stops it).  The limit counts this attempt only: a task resumed
from a checkpoint gets the whole limit again.  :class:`~alprbf.engine.protocol.TaskTimeout` derives
from ``BaseException`` so that a model's own ``except Exception`` cannot swallow it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from joblib import Parallel, cpu_count, delayed, parallel_config
from threadpoolctl import threadpool_limits

from ..datasets import Dataset
from ..errors import UserError, one_line_warning
from .checkpoint import Checkpoint, checkpoint_file
from .config import Protocol
from .protocol import Task, TaskTimeout, run_task, task_digest

BACKENDS = ("loky", "dask")

#: Kinds of :class:`TaskFailure`.
FAILURE_KINDS = ("error", "timeout")


@dataclass(frozen=True)
class TaskFailure:
    """A task that did not finish: it raised (``kind="error"``) or ran past its time limit
    (``"timeout"``).  ``error`` is the exception's type name, ``message`` its first line,
    ``traceback`` the whole formatted traceback."""

    kind: str
    error: str
    message: str
    traceback: str

    @classmethod
    def from_exception(cls, exc: BaseException) -> TaskFailure:
        kind = "timeout" if isinstance(exc, TaskTimeout) else "error"
        lines = str(exc).strip().splitlines()
        return cls(kind, type(exc).__name__, lines[0] if lines else "",
                   "".join(traceback.format_exception(exc)))


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


@contextlib.contextmanager
def _alarm(seconds: float | None) -> Iterator[bool]:
    """Raise :class:`~alprbf.engine.protocol.TaskTimeout` in this thread after ``seconds`` (a
    ``SIGALRM`` interval timer); yields whether the timer is armed (only in a main thread,
    where ``setitimer`` exists; otherwise the caller relies on the loop's own checks)."""
    armed = (seconds is not None and hasattr(signal, "setitimer")
             and threading.current_thread() is threading.main_thread())
    if not armed:
        yield False
        return

    def expire(signum, frame):
        raise TaskTimeout(f"ran past its time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _execute(task: Task, ds: Dataset, protocol, on_query=None,
             checkpoints: CheckpointPlan | None = None, threads: int = 1,
             timeout: float | None = None
             ) -> tuple[Task, pd.DataFrame | TaskFailure, float]:
    """Run a task with single-threaded BLAS (parallelism comes from the task fan-out and,
    inside a query, from ``threads`` Python threads); an exception, or the time limit
    ``timeout`` (seconds, see the module docstring), gives a :class:`TaskFailure` instead
    of the rows."""
    t0 = time.perf_counter()
    ckpt = checkpoints.for_task(task, protocol) if checkpoints is not None else None
    deadline = None if timeout is None else t0 + timeout
    try:
        with threadpool_limits(limits=1), _alarm(timeout):
            df = run_task(task, ds, protocol, on_query=on_query, checkpoint=ckpt,
                          threads=threads, deadline=deadline)
    except (Exception, TaskTimeout) as exc:
        return task, TaskFailure.from_exception(exc), time.perf_counter() - t0
    return task, df, time.perf_counter() - t0


def _execute_in_worker(*args) -> tuple[Task, pd.DataFrame | TaskFailure, float]:
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
            threads: int = 1, timeout: float | None = None
            ) -> Iterator[tuple[Task, pd.DataFrame | TaskFailure, float]]:
    """Run the tasks ``todo`` and yield ``(task, rows, seconds)`` as they finish; ``rows``
    is a :class:`TaskFailure` for a task that raised or ran past ``timeout``.

    Parameters
    ----------
    todo : list of Task
    datasets : dict
        Dataset label -> :class:`~alprbf.datasets.Dataset` (globally preprocessed).
    protocols : dict
        Dataset label -> :class:`~alprbf.engine.config.Protocol` (a data set may have its own).
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
    timeout : float, optional
        Time limit of one task in seconds (see the module docstring).
    """
    if jobs == 1 and backend == "loky":
        for t in todo:  # in-process: per-query progress
            yield _execute(t, datasets[t.dataset.label], protocols[t.dataset.label], on_query,
                           checkpoints, threads, timeout)
        return
    calls = (delayed(_execute_in_worker)(t, datasets[t.dataset.label],
                                         protocols[t.dataset.label], None, checkpoints, threads,
                                         timeout)
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


__all__ = ["BACKENDS", "FAILURE_KINDS", "CheckpointPlan", "TaskFailure", "default_task_threads",
           "fan_out"]
