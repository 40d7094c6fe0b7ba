"""The switch ALPRBF_FAST on the smoke tables: the PRBF methods of tables 000, 001 and 002
give the same rows with the reference path (``ALPRBF_FAST=0``) as with the fast paths (``1``).

Each case runs a subset of a table's tasks at ``--scale smoke`` with the switch off, then
re-runs them with it on through ``alprbf check-record``, which compares the rows bit for bit
(timing columns aside).  The commands run in new processes, with the kernels every ``alprbf``
command pins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pinned import PINNED, x86_only

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "000": ["segmentation__*prbf*__f0", "pendigits__*qbc_prbf*__f0"],
    "001": ["waveform__*prbf*__f0", "iris__*prbf*__f0"],
    "002": ["pima__*prbf*__f0"],
}


def _alprbf(args: list[str], fast: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **PINNED, "ALPRBF_FAST": fast}
    return subprocess.run([sys.executable, "-m", "alprbf", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.mirror
@pytest.mark.skipif(not os.environ.get("ALPRBF_DATA_MIRROR"),
                    reason="ALPRBF_DATA_MIRROR is not set")   # the smoke tables read real data
@x86_only
@pytest.mark.parametrize("table", sorted(CASES))
def test_smoke_rows_are_the_same_with_the_switch_off_and_on(table, tmp_path):
    config = f"configs/table_{table}.yaml"
    only = [a for pattern in CASES[table] for a in ("--only", pattern)]
    run = _alprbf(["run", config, "--scale", "smoke", "--out", str(tmp_path), "-q", *only],
                  fast="0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(list(tmp_path.glob("tasks/*.parquet"))) >= 4
    check = _alprbf(["check-record", config, str(tmp_path), "--scale", "smoke", *only],
                    fast="1")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "identical to the record" in check.stdout
