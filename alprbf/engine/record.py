"""The reproduction record and its drift guard.

A *record* is a results directory kept in the repository (``results/table-NNN-full/...``):
task files, their checksums, ``run.json`` and the report, all written by one ``make
table-NNN SCALE=full`` at one commit.  :func:`check_record` re-runs some of its tasks with the
code at hand into a scratch directory and compares the rows bit for bit (timing columns
aside): a change of code that moves a result fails it, naming the tasks.

A recorded task too slow to re-run whole (a QBC fold: ten minutes or more) is checked on its
first ``queries`` queries instead: the query loop draws nothing that depends on the budget
(seeds come from the task's identity; models and strategies never see the budget), so a
shorter budget gives the record's first rows exactly (measured on a Constantinopoulos & Likas 2008
segmentation QBC fold: 41 rows identical).  A strategy parameter chosen by inner CV (``select``)
runs inner active-learning loops with the budget, so such tasks are checked whole only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import UserError
from ..store.results import Difference, compare_results, run_digest, task_files
from .config import Config
from .runner import holds_results_of, load_datasets, plan, run_experiment, select_tasks, validate


def check_record(cfg: Config, record: str | Path, only: Sequence[str], jobs: int = 1,
                 ignore: Sequence[str] = (), queries: int | None = None,
                 first_fold: bool = False) -> tuple[list[str], list[Difference]]:
    """Re-run the recorded tasks matching ``only`` and compare them with the record.

    Parameters
    ----------
    cfg : Config
        The config the record was made with (scaled as it was), or one that adds data sets
        or methods to it (:meth:`Config.extends`); otherwise the config itself has changed:
        one difference.
    record : path
        The recorded results directory.
    only : sequence of str
        Shell patterns on task ids (as ``alprbf run --only``); tasks not yet in the record are
        left out.
    jobs : int
        Workers of the re-run.
    ignore : sequence of str
        Columns to leave out of the comparison.
    queries : int, optional
        Re-run only the first ``queries`` queries of each task (rounded up to whole batches;
        all of them if its budget is smaller) and compare those rows (see the module
        docstring).
    first_fold : bool
        Re-run only the matching tasks of the first repetition's first fold (``__r0__f0``):
        every method and data set of the pattern at a fraction of the cost (CI).

    Returns
    -------
    checked : list of str
        The task ids re-run.
    differences : list of Difference
        Empty when every re-run task gave the recorded rows.

    Raises
    ------
    UserError
        If ``record`` holds no task file, or ``queries`` is not positive or is given for a
        task whose strategy selects a parameter by inner CV.
    """
    if queries is not None and queries < 1:
        raise UserError(f"--queries must be >= 1, got {queries}")
    record = Path(record)
    recorded = {p.stem for p in task_files(record)}
    if not recorded:
        raise UserError(f"{record} holds no recorded task files")
    if not holds_results_of(record, cfg):
        digest = run_digest(record)
        return [], [Difference("config", f"the record was made with config {digest}, the "
                               f"config now has digest {cfg.digest()} and does not only add "
                               "data sets or methods to it")]
    tasks = [t for t in select_tasks(plan(cfg), only) if t.task_id in recorded
             and not (first_fold and (t.repetition, t.fold) != (0, 0))]
    chosen = [t.task_id for t in tasks]
    if not chosen:     # a record built up in pieces may not hold these tasks yet
        return [], []
    # the re-run loads only the data sets of the chosen tasks (a task's seeds and rows depend
    # on its own data set's label, not on the others in the grid): table 004's 30 MNIST
    # databases cost half a minute to load for the one a check re-runs
    needed = {t.dataset.label for t in tasks}
    cfg = replace(cfg, datasets=tuple(d for d in cfg.datasets if d.label in needed))
    if queries is not None:
        selecting = [t for t in tasks if t.strategy.select]
        if selecting:
            t = selecting[0]
            raise UserError(f"--queries cannot check {t.task_id}: its strategy chooses "
                            f"'{t.strategy.select.get('param')}' by inner CV with the full "
                            "budget; check it without --queries")
        cfg = first_queries(cfg, queries)
    with tempfile.TemporaryDirectory(prefix="alprbf-check-") as tmp:
        run_experiment(cfg, Path(tmp) / "rerun", jobs=jobs, progress=False, only=chosen,
                       checkpoint_every=None)
        return chosen, compare_results(record, Path(tmp) / "rerun", ignore, tasks=chosen,
                                       prefix=queries is not None)


def first_queries(cfg: Config, queries: int) -> Config:
    """``cfg`` with every data set's budget cut to ``queries`` queries, rounded up to whole
    batches of its largest batch (kept if smaller)."""
    full = validate(cfg, load_datasets(cfg))
    datasets = []
    for d in cfg.datasets:
        batch = max(s.batch_size or cfg.protocol_for(d).batch_size for _, s in cfg.methods)
        budget = min(-(-queries // batch) * batch, full[d.label])
        datasets.append(replace(d, protocol={**d.protocol, "labels": 0, "budget": budget}))
    return replace(cfg, datasets=tuple(datasets))
