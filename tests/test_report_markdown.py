"""Markdown writer of the report's tables: escaping and column alignment."""

from __future__ import annotations

import pandas as pd

from alprbf.report import tables


def _alignment(md: str) -> list[str]:
    return md.splitlines()[1].strip("|").split("|")


def test_numeric_columns_are_right_aligned_even_with_missing_cells():
    display = pd.DataFrame({"dataset": ["iris", "pima"], "a / b": ["95.33", tables.NA],
                            "c": [tables.NA, tables.NA], "d": ["1.0", "2.0"]})
    md = tables.to_markdown(display)
    assert _alignment(md) == [":---", "---:", "---:", "---:"]
    assert "| pima | n/a | n/a | 2.0 |" in md
    assert "a / b" in md.splitlines()[0]


def test_text_columns_are_left_aligned_and_pipes_escaped():
    display = pd.DataFrame({"method": ["x | y", "z"], "verdict": ["within std", "n/a"]})
    md = tables.to_markdown(display)
    assert _alignment(md) == [":---", ":---"]
    assert "x \\| y" in md
