"""Parameter checks shared by estimators, option objects and strategies (a bottom layer).

Every check raises :class:`ValueError` with a one-line message naming the parameter, the bad
value and what is valid (with a "did you mean" hint for a near miss); the config layer turns
it into the user-facing one-line error.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

from .errors import did_you_mean


def _fail(owner: str, name: str, value, valid: str, hint: str = "") -> ValueError:
    return ValueError(f"{owner}: invalid {name}={value!r}{hint}; valid: {valid}")


def check_int(owner: str, name: str, value, lo: int) -> None:
    """Raise unless ``value`` is an integer (not a bool) ``>= lo``."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise _fail(owner, name, value, f"an integer >= {lo}")


def check_real(owner: str, name: str, value, lo: float | None = None) -> None:
    """Raise unless ``value`` is a finite real number (not a bool), ``>= lo`` if given."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or (lo is not None and value < lo):
        raise _fail(owner, name, value,
                    "a real number" + (f" >= {lo}" if lo is not None else ""))


def check_positive(owner: str, name: str, value) -> None:
    """Raise unless ``value`` is a finite real number (not a bool) ``> 0``."""
    check_real(owner, name, value, 0.0)
    if value == 0:
        raise _fail(owner, name, value, "a real number > 0")


def check_choice(owner: str, name: str, value, valid: Iterable) -> None:
    """Raise unless ``value`` is one of ``valid``."""
    valid = tuple(valid)
    if value not in valid:
        hint = did_you_mean(value, valid) if isinstance(value, str) else ""
        raise _fail(owner, name, value, ", ".join(map(str, valid)), hint)


def check_params(owner: str, values: dict, *, ints: dict | None = None,
                 reals: dict | None = None, choices: dict | None = None) -> None:
    """Check several parameters at once.

    Parameters
    ----------
    owner : str
        Name used in the message (the class).
    values : dict
        Parameter name -> value.
    ints, reals : dict, optional
        Parameter name -> lower bound (``None`` for reals: any finite number).
    choices : dict, optional
        Parameter name -> valid values.
    """
    for name, valid in (choices or {}).items():
        check_choice(owner, name, values[name], valid)
    for name, lo in (ints or {}).items():
        check_int(owner, name, values[name], lo)
    for name, lo in (reals or {}).items():
        check_real(owner, name, values[name], lo)
