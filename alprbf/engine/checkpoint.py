"""Mid-task checkpoints: the state of one task's query loop, saved now and then.

A task runs ``budget`` queries; on the slow models (QBC for PRBF: one to two hours per fold)
a run that dies would otherwise lose the whole task.  :func:`alprbf.engine.protocol.run_task` saves
its loop state (a :class:`LoopState`: model, strategy, random generator, observed labels, rows
so far) with :meth:`Checkpoint.save` at most every ``every_seconds`` and, when started again,
continues from the last saved query.  Everything the loop does after the save point depends
only on that state, so a resumed task gives the same rows as an uninterrupted one (timings
aside).

The file is a pickle: load checkpoints only from results directories you wrote yourself.  It
is keyed by the task's own definition (:func:`alprbf.engine.protocol.task_digest`: data set, method,
protocol, repetition, fold) and the alprbf version; a checkpoint whose key differs (the task
or the code changed) is ignored and overwritten, one whose config only gained data sets or
methods is resumed.  A checkpoint that cannot be
written (for example a dask worker without the results directory) only costs the resumability:
a warning is issued and the task goes on without saving.

Beside it, ``<task_id>.progress.json`` says how far the saved state is (labels so far and at
the end, when it was saved) for ``alprbf status``, which must not unpickle.

The file holds the pickled dict ``{"format": CHECKPOINT_FORMAT, "key": key, "state": LoopState}``.
A pickle names each class by its module path; checkpoints written before the modules moved to
their packages (``alprbf.checkpoint``, ``alprbf.kernels.svm``, ...) are read through
:data:`MOVED_MODULES`, so that they resume as before.
"""

from __future__ import annotations

import json
import pickle
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..store.fileio import write_atomic

CHECKPOINT_FORMAT = 3
"""Layout of the pickled state; a checkpoint of another format is ignored (its task restarts).
2: ``GaussianFeatures`` keeps its design matrix with extra rows (``weights_T``);
3: the loop state is a :class:`LoopState` (was a dict)."""


@dataclass
class LoopState:
    """The state of one task's query loop after a query: all the rest of the loop depends on.

    Attributes
    ----------
    task_id : str
        The task it belongs to.
    next_iteration : int
        The iteration the loop continues with.
    model : Learner
        The learner as fitted so far (warm-started learners keep their networks).
    strategy : QueryStrategy
    rng : numpy.random.Generator
        The strategy's random generator.
    y_obs : ndarray of shape (n_train,)
        Revealed labels of the training part, NaN for the pool.
    rows : list of dict
        The result rows recorded so far.
    new_rows : ndarray of int64
        Training rows labeled since the last recorded row.
    query_seconds : float
        Query time since the last recorded row.
    remaining : int
        Labels left in the budget.
    """

    task_id: str
    next_iteration: int
    model: Any
    strategy: Any
    rng: np.random.Generator
    y_obs: np.ndarray
    rows: list[dict]
    new_rows: np.ndarray
    query_seconds: float
    remaining: int


#: Module paths of alprbf before its layout by layer (old prefix -> new): checkpoints written
#: then pickled their classes under the old paths (``alprbf.checkpoint.LoopState``,
#: ``alprbf.kernels.svm.KernelSVC``); :meth:`Checkpoint.load` finds them at the new ones.
MOVED_MODULES = {
    **{f"alprbf.{m}": f"alprbf.engine.{m}" for m in (
        "checkpoint", "config", "cpu", "execution", "initial", "protocol", "record", "runner",
        "seeding", "status")},
    **{f"alprbf.{m}": f"alprbf.store.{m}" for m in ("fileio", "results")},
    "alprbf.kernels": "alprbf.svm_kernels",
    # the PRBF's fast paths, gathered behind the ALPRBF_FAST switch (docs/performance.md)
    **{f"alprbf.prbf._{m}": f"alprbf.prbf.fast.{m}" for m in (
        "blocked", "compress", "exp", "far_rows", "gemm_blocks", "normalize", "sparse_moments",
        "sparse_variance", "timing")},
}


def moved_module(module: str) -> str:
    """Where a module of an older layout of alprbf is now (:data:`MOVED_MODULES`)."""
    for old, new in MOVED_MODULES.items():
        if module == old or module.startswith(old + "."):
            return new + module[len(old):]
    return module


class _Unpickler(pickle.Unpickler):
    """Unpickles classes of moved modules from their new place."""

    def find_class(self, module: str, name: str):
        return super().find_class(moved_module(module), name)


CHECKPOINTS_DIR = "checkpoints"
"""Sub-directory of a results directory that holds the checkpoints of tasks in flight."""


def checkpoint_file(directory: Path, task_id: str) -> Path:
    """The checkpoint of task ``task_id`` in ``directory``."""
    return Path(directory) / f"{task_id}.pkl"


PROGRESS_SUFFIX = ".progress.json"
"""Beside a checkpoint ``<task_id>.pkl``: ``<task_id>.progress.json``, how far the saved state
is (JSON, readable without loading the pickle)."""


@dataclass(frozen=True)
class Progress:
    """How far a task in flight was at its last checkpoint.

    Attributes
    ----------
    n_labeled : int
        Labeled training rows in the saved state.
    target : int
        Labeled training rows at the end of the budget (``n_labeled + remaining``).
    saved : float
        When the checkpoint was written (seconds since the epoch).
    """

    n_labeled: int
    target: int
    saved: float


def progress_file(directory: Path, task_id: str) -> Path:
    """The progress file beside the checkpoint of task ``task_id`` in ``directory``."""
    return Path(directory) / f"{task_id}{PROGRESS_SUFFIX}"


def read_progress(directory: Path, task_id: str) -> Progress | None:
    """The progress of task ``task_id``'s checkpoint in ``directory`` (None if none, or not
    readable: older runs wrote checkpoints without it)."""
    try:
        d = json.loads(progress_file(directory, task_id).read_text())
        return Progress(int(d["n_labeled"]), int(d["target"]), float(d["saved"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass
class Checkpoint:
    """Where and how often a task saves its loop state.

    Parameters
    ----------
    path : Path
        The checkpoint file.  Its directory must exist: a dask worker on another machine,
        where the results directory does not exist, then warns instead of leaving files there.
    key : str
        Identity of what may resume from it (the task's definition and the code version).
    every_seconds : float
        Minimum wall time between two saves (0: after every query).
    """

    path: Path
    key: str
    every_seconds: float = 300.0
    _failed: bool = field(default=False, repr=False)

    def load(self) -> LoopState | None:
        """The saved state, or None if there is none, it belongs to another run or it has
        another format."""
        try:
            with open(self.path, "rb") as fh:
                payload = _Unpickler(fh).load()
        except (FileNotFoundError, NotADirectoryError):   # nothing saved there
            return None
        except Exception as exc:  # noqa: BLE001 - a damaged checkpoint only costs the resume
            warnings.warn(f"ignoring unreadable checkpoint {self.path}: {exc}", stacklevel=2)
            return None
        if (not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT
                or payload.get("key") != self.key
                or not isinstance(payload.get("state"), LoopState)):
            return None
        return payload["state"]

    def save(self, state: LoopState) -> None:
        """Write ``state`` atomically (temporary file + rename); warn once on failure."""
        if self._failed:
            return
        payload = {"format": CHECKPOINT_FORMAT, "key": self.key, "state": state}
        n = int(np.count_nonzero(~np.isnan(np.asarray(state.y_obs, dtype=float))))
        progress = {"n_labeled": n, "target": n + int(state.remaining), "saved": time.time()}
        try:
            write_atomic(self.path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
            write_atomic(self._progress_path, json.dumps(progress).encode())
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            self._failed = True
            warnings.warn(f"cannot write checkpoint {self.path} ({exc}); the task goes on "
                          "without checkpoints", stacklevel=2)

    def clear(self) -> None:
        """Delete the checkpoint and its progress file (after the task's results are
        written)."""
        self.path.unlink(missing_ok=True)
        self._progress_path.unlink(missing_ok=True)

    @property
    def _progress_path(self) -> Path:
        return self.path.with_name(self.path.stem + PROGRESS_SUFFIX)
