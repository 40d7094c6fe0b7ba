"""The command line: ``alprbf`` and its sub-commands.

:mod:`~alprbf.cli.commands` holds the commands (``run``, ``report``, ``status``, ...),
:mod:`~alprbf.cli.datasets` the ``alprbf datasets`` group, :mod:`~alprbf.cli.common` what
they share (a user error is one line and exit code 2).  The package pins the CPU kernels when
it is imported, before anything loads NumPy (:mod:`alprbf.engine.cpu`); the commands import
the rest of alprbf when they run, so that ``alprbf --help`` starts in a fraction of a second.
"""

from __future__ import annotations

from ..engine import cpu

cpu.pin_kernels()   # before anything imports NumPy: the same rows on every x86-64 machine


def main() -> None:
    """The ``alprbf`` console script."""
    from .commands import main as run

    run()


def __getattr__(name: str):
    """``from alprbf.cli import app`` (and the other names of :mod:`alprbf.cli.commands`)."""
    if name.startswith("__") or name in ("commands", "common", "datasets"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    try:
        return getattr(import_module(".commands", __name__), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
