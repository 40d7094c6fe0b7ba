"""Packages keep their private parts: no module imports a ``_``-prefixed module or name that
belongs to another package of alprbf.

A private module (``alprbf.prbf._em``) or a private name (``_helper`` of
``alprbf.models.base``) belongs to the package that holds it (``alprbf.prbf``,
``alprbf.models``); modules of that package and of its sub-packages may import it, no other.
The layer order itself is checked by ``lint-imports`` (``make lint``; contracts in
pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "alprbf"


def _module_name(path: Path) -> tuple[str, str]:
    """(module name, package name) of a source file of alprbf."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _is_package(dotted: str) -> bool:
    return (ROOT.joinpath(*dotted.split(".")) / "__init__.py").is_file()


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _imported_paths(tree: ast.AST, package: str):
    """(line, dotted path) of every alprbf module or name a module imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def _owner(dotted: str) -> str | None:
    """The package a path's first private part belongs to (None: nothing private)."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            owner = parts[:i]
            while owner and not _is_package(".".join(owner)):
                owner.pop()   # a private name of a module belongs to the module's package
            return ".".join(owner)
    return None


def private_imports_across_packages() -> list[str]:
    """``file:line imports path (private to package)`` for every offending import."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        _, package = _module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, dotted in _imported_paths(tree, package):
            if not dotted.startswith("alprbf."):
                continue
            owner = _owner(dotted)
            if owner is not None and not (package == owner or package.startswith(owner + ".")):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {dotted} "
                           f"(private to {owner})")
    return bad


def test_the_checker_sees_relative_and_absolute_imports():
    tree = ast.parse("from ..prbf._em import run_em\nfrom . import _x\nimport alprbf.a._b\n"
                     "from .base import _helper\n")
    got = [p for _, p in _imported_paths(tree, "alprbf.models")]
    assert got == ["alprbf.prbf._em.run_em", "alprbf.models._x", "alprbf.a._b",
                   "alprbf.models.base._helper"]
    assert _owner("alprbf.prbf._em.run_em") == "alprbf.prbf"
    assert _owner("alprbf.models.base._helper") == "alprbf.models"
    assert _owner("alprbf.prbf.estimators.PRBF") is None
    assert _owner("alprbf.__version__") is None


def test_no_private_import_across_packages():
    bad = private_imports_across_packages()
    assert not bad, "private imports across packages:\n" + "\n".join(bad)
