"""The README's reproduction-status tables agree with the tracked record's reports.

Every published error cell of a complete record (the primary reading of the report's
``reference.csv``; seed 001's Table III of times and sizes is left to the report) must
appear in a README table row naming its data set and method, with our mean (std) rounded as
the report rounds it, the published mean (std) and the verdict.  A re-recorded table whose
README was not updated fails here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: complete records whose README table lists every published cell
COMPLETE = {
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
