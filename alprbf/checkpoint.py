"""Mid-task checkpoints: the state of one task's query loop, saved now and then.

A task runs ``budget`` queries; on the slow models (QBC for PRBF: one to two hours per fold)
a run that dies would otherwise lose the whole task.  :func:`alprbf.protocol.run_task` saves
its loop state (model, strategy, random generator, observed labels, rows so far) with
:meth:`Checkpoint.save` at most every ``every_seconds`` and, when started again, continues from
the last saved query.  Everything the loop does after the save point depends only on that
state, so a resumed task gives the same rows as an uninterrupted one (timings aside).

The file is a pickle: load checkpoints only from results directories you wrote yourself.  It
is keyed by the config digest and the alprbf version; a checkpoint whose key differs (another
config, another version of the code) is ignored and overwritten.  A checkpoint that cannot be
written (for example a dask worker without the results directory) only costs the resumability:
a warning is issued and the task goes on without saving.
"""

from __future__ import annotations

import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .fileio import write_atomic

CHECKPOINT_FORMAT = 2
"""Layout of the pickled state; a checkpoint of another format is ignored (its task restarts).
2: ``GaussianFeatures`` keeps its design matrix with extra rows (``weights_T``)."""


def checkpoint_file(directory: Path, task_id: str) -> Path:
    """The checkpoint of task ``task_id`` in ``directory``."""
    return Path(directory) / f"{task_id}.pkl"


@dataclass
class Checkpoint:
    """Where and how often a task saves its loop state.

    Parameters
    ----------
    path : Path
        The checkpoint file.  Its directory must exist: a dask worker on another machine,
        where the results directory does not exist, then warns instead of leaving files there.
    key : str
        Identity of the run that may resume from it (config digest and code version).
    every_seconds : float
        Minimum wall time between two saves (0: after every query).
    """

    path: Path
    key: str
    every_seconds: float = 300.0
    _failed: bool = field(default=False, repr=False)

    def load(self) -> dict | None:
        """The saved state, or None if there is none or it belongs to another run."""
        try:
            with open(self.path, "rb") as fh:
                state = pickle.load(fh)
        except (FileNotFoundError, NotADirectoryError):   # nothing saved there
            return None
        except Exception as exc:  # noqa: BLE001 - a damaged checkpoint only costs the resume
            warnings.warn(f"ignoring unreadable checkpoint {self.path}: {exc}", stacklevel=2)
            return None
        if (not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT
                or state.get("key") != self.key):
            return None
        return state

    def save(self, state: dict) -> None:
        """Write ``state`` atomically (temporary file + rename); warn once on failure."""
        if self._failed:
            return
        payload = {**state, "format": CHECKPOINT_FORMAT, "key": self.key}
        try:
            write_atomic(self.path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            self._failed = True
            warnings.warn(f"cannot write checkpoint {self.path} ({exc}); the task goes on "
                          "without checkpoints", stacklevel=2)

    def clear(self) -> None:
        """Delete the checkpoint (after the task's results are written)."""
        self.path.unlink(missing_ok=True)
