"""Every tracked report of the reproduction record is what ``alprbf report`` makes of its
task files today, file for file and byte for byte.

The report arguments are read from the Makefile (``REPORT_ARGS_NNN``, ``PAPER_METHODS_NNN``,
``PAPER_REPORT_ARGS_NNN``), so this checks the report that ``make table-NNN SCALE=full`` writes.
A change to the report code, or to a task file, that moves any number, table layout or figure
fails here until the tracked report is regenerated in the same submission.
"""

from __future__ import annotations

import filecmp
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alprbf.cli import app

#: regenerates every tracked report (minutes): left out of `make test-quick`
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = ROOT / "Makefile"


def _make_variables() -> dict[str, str]:
    """``NAME := value`` lines of the Makefile, with ``$(OTHER)`` references expanded."""
    raw = dict(re.findall(r"^([A-Z0-9_]+) := (.*)$", MAKEFILE.read_text(), flags=re.M))

    def expand(value: str) -> str:
        return re.sub(r"\$\(([A-Z0-9_]+)\)", lambda m: expand(raw.get(m.group(1), "")), value)

    return {k: expand(v) for k, v in raw.items()}


def _tracked_reports() -> list[tuple[str, str]]:
    """(table, report folder name) of every report tracked under results/table-NNN-full/."""
    return [(d.parent.name.split("-")[1], d.name)
            for d in sorted(ROOT.glob("results/table-*-full/report*")) if d.is_dir()]


def _report_args(table: str, folder: str) -> list[str]:
    var = _make_variables()
    if folder == "report":
        return shlex.split(var.get(f"REPORT_ARGS_{table}", ""))
    assert folder == "report-paper-methods", f"unknown tracked report folder {folder}"
    methods = var.get(f"PAPER_METHODS_{table}")
    assert methods, f"results/table-{table}-full/{folder} is tracked but the Makefile has no " \
                    f"PAPER_METHODS_{table}"
    return ["--methods", methods, *shlex.split(var.get(f"PAPER_REPORT_ARGS_{table}", ""))]


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_record_tracks_reports():
    tables = {t for t, _ in _tracked_reports()}
    assert {"000", "001", "002", "003", "004"} <= tables, tables


def test_makefile_variables_are_read():
    var = _make_variables()
    assert var["PAPER_REPORT_ARGS_003"] == var["REPORT_ARGS_003"] != ""
    assert "--merge-datasets" in shlex.split(var["REPORT_ARGS_004"])


@pytest.mark.parametrize(("table", "folder"), _tracked_reports())
def test_tracked_report_is_reproduced_exactly(table, folder, tmp_path, monkeypatch):
    tracked = ROOT / f"results/table-{table}-full" / folder
    out = tmp_path / folder
    monkeypatch.chdir(ROOT)          # the report names the results folder as it is given
    result = CliRunner().invoke(app, ["report", f"results/table-{table}-full", "--out", str(out),
                                      *_report_args(table, folder)])
    assert result.exit_code == 0, result.output
    assert _files(out) == _files(tracked), "the report's files differ from the tracked ones"
    names = _files(tracked)
    _, mismatch, errors = filecmp.cmpfiles(out, tracked, names, shallow=False)
    assert not errors, errors
    assert not mismatch, (f"table {table} {folder}: regenerate the tracked report "
                          f"(`make table-{table} SCALE=full`); these files changed: {mismatch}")
