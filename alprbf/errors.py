"""User-facing errors.

A :class:`UserError` is raised for anything the user can fix (a bad config, an unknown name, a
missing file).  The CLI prints its message on one line and exits with code 2, without a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """An error caused by user input; shown as one line, exit code 2."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return a ``" (did you mean 'x'?)"`` hint, or ``""`` when nothing is close."""
    close = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_name(kind: str, value: str, choices: Iterable[str]) -> UserError:
    """Build the standard error for a name that is not in a registry."""
    choices = sorted(choices)
    return UserError(
        f"unknown {kind} '{value}'{did_you_mean(value, choices)}; valid {kind}s: "
        + ", ".join(choices)
    )
