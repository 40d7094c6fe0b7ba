"""What ``alprbf list`` prints, kept in ``catalogue.json`` beside this module.

Listing the registered names with their parameters from the classes themselves would import
every model, strategy and data set (sklearn, numba, pandas: seconds of start-up); the command
reads this file instead.  It is derived from the registries by :func:`build`: a test fails
when the file and the registries differ, and ``python -m alprbf.cli.catalogue`` writes it anew
(after adding or changing a model, a strategy or a data set).
"""

from __future__ import annotations

import json
from pathlib import Path

#: The registries ``alprbf list`` shows, in its order.
KINDS = ("datasets", "models", "strategies")

PATH = Path(__file__).with_name("catalogue.json")


def build() -> dict[str, list[list[str]]]:
    """kind -> rows (name, parameters with their defaults, one-line description) of each
    registered name, from the registries (imports them all)."""
    from ..datasets import DATASETS
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
    return out


def load() -> dict[str, list[list[str]]]:
    """The rows as ``catalogue.json`` holds them (no import of the registries)."""
    return json.loads(PATH.read_text(encoding="utf-8"))


def write() -> Path:
    """Write ``catalogue.json`` from the registries (one line per name, for readable diffs)."""
    kinds = []
    for kind, rows in build().items():
        lines = ",\n".join(f"  {json.dumps(row, ensure_ascii=False)}" for row in rows)
        kinds.append(f" {json.dumps(kind)}: [\n{lines}\n ]")
    PATH.write_text("{\n" + ",\n".join(kinds) + "\n}\n", encoding="utf-8")
    return PATH


if __name__ == "__main__":
    print(write())
