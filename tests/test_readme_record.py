"""The reproduction pages' status tables (docs/reproduction/) agree with the tracked record's
reports.

Every published error cell of a complete record (the primary reading of the report's
``reference.csv``; Constantinopoulos & Likas 2006's Table III of times and sizes is left to the
report) must appear in a status table row (of the paper's page) naming its data set and method, with
our mean (std) rounded as the report rounds it, the published mean (std) and the verdict. Reitmaier
et al. 2016's table, of RP accuracies without std, is checked cell by cell against its paper-methods
report, summary rows included. A re-recorded table whose page was not updated fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "reproduction"


class _Pages:
    """The text of every reproduction page (one per paper, and the record's index page)."""

    @staticmethod
    def read_text() -> str:
        return "\n".join(p.read_text() for p in sorted(PAGES.glob("*.md")))


README = _Pages()

#: complete records whose README table lists every published cell
COMPLETE = {
    "000": ROOT / "results/table-000-full/report-paper-methods/table_000/reference.csv",
    "001": ROOT / "results/table-001-full/report/table_001/reference.csv",
    "002": ROOT / "results/table-002-full/report/table_002/reference.csv",
}


def _table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of ``text``."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ")]


@pytest.mark.parametrize("table", sorted(COMPLETE))
def test_readme_status_table_matches_the_tracked_report(table):
    path = COMPLETE[table]
    if not path.is_file():
        pytest.fail(f"{path} is not in the checkout: the record of table {table} is tracked")
    ref = pd.read_csv(path)
    ref = ref[ref["primary"] & (ref["metric"] == "error_at_budget")]   # the README's tables
    assert len(ref) > 0
    rows = _table_rows(README.read_text())
    for cell in ref.itertuples():
        matches = [r for r in rows if cell.dataset in r and cell.our_method in r]
        assert len(matches) == 1, (f"table {table}: README has {len(matches)} rows for "
                                   f"{cell.dataset} / {cell.our_method}")
        row = matches[0]
        ours = f"{cell.ours_mean:.2f} ({cell.ours_std:.2f})"
        published = f"{cell.ref_mean:.2f} ({cell.ref_std:.2f})"
        assert ours in row, f"table {table} {cell.dataset} / {cell.our_method}: {row} != {ours}"
        assert published in row, f"table {table} {cell.dataset}: {published} not in {row}"
        assert cell.verdict in row, f"table {table} {cell.dataset}: verdict {cell.verdict}"


# --------------------------------------------------------------------------------------------
# Reitmaier et al. 2016: its README table gives RP accuracy as "ours (paper)" per data set and
# paradigm (bold: the report's verdict says within 1 point; "⚠k/n": degenerate in k of n tasks),
# then the summary rows of Tables 2-4.

#: the tracked report of Reitmaier et al. 2016's five paradigms alone (the Makefile's
#: PAPER_METHODS_003)
REPORT_003 = ROOT / "results/table-003-full/report-paper-methods/table_003"
#: and that of its corrected pipeline (configs/experiments/reitmaier2016_corrected.yaml)
REPORT_003_CORRECTED = ROOT / "results/table-003-full/report-paper-methods/table_003_corrected"

#: Reitmaier et al. 2016's paradigms as the README's status table names its columns
PARADIGMS_003 = {"RWM-4DS": "rwm / four_ds", "GMM-4DS": "gmm / four_ds",
                 "LAP-US": "lap / uncertainty_svm", "RBF-4DS": "rbf / four_ds",
                 "RBF-US": "rbf / uncertainty_svm"}

#: summary rows of the Reitmaier et al. 2016 status table: label -> (reference metric, decimals)
SUMMARY_003 = {"mean RP accuracy": ("mean_rp_accuracy", 2), "mean rank": ("mean_rank", 2),
               "RP wins": ("rp_wins", 1), "mean DUR": ("mean_dur", 2),
               "mean AULC": ("mean_aulc", 2)}


def _status_table_003(text: str, label: str = "data set") -> dict[str, dict[str, str]]:
    """The Reitmaier et al. 2016 status table whose first header cell is ``label``: data set or
    summary label -> paradigm column -> cell."""
    lines = text.splitlines()
    head = f"| {label} | " + " | ".join(PARADIGMS_003) + " |"
    i = lines.index(head)
    table = {}
    for line in lines[i + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        table[cells[0]] = dict(zip(PARADIGMS_003, cells[1:], strict=True))
    return table


def _check_status_table_003(report: Path, label: str) -> None:
    """Every RP cell and summary row of the status table ``label`` agrees with ``report``."""
    if not (report / "reference.csv").is_file():
        pytest.fail(f"{report} is not in the checkout: the record of table 003 is tracked")
    ref = pd.read_csv(report / "reference.csv")
    ref = ref[ref["primary"]]
    table = _status_table_003(README.read_text(), label)
    rp = ref[ref["metric"] == "rp_accuracy"].dropna(subset=["ref_mean"])
    assert rp["dataset"].nunique() == 20                   # the paper's Table 2
    for dataset, cells in rp.groupby("dataset"):
        cells = cells.set_index("name", drop=False)
        for column, method in PARADIGMS_003.items():
            cell, text = cells.loc[method], table[dataset][column]
            expected = f"{float(cell.ours_mean):.2f} ({cell.ref_mean:.2f})"
            degenerate = re.fullmatch(r"degenerate in (\d+) of (\d+) tasks", cell.verdict)
            if degenerate:          # the health checks' verdict: "⚠k/n"
                expected += f" ⚠{degenerate.group(1)}/{degenerate.group(2)}"
            if cell.verdict.startswith("no verdict"):    # the sanity suite's: "†"
                expected += " †"
            assert text.replace("**", "") == expected, (dataset, column, text)
            assert text.startswith("**") == cell.verdict.startswith("within"), (
                dataset, column, cell.verdict)
    # a mean DUR is a lower bound ('≥') when the method misses the target on some data set
    dur = pd.read_csv(report / "dur.csv")
    lower = set(dur.loc[~dur["dur_reached"].astype(bool), "method"])
    for row, (metric, digits) in SUMMARY_003.items():
        cells = ref[ref["metric"] == metric].set_index("name")
        for column, method in PARADIGMS_003.items():
            cell = cells.loc[method]
            prefix = "≥ " if metric == "mean_dur" and method in lower else ""
            expected = (f"{prefix}{float(cell.ours_mean):.{digits}f} "
                        f"({float(cell.ref_mean):.{digits}f})")
            assert table[row][column] == expected, (row, column, table[row][column])


def test_readme_reitmaier2016_table_matches_the_tracked_report():
    _check_status_table_003(REPORT_003, "data set")


def test_readme_reitmaier2016_corrected_table_matches_the_tracked_report():
    """The corrected record's status table (issue 50), where "†" marks a cell whose model
    fails the sanity suite (no verdict)."""
    _check_status_table_003(REPORT_003_CORRECTED, "data set, corrected")


def test_readme_record_table_names_each_run_commit():
    """The record table's commit column names the commit every tracked run.json was written
    at (and any earlier commits it lists), so the README cannot point at another commit."""
    # rows led by the paper's key and its number: "reitmaier2016 (table 003)"
    rows = {m.group(1): r for r in _table_rows(README.read_text())
            if len(r) == 3 and (m := re.fullmatch(r"[a-z]+\d{4} \(table (\d{3})\)", r[0]))}
    runs = sorted(ROOT.glob("results/table-*-full/*/run.json"))
    assert len(runs) >= 5
    for run in runs:
        table = run.parent.parent.name.split("-")[1]
        assert table in rows, f"README's record table has no row for table {table}"
        meta = json.loads(run.read_text())
        commits = [*meta.get("earlier_commits", []), meta["git_commit"]]
        named = [c.strip() for c in rows[table][2].split(",")]
        for commit in commits:
            assert not commit.endswith("-dirty"), f"{run} was written from a dirty checkout"
            assert any(commit.startswith(n) for n in named), (
                f"{run}: commit {commit[:7]} is not in the README's record row {named}")
