"""The switch ALPRBF_FAST on the smoke tables: the PRBF methods of tables 000, 001 and 002
give the same rows with the reference path (``ALPRBF_FAST=0``) as with the fast paths (``1``).

Each case runs a subset of a table's tasks at ``--scale smoke`` with the switch off, then
re-runs them with it on through ``alprbf check-record``, which compares the rows bit for bit
(timing columns aside).  The commands run in new processes, with the kernels every ``alprbf``
command pins.

CI makes the same comparison with less work: its checks stream computes the smoke tables anyway
(on the fast paths, the default), and ``make check-switch`` re-runs these cases on the reference
path against those rows.  There (``ALPRBF_SWITCH_CHECKED=1``, set by ``.ci/run``) the
from-scratch cases are skipped; the Makefile's patterns are checked to be these.
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


def test_make_check_switch_runs_these_cases():
    text = (ROOT / "Makefile").read_text()
    block = text.split("SWITCH_CHECKS :=", 1)[1].split("\n\n", 1)[0]
    entries = [e.replace("\\", " ").strip() for e in block.split(";")]
    found = {t.strip(): p.split() for t, p in (e.split("|") for e in entries if e)}
    assert found == CASES


@pytest.mark.slow
@pytest.mark.mirror
@pytest.mark.skipif(os.environ.get("ALPRBF_SWITCH_CHECKED") == "1",
                    reason="CI compares the same cases in its checks stream (make check-switch "
                           "against the smoke tables' own rows)")
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
