"""User-facing errors.

A :class:`UserError` is raised for anything the user can fix (a bad config, an unknown name, a
missing file).  The CLI prints its message on one line and exits with code 2, without a traceback.
The lowest layer: plain Python, so that the command line can use it without loading NumPy.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable

__all__ = ["DataWarning", "UserError", "did_you_mean", "one_line_warning", "unknown_name"]


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return a ``" (did you mean 'x'?)"`` hint, or ``""`` when nothing is close."""
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class UserError(Exception):
    """An error caused by user input; shown as one line, exit code 2."""


class DataWarning(UserWarning):
    """Something done to the user's data that they should know (e.g. rows dropped); the CLI
    shows it as one ``warning:`` line."""


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Show a warning as one ``warning:`` line on stderr (no source line); install it as
    ``warnings.showwarning`` (the CLI and every worker process do)."""
    text = str(message).strip().splitlines()
    kind = "" if issubclass(category, DataWarning) else f"{category.__name__}: "
    print(f"warning: {kind}{text[0] if text else ''}", file=file or sys.stderr)


def unknown_name(kind: str, value: str, choices: Iterable[str]) -> UserError:
    """Build the standard error for a name that is not in a registry."""
    choices = sorted(choices)
    return UserError(
        f"unknown {kind} '{value}'{did_you_mean(value, choices)}; valid {kind}s: "
        + ", ".join(choices)
    )
