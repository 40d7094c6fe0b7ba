"""What every ``alprbf`` command shares: user errors as one line and exit code 2.

Imported by :mod:`alprbf.cli.commands` and :mod:`alprbf.cli.datasets` (which import nothing of each
other's but the mounting of the sub-commands).
"""

from __future__ import annotations

import functools
import sys
import warnings

import typer

from ..errors import UserError, did_you_mean, one_line_warning


def user_errors(fn):
    """Turn a UserError into one line on stderr and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    return wrapper


def check_choice(value: str | None, choices: tuple[str, ...], option: str) -> None:
    """Refuse ``value`` of ``option`` unless it is None or one of ``choices``."""
    if value is not None and value not in choices:
        raise UserError(f"{option} '{value}' is not valid{did_you_mean(value, choices)}; valid: "
                        + ", ".join(choices))


def run_app(app: typer.Typer) -> None:
    """Run ``app``; a UserError raised while Typer parses (e.g. in a callback) is one line and
    exit code 2 as well, and every warning is one line."""
    warnings.showwarning = one_line_warning
    try:
        app()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
