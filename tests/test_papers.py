"""The papers' keys (alprbf/papers.py) agree with the repository: their configs, reproduction
pages, the Makefile's ``table-<key>`` aliases, ``alprbf list papers`` and the specification's
index of paper files."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alprbf.cli.commands import app
from alprbf.papers import BY_NUMBER, PAPERS, paper

ROOT = Path(__file__).resolve().parents[1]


def test_keys_are_first_author_and_year():
    assert list(BY_NUMBER) == ["000", "001", "002", "003", "004"]
    for key, p in PAPERS.items():
        first = re.split(r"[ ,&]", p.authors)[0].lower()
        assert key == f"{first}{p.year}" == p.key
        assert p.cite.endswith(str(p.year))
        assert paper(p.number) is paper(key) is p
    with pytest.raises(KeyError):
        paper("005")


def test_configs_and_pages_exist():
    for p in PAPERS.values():
        assert (ROOT / p.page).is_file(), p.page
        # every recorded config the Makefile's table-NNN target runs, and nothing else
        made = sorted(str(c.relative_to(ROOT))
                      for c in ROOT.glob(f"configs/table_{p.number}*.yaml"))
        assert sorted(p.configs) == made
    pages = {f.name for f in (ROOT / "docs" / "reproduction").glob("*.md")} - {"README.md"}
    assert pages == {f"{k}.md" for k in PAPERS}


def test_make_has_an_alias_per_key():
    text = (ROOT / "Makefile").read_text()
    keys = re.search(r"^PAPER_KEYS := (.*)$", text, re.M).group(1).split()
    assert keys == list(PAPERS)
    for p in PAPERS.values():
        assert re.search(rf"^table-{p.key}: {p.table}  ## ", text, re.M), p.key


def test_the_specification_index_names_the_files():
    """shared/papers/INDEX.md (beside the data mirror) lists each number's file with its
    first author."""
    mirror = os.environ.get("ALPRBF_DATA_MIRROR")
    index = (Path(mirror).parent if mirror else ROOT.parent / "shared") / "papers" / "INDEX.md"
    if not index.is_file():
        pytest.skip(f"no {index}")
    rows = [line for line in index.read_text().splitlines() if line.startswith("| 00")]
    for p in PAPERS.values():
        row = next(r for r in rows if r.startswith(f"| {p.number}_"))
        assert f"| {p.authors.split(',')[0].split()[0]}" in row, (p.key, row)


def test_list_papers():
    out = CliRunner().invoke(app, ["list", "papers"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    for p in PAPERS.values():
        assert p.key in out.output and p.page in out.output
