"""User-facing errors.

A :class:`UserError` is raised for anything the user can fix (a bad config, an unknown name, a
missing file).  The CLI prints its message on one line and exits with code 2, without a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from .validation import did_you_mean

__all__ = ["DataWarning", "UserError", "did_you_mean", "one_line_warning", "unknown_name"]


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
