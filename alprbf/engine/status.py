"""How far a config's grid has got in a results directory (read only).

A long run (a paper table at full scale) is built up over several sessions: finished task
files accumulate, a task in flight leaves a checkpoint, a task that failed or timed out
leaves a failure record (``failures/``), and a run may be holding the directory right now.
:func:`run_status` reads them without changing anything and sums, per grid cell (data set x
method), the tasks finished, failed, in flight and to do, with the task-seconds the finished
ones took (their ``fit + query + eval`` timing columns).

The projection of the remaining cost is the mean task-seconds of a cell's finished tasks
times its unfinished ones; a cell with no finished task has no projection (its tasks may
cost anything).  The timing columns are wall-clock seconds of the machine and load the
tasks ran under, so the projection is as good as the finished tasks are representative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..store.fileio import lock_holder
from ..store.results import read_failures, run_digest, task_file, task_problem, task_seconds
from .checkpoint import CHECKPOINTS_DIR, Progress, checkpoint_file, read_progress
from .config import Config
from .runner import default_out_dir, holds_results_of, plan, select_tasks


@dataclass
class CellStatus:
    """One grid cell (data set x method) of a results directory.

    Attributes
    ----------
    dataset, method : str
        Data set label and ``"model / strategy"`` label.
    planned : int
        Tasks the config plans for the cell (folds x repetitions; those ``only`` selects).
    finished : int
        Task files whose checksum holds.
    in_flight : int
        Unfinished tasks with a checkpoint (running now, or resumed by the next run).
    progress : dict
        Task id -> :class:`~alprbf.engine.checkpoint.Progress` of the tasks in flight whose
        checkpoint has a progress file.
    damaged : int
        Task files that fail their checksum (the next run redoes them).
    failed : dict
        Task id -> failure record (:func:`alprbf.store.results.read_failures`) of the unfinished
        tasks whose last attempt failed or timed out (the next run retries them).
    seconds : float
        Summed task-seconds of the finished tasks.
    """

    dataset: str
    method: str
    planned: int = 0
    finished: int = 0
    in_flight: int = 0
    damaged: int = 0
    seconds: float = 0.0
    #: task id -> how far its checkpoint is (tasks in flight whose run wrote a progress file)
    progress: dict[str, Progress] = field(default_factory=dict)
    #: task id -> failure record of the tasks whose last attempt failed or timed out
    failed: dict[str, dict] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        """Unfinished tasks whose last attempt failed or timed out."""
        return len(self.failed)

    @property
    def to_do(self) -> int:
        """Unfinished tasks (in flight included)."""
        return self.planned - self.finished

    @property
    def projected_seconds(self) -> float | None:
        """Task-seconds the unfinished tasks will take at the finished ones' mean (None
        without a finished task, 0 when none is left)."""
        if not self.to_do:
            return 0.0
        return self.seconds / self.finished * self.to_do if self.finished else None


@dataclass
class RunStatus:
    """The cells of a results directory, in the config's order, and who holds it now."""

    out: Path
    cells: list[CellStatus] = field(default_factory=list)
    holder: str | None = None

    def total(self, attr: str) -> int | float:
        return sum(getattr(c, attr) for c in self.cells)

    @property
    def projected_seconds(self) -> float | None:
        """Task-seconds still to spend, None if a cell with unfinished tasks has no
        finished one to project from."""
        parts = [c.projected_seconds for c in self.cells]
        return None if any(p is None for p in parts) else float(sum(parts))


def run_status(cfg: Config, out: str | Path | None = None,
               only: Sequence[str] | None = None) -> RunStatus:
    """Tasks finished, in flight and to do, per grid cell, in results directory ``out``.

    Parameters
    ----------
    cfg : Config
        Already scaled (see :meth:`Config.with_scale`).
    out : path, optional
        Results directory; default :func:`alprbf.engine.runner.default_out_dir`.
    only : sequence of str, optional
        The ``fnmatch`` patterns of ``alprbf run --only``: count just those tasks.

    Raises
    ------
    UserError
        If ``out`` holds the results of another config.
    """
    out = Path(out) if out is not None else default_out_dir(cfg)
    if not holds_results_of(out, cfg):
        raise UserError(f"{out} holds results of a different config (digest {run_digest(out)} "
                        f"!= {cfg.digest()}); pass the config it was run with, or its --out")
    status = RunStatus(out, holder=lock_holder(out) if out.is_dir() else None)
    cells: dict[tuple[str, str], CellStatus] = {}
    failures = {f["task_id"]: f for f in read_failures(out)} if out.is_dir() else {}
    for t in select_tasks(plan(cfg), only):
        key = (t.dataset.label, f"{t.model.label} / {t.strategy.label}")
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = CellStatus(*key)
            status.cells.append(cell)
        cell.planned += 1
        path = task_file(out, t.task_id)
        if path.exists():
            if task_problem(path) is None:
                cell.finished += 1
                cell.seconds += task_seconds(path)
                continue
            cell.damaged += 1
        if t.task_id in failures:
            cell.failed[t.task_id] = failures[t.task_id]
            continue
        if checkpoint_file(out / CHECKPOINTS_DIR, t.task_id).exists():
            cell.in_flight += 1
            progress = read_progress(out / CHECKPOINTS_DIR, t.task_id)
            if progress is not None:
                cell.progress[t.task_id] = progress
    return status
