"""Start-up: ``alprbf --help`` and ``alprbf list`` load none of the heavy libraries.

They are the commands one types first and most often; importing NumPy, pandas, sklearn, SciPy,
numba or matplotlib would cost them seconds (the commands import what they need when they run).
Which modules a command loads does not depend on the machine, so this test is exact where a
timing would be flaky.  ``alprbf list`` reads :mod:`alprbf.cli.catalogue`'s file, which must
equal what the registries give.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from alprbf.cli import catalogue

HEAVY = ("numpy", "pandas", "sklearn", "scipy", "numba", "matplotlib", "pyarrow")

PROBE = """
import json, sys
from alprbf.cli import main
sys.argv = ["alprbf", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _run(*args: str) -> tuple[int, set[str], str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True,
                          text=True, check=True)
    *out, last = proc.stdout.rstrip("\n").split("\n")
    got = json.loads(last)
    return got["code"], set(got["modules"]), "\n".join(out)


@pytest.mark.parametrize("args", [["--help"], ["list"], ["list", "models"],
                                  ["datasets", "--help"], ["run", "--help"]])
def test_the_first_commands_load_no_heavy_library(args):
    code, modules, out = _run(*args)
    assert code in (0, None), out
    assert out
    assert sorted(modules & set(HEAVY)) == []


def test_list_shows_every_registered_name():
    code, _, out = _run("list", "strategies")
    assert code in (0, None)
    for name, _params, _doc in catalogue.load()["strategies"]:
        assert name in out


def test_the_catalogue_is_the_registries():
    """After adding or changing a model, strategy or data set: python -m alprbf.cli.catalogue."""
    assert catalogue.load() == catalogue.build()
