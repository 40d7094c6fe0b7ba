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
# records still being built: every cell whose tasks are all recorded is checked against a
# report built from the task files; the others must say that they are still being recorded.
# (Seed 003's summary rows, over whatever is recorded, are checked once its report is tracked.)

#: in-progress record: (experiment directory, the paper's methods, report arguments)
IN_PROGRESS = {
    "003": (ROOT / "results/table-003-full/table_003",
            ("rwm / four_ds", "gmm / four_ds", "lap / uncertainty_svm", "rbf / four_ds",
             "rbf / uncertainty_svm"),
            {"baseline": "rbf / uncertainty_svm", "curve_accuracy": "train"}),
}

#: seed 003's paradigms as the README's status table names its columns
PARADIGMS_003 = {"RWM-4DS": "rwm / four_ds", "GMM-4DS": "gmm / four_ds",
                 "LAP-US": "lap / uncertainty_svm", "RBF-4DS": "rbf / four_ds",
                 "RBF-US": "rbf / uncertainty_svm"}


def _recorded_folds(exp_dir: Path, dataset: str, method: str) -> int:
    """Task files of one cell (``data set / model / strategy``, repetition 0) in the record."""
    stem = f"{dataset}__{method.replace(' / ', '__')}__r0__f"
    return sum(1 for _ in (exp_dir / "tasks").glob(f"{stem}*.parquet"))


@pytest.fixture(scope="module")
def in_progress_reference(tmp_path_factory):
    """The primary reference cells of each in-progress record, from a fresh report."""
    from alprbf.report import build_report

    out = {}
    for table, (exp_dir, methods, kwargs) in IN_PROGRESS.items():
        if not (exp_dir / "run.json").is_file():
            pytest.fail(f"{exp_dir} is not in the checkout: the record of table {table} is tracked")
        dest = tmp_path_factory.mktemp(f"report-{table}")
        build_report(exp_dir, out_dir=dest, formats=("csv",), methods=methods, **kwargs)
        ref = pd.read_csv(dest / "reference.csv")
        out[table] = ref[ref["primary"]]
    return out


def _status_table_003(text: str) -> dict[str, dict[str, str]]:
    """The README's seed-003 table: data set -> paradigm column -> cell text."""
    lines = text.splitlines()
    head = "| data set | " + " | ".join(PARADIGMS_003) + " |"
    i = lines.index(head)
    table = {}
    for line in lines[i + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        table[cells[0]] = dict(zip(PARADIGMS_003, cells[1:], strict=True))
    return table


def test_readme_seed003_table_matches_the_record_in_progress(in_progress_reference):
    exp_dir = IN_PROGRESS["003"][0]
    ref = in_progress_reference["003"]
    ref = ref[ref["metric"] == "rp_accuracy"]
    table = _status_table_003(README.read_text())
    published = ref.dropna(subset=["ref_mean"]).groupby("dataset")["ref_mean"].apply(list)
    assert len(published) == 20                            # the paper's Table 2
    complete = 0
    for dataset in published.index:
        row = table[dataset]
        cells = ref[ref["dataset"] == dataset].set_index("our_method", drop=False)
        done = all(_recorded_folds(exp_dir, dataset, m) == 5 for m in PARADIGMS_003.values())
        complete += done
        for column, method in PARADIGMS_003.items():
            text = row[column].replace("**", "")
            if done:
                cell = cells.loc[method]
                assert text == f"{cell.ours_mean:.2f} ({cell.ref_mean:.2f})", (dataset, column)
                assert row[column].startswith("**") == cell.verdict.startswith("within"), (
                    dataset, column, cell.verdict)
            else:
                assert text.startswith("to come ("), f"{dataset} is not complete: {row[column]}"
    assert complete >= 14


def test_readme_record_table_names_each_run_commit():
    """The record table's commit column names the commit every tracked run.json was written
    at (and any earlier commits it lists), so the README cannot point at another commit."""
    import json

    rows = {r[0].split()[0]: r for r in _table_rows(README.read_text())
            if len(r) == 3 and r[0][:3].isdigit()}
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
