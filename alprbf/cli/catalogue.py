"""What ``alprbf list`` prints, kept in ``catalogue.json`` beside this module.

Listing the registered names with their parameters from the classes themselves would import
every model, strategy and data set (sklearn, numba, pandas: seconds of start-up); the command
reads this file instead.  It is derived from the registries by :func:`build`: a test fails
when the file and the registries differ, and ``python -m alprbf.cli.catalogue`` writes it anew
(after adding or changing a model, a strategy or a data set).

Beside the rows, the file holds each name's parameters as a config may give them
(``"parameters"``): :func:`check_names` refuses an unknown name or parameter in a config from
it, as the config parser would, before ``alprbf validate`` imports the registries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import unknown_name
from ..registry import check_param_names

#: The registries ``alprbf list`` shows, in its order.
KINDS = ("datasets", "models", "strategies")

PATH = Path(__file__).with_name("catalogue.json")


def build() -> dict[str, Any]:
    """kind -> rows (name, parameters with their defaults, one-line description) of each
    registered name, and ``"parameters"``: kind -> name -> the parameters a config may give,
    from the registries (imports them all)."""
    from ..datasets import DATASETS
    from ..engine.config import MODEL_SKIP
    from ..models import MODELS
    from ..registry import parameters_of
    from ..strategies import STRATEGIES

    registries = {"datasets": DATASETS, "models": MODELS, "strategies": STRATEGIES}
    out = {}
    for kind in KINDS:
        rows = []
        for name in registries[kind]:
            obj = registries[kind][name]
            params = parameters_of(obj, skip=("n_classes", "random_state"))
            text = ", ".join(f"{k}={v!r}" for k, v in params.items())
            doc = getattr(obj, "description", "") or (obj.__doc__ or "").strip().split("\n")[0]
            rows.append([name, text, doc])
        out[kind] = rows
    out["parameters"] = {kind: {name: sorted(parameters_of(registries[kind][name], skip))
                                for name in registries[kind]}
                         for kind, skip in (("datasets", ()), ("models", MODEL_SKIP),
                                            ("strategies", ()))}
    return out


def load() -> dict[str, Any]:
    """The rows as ``catalogue.json`` holds them (no import of the registries)."""
    return json.loads(PATH.read_text(encoding="utf-8"))


def check_names(data: Any) -> None:
    """Refuse an unknown data set, model or strategy name, or a parameter it does not take,
    in the config mapping ``data`` (as read from YAML) with the config parser's message
    (:func:`alprbf.engine.config.parse_config`), from the catalogue alone.

    A first pass only: whatever it cannot judge (a malformed entry, a field it does not know)
    it leaves to the parser, which checks everything again.
    """
    if not isinstance(data, dict):
        return
    known = load()["parameters"]
    entries = [("dataset", x) for x in _as_list(data.get("dataset"))]
    if "methods" in data:
        if "model" in data or "strategy" in data or not isinstance(data["methods"], list):
            return   # the parser's error
        for item in data["methods"]:
            if not isinstance(item, dict) or "model" not in item:
                return
            entries += [("model", item["model"]), ("strategy", item.get("strategy", "random"))]
    elif "model" in data:
        entries += [("model", x) for x in _as_list(data["model"])]
        entries += [("strategy", x) for x in _as_list(data.get("strategy", "random"))]
    for kind, raw in entries:
        if isinstance(raw, str):
            raw = {"name": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            return
        valid = known[{"dataset": "datasets", "model": "models", "strategy": "strategies"}[kind]]
        if raw["name"] not in valid:
            raise unknown_name(kind, raw["name"], valid)
        params = raw.get("params") or {}
        if not isinstance(params, dict):
            return
        check_param_names(kind, raw["name"], valid[raw["name"]], params)


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, list) else [value]


def write() -> Path:
    """Write ``catalogue.json`` from the registries (one line per name, for readable diffs)."""
    kinds = []
    built = build()
    for kind in KINDS:
        lines = ",\n".join(f"  {json.dumps(row, ensure_ascii=False)}" for row in built[kind])
        kinds.append(f" {json.dumps(kind)}: [\n{lines}\n ]")
    params = ",\n".join(f"  {json.dumps(kind)}: {{\n" + ",\n".join(
        f"   {json.dumps(name)}: {json.dumps(names)}" for name, names in by_name.items())
        + "\n  }" for kind, by_name in built["parameters"].items())
    kinds.append(f' "parameters": {{\n{params}\n }}')
    PATH.write_text("{\n" + ",\n".join(kinds) + "\n}\n", encoding="utf-8")
    return PATH


if __name__ == "__main__":
    print(write())
