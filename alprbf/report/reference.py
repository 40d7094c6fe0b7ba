"""Published values beside ours: one verdict per published cell and a summary per table.

A *published cell* is one row of the reference file (:mod:`alprbf.report.io`): a value (and
maybe a std) that a paper prints for one data set, method and metric.  Several *readings* may
stand for it: the methods the reference row names (``method``, then ``other_readings``: the
paper leaves a choice open and the config runs each), and, for ``components``, our count after
and before the final split.  ``method`` with the first metric reading is the *primary*
reading, whose verdict the summary counts; the others are printed beside it.

Verdict (for each reading with a value of ours; Δ = ours − published):

* ``within std``: ``|Δ| <= std`` where the paper publishes a std;
* ``within <tolerance>``: ``|Δ| <= tolerance`` where it does not
  (:data:`NO_STD_TOLERANCE`: 1 pp for errors, accuracies, AULC and the DUR target, 1 component,
  1 label, 0.1 for the DUR ratio);
* ``outside``: otherwise;
* ``not comparable``: wall-clock times, measured on other hardware and software (Δ is still
  printed);
* ``not run``: the config has the method and data set but the results have no row of the cell
  (a partial run, e.g. ``--only``); ``not selected``: left out by ``--methods``;
  ``no value``: the cell ran but our measure does not apply (e.g. DUR without a baseline);
  ``unmapped``: a name that matches no method or data set of the config (``alprbf validate``
  refuses such a file);
* ``degenerate in k of n tasks``: k of the cell's tasks are constant predictors at their end
  or for much of their curve (:mod:`alprbf.report.health`); such a number is not the
  method's, so it is neither within nor outside;
* ``no verdict: fails the sanity suite``: the model of the cell's method fails the sanity
  suite on the cell's data set (with every label it trails a plain learner of its family,
  docs/sanity.md), as a list given to ``alprbf report --sanity`` says; a verdict waits for the
  fix.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

#: Tolerance (and how it is printed) where the paper publishes no std; None: no verdict.
NO_STD_TOLERANCE: dict[str, tuple[float, str] | None] = {
    "error_at_budget": (1.0, "1 pp"),
    "accuracy_at_budget": (1.0, "1 pp"),
    "rp_accuracy": (1.0, "1 pp"),
    "aulc": (1.0, "1 pp"),
    "dur_target": (1.0, "1 pp"),
    "dur": (0.1, "0.1"),
    "dur_labels": (1.0, "1 label"),
    "components": (1.0, "1 component"),
    "mean_rp_accuracy": (1.0, "1 pp"),
    "mean_rank": (0.25, "0.25 rank"),
    "rp_wins": (1.0, "1 win"),
    "mean_dur": (0.1, "0.1"),
    "mean_aulc": (1.0, "1 pp"),
    "friedman_chi2": (3.0, "3"),
    "cd": (0.05, "0.05"),
    "train_time_s": None,
    "total_time_s": None,
    "fit_seconds_per_query": None,
}

#: Our measures that may stand for a published metric, primary first, with a description.
METRIC_READINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "components": (("components", "after the final split"),
                   ("components_presplit", "before the final split")),
}

WITHIN_STD = "within std"
OUTSIDE = "outside"
NOT_COMPARABLE = "not comparable"
NO_VALUE = "no value"
DEGENERATE = "degenerate"
NO_VERDICT_SANITY = "no verdict: fails the sanity suite"


def health_verdict(k: int, n: int) -> str:
    """The verdict of a cell with ``k`` degenerate tasks out of ``n``
    (:mod:`alprbf.report.health`)."""
    return f"{DEGENERATE} in {k} of {n} tasks"


def verdict(diff: float, std: float, metric: str) -> str:
    """The verdict of one reading with a value of ours (see the module docstring)."""
    if math.isnan(diff):
        return NO_VALUE
    tol = NO_STD_TOLERANCE.get(metric)
    if not math.isnan(std):
        return WITHIN_STD if abs(diff) <= std + 1e-9 else OUTSIDE
    if tol is None:
        return NOT_COMPARABLE
    return f"within {tol[1]}" if abs(diff) <= tol[0] + 1e-9 else OUTSIDE


def _metric_readings(metric: str) -> tuple[tuple[str, str], ...]:
    return METRIC_READINGS.get(metric, ((metric, ""),))


def compare(ref: pd.DataFrame, matched: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Every reading of every published cell with ours, Δ and the verdict.

    Parameters
    ----------
    ref : DataFrame
        From :func:`alprbf.report.io.load_reference`.
    matched : DataFrame
        From :func:`alprbf.report.io.match_reference`.
    ours : DataFrame
        Long frame of our measures: ``dataset, method, metric, mean, std, flag``.

    Returns
    -------
    pandas.DataFrame
        One row per (cell, method reading, metric reading) with columns ``cell``, ``table``,
        ``dataset``, ``published_as``, ``metric``, ``name``, ``our_method``, ``measure``,
        ``reading`` (a description, e.g. ``"before the final split"``), ``primary``,
        ``ours_mean``, ``ours_std``, ``ref_mean``, ``ref_std``, ``diff``, ``verdict``,
        ``note``, ``source``.  A metric reading other than the first is left out where we have
        no value for it (a model without a split).
    """
    key = ours.set_index(["dataset", "method", "metric"])[["mean", "std", "flag"]]
    values = dict(zip(key.index, key.itertuples(index=False, name=None), strict=True))
    rows = []
    for m in matched.itertuples(index=False):
        r = ref.iloc[m.ref_row]
        our_method = m.our_method if isinstance(m.our_method, str) else ""
        for k, (measure, what) in enumerate(_metric_readings(r["metric"])):
            found = values.get((m.our_dataset, our_method, measure))
            if m.status != "ok" or found is None:
                found = (np.nan, np.nan, "")
            mean, std, flag = float(found[0]), float(found[1]), str(found[2])
            if k and np.isnan(mean):
                continue
            diff = mean - r["mean"]
            rows.append({
                "cell": m.ref_row, "table": r["table"], "dataset": r["dataset"],
                "published_as": r["published_as"], "metric": r["metric"], "name": m.name,
                "our_method": our_method, "measure": measure, "reading": what,
                "primary": m.reading == 0 and k == 0, "ours_mean": mean, "ours_std": std,
                "ref_mean": r["mean"], "ref_std": r["std"], "diff": diff,
                "verdict": (verdict(diff, r["std"], r["metric"]) if m.status == "ok"
                            else m.status),
                "note": m.note or flag, "source": r["source"],
                "our_dataset": m.our_dataset if m.status == "ok" else None})
    return pd.DataFrame(rows)


def mark_degenerate(cells: pd.DataFrame, health: pd.DataFrame) -> pd.DataFrame:
    """``cells`` with the verdict of every reading whose (our data set, our method) has
    degenerate tasks replaced by "degenerate in k of n tasks" (:mod:`alprbf.report.health`):
    a number from learners that do not learn is neither within nor outside."""
    bad = {(r.dataset, r.method): (r.degenerate, r.tasks)
           for r in health.itertuples(index=False) if r.degenerate > 0}
    if not bad or cells.empty:
        return cells
    out = cells.copy()
    for i, r in enumerate(out.itertuples(index=False)):
        hit = bad.get((r.our_dataset, r.our_method))
        if hit is not None and r.verdict not in ("not run", "not selected", "unmapped"):
            out.iat[i, out.columns.get_loc("verdict")] = health_verdict(*hit)
    return out


def mark_sanity(cells: pd.DataFrame, fails: Callable[[str, str], bool]) -> pd.DataFrame:
    """``cells`` with the verdict of every reading whose (our data set, our method) ``fails``
    the sanity suite replaced by :data:`NO_VERDICT_SANITY`: a model that does not come near a
    plain learner of its family with every label has no verdict against a paper (docs/sanity.md).
    """
    if cells.empty:
        return cells
    out = cells.copy()
    for i, r in enumerate(out.itertuples(index=False)):
        judged = r.verdict == OUTSIDE or r.verdict.startswith("within") or \
            r.verdict == NOT_COMPARABLE      # degenerate, no value, not run: kept, they say more
        if judged and fails(r.our_dataset, r.our_method):
            out.iat[i, out.columns.get_loc("verdict")] = NO_VERDICT_SANITY
    return out


def summary(cells: pd.DataFrame) -> list[str]:
    """One line per published table: how many of its cells agree (primary readings).

    ``"seed 001 Table II: 20 of 24 cells within the published std; 4 outside; 0 not run"``;
    counts of other verdicts (not comparable, not selected, no value, unmapped) follow when
    there are any, and the tolerance used where the paper gives no std is named.
    """
    lines = []
    for table, t in cells[cells["primary"]].groupby("table", sort=False):
        v = t["verdict"]
        within = v.str.startswith("within")
        judged = t[(v == OUTSIDE) | within]
        tols = sorted({NO_STD_TOLERANCE[m][1] for m, sd in zip(judged["metric"],
                                                               judged["ref_std"], strict=True)
                       if math.isnan(sd) and NO_STD_TOLERANCE.get(m)})
        where = f" ({', '.join(tols)} where none is given)" if tols else ""
        parts = [f"{int(within.sum())} of {len(t)} cells within the published std{where}",
                 f"{int((v == OUTSIDE).sum())} outside", f"{int((v == 'not run').sum())} not run"]
        degenerate = int(v.str.startswith(DEGENERATE).sum())
        if degenerate:
            parts.append(f"{degenerate} degenerate (learners that do not learn in some tasks; "
                         "see the health table)")
        sanity = int((v == NO_VERDICT_SANITY).sum())
        if sanity:
            parts.append(f"{sanity} without a verdict (the model fails the sanity suite)")
        for other in (NOT_COMPARABLE, "not selected", NO_VALUE, "unmapped"):
            n = int((v == other).sum())
            if n:
                parts.append(f"{n} {other}" + (" (wall-clock time on other hardware)"
                                               if other == NOT_COMPARABLE else ""))
        lines.append(f"{table or 'reference'}: " + "; ".join(parts))
    return lines
