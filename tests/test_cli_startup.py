"""Start-up: ``alprbf --help``, ``alprbf list`` and ``alprbf validate`` of a config with a
misspelt name load none of the heavy libraries.

They are the commands one types first and most often; importing NumPy, pandas, sklearn, SciPy,
numba or matplotlib would cost them seconds (the commands import what they need when they run).
Which modules a command loads does not depend on the machine, so this test is exact where a
timing would be flaky.  ``alprbf list`` reads :mod:`alprbf.cli.catalogue`'s file, which must
equal what the registries give; ``alprbf validate`` refuses an unknown name or parameter from
it before the config parser imports the registries (a valid config still needs them: its
parameter values and data are checked by constructing the models and loading the data).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from alprbf.cli import catalogue
from alprbf.engine.config import parse_config
from alprbf.errors import UserError

HEAVY = ("numpy", "pandas", "sklearn", "scipy", "numba", "matplotlib", "pyarrow", "joblib")

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
                                  ["list", "datasets"], ["list", "strategies"],
                                  ["datasets", "--help"], ["run", "--help"],
                                  ["validate", "--help"]])
def test_the_first_commands_load_no_heavy_library(args):
    code, modules, out = _run(*args)
    assert code in (0, None), out
    assert out
    assert sorted(modules & set(HEAVY)) == []


#: Configs with one misspelt name each, and the start of the error ``alprbf validate`` gives.
MISSPELT = {
    "dataset": ({"dataset": "irs", "model": "svc"}, "unknown dataset 'irs'"),
    "dataset param": ({"dataset": {"name": "waveform", "params": {"n_sample": 9}},
                       "model": "svc"}, "dataset 'waveform' has no parameter 'n_sample'"),
    "model": ({"dataset": "iris", "model": ["svc", "gausian_nb"]}, "unknown model 'gausian_nb'"),
    "model param": ({"dataset": "iris", "model": {"name": "svc", "params": {"c": 1.0}}},
                    "model 'svc' has no parameter 'c'"),
    "strategy": ({"dataset": "iris", "model": "svc", "strategy": "uncertain"},
                 "unknown strategy 'uncertain'"),
    "strategy param": ({"dataset": "iris", "model": "svc",
                        "strategy": {"name": "uncertainty", "params": {"measures": "margin"}}},
                       "strategy 'uncertainty' has no parameter 'measures'"),
    "methods": ({"dataset": "iris", "methods": [{"model": "svc", "strategy": "randm"}]},
                "unknown strategy 'randm'"),
}


@pytest.mark.parametrize("case", sorted(MISSPELT))
def test_validate_refuses_a_misspelt_name_without_heavy_libraries(case, tmp_path):
    config, expected = MISSPELT[case]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "x", **config}))
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(["validate", str(path)])],
                          capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout.rstrip("\n").split("\n")[-1])
    assert got["code"] == 2
    assert proc.stderr.startswith(f"error: {expected}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert sorted(set(got["modules"]) & set(HEAVY)) == []


@pytest.mark.parametrize("case", sorted(MISSPELT))
def test_the_catalogue_check_says_what_the_config_parser_says(case):
    data = {"name": "x", **MISSPELT[case][0]}
    with pytest.raises(UserError) as light:
        catalogue.check_names(data)
    with pytest.raises(UserError) as parser:
        parse_config(data)
    assert str(light.value) == str(parser.value)


def test_list_shows_every_registered_name():
    code, _, out = _run("list", "strategies")
    assert code in (0, None)
    for name, _params, _doc in catalogue.load()["strategies"]:
        assert name in out


def test_the_catalogue_is_the_registries():
    """After adding or changing a model, strategy or data set: python -m alprbf.cli.catalogue."""
    assert catalogue.load() == catalogue.build()
