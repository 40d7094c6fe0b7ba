"""The reproduction record and its drift guard.

A *record* is a results directory kept in the repository (``results/table-NNN-full/...``):
task files, their checksums, ``run.json`` and the report, all written by one ``make
table-NNN SCALE=full`` at one commit.  :func:`check_record` re-runs some of its tasks with the
code at hand into a scratch directory and compares the rows bit for bit (timing columns
aside): a change of code that moves a result fails it, naming the tasks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from .config import Config
from .errors import UserError
from .results import Difference, compare_results, run_digest, task_files
from .runner import plan, run_experiment, select_tasks


def check_record(cfg: Config, record: str | Path, only: Sequence[str], jobs: int = 1,
                 ignore: Sequence[str] = ()) -> tuple[list[str], list[Difference]]:
    """Re-run the recorded tasks matching ``only`` and compare them with the record.

    Parameters
    ----------
    cfg : Config
        The config the record was made with (scaled as it was); its digest must equal the
        record's ``run.json`` (otherwise the config itself has changed: one difference).
    record : path
        The recorded results directory.
    only : sequence of str
        Shell patterns on task ids (as ``alprbf run --only``); tasks not yet in the record are
        left out.
    jobs : int
        Workers of the re-run.
    ignore : sequence of str
        Columns to leave out of the comparison.

    Returns
    -------
    checked : list of str
        The task ids re-run.
    differences : list of Difference
        Empty when every re-run task gave the recorded rows.

    Raises
    ------
    UserError
        If ``record`` holds no task file.
    """
    record = Path(record)
    recorded = {p.stem for p in task_files(record)}
    if not recorded:
        raise UserError(f"{record} holds no recorded task files")
    digest = run_digest(record)
    if digest != cfg.digest():
        return [], [Difference("config", f"the record was made with config {digest}, the "
                               f"config now has digest {cfg.digest()}")]
    chosen = [t.task_id for t in select_tasks(plan(cfg), only) if t.task_id in recorded]
    if not chosen:     # a record built up in pieces may not hold these tasks yet
        return [], []
    with tempfile.TemporaryDirectory(prefix="alprbf-check-") as tmp:
        run_experiment(cfg, Path(tmp) / "rerun", jobs=jobs, progress=False, only=chosen,
                       checkpoint_every=None)
        return chosen, compare_results(record, Path(tmp) / "rerun", ignore, tasks=chosen)
