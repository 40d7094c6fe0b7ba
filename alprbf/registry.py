"""A tiny name -> object registry used for datasets, models and strategies.

Config names resolve through these dicts only (never through import paths).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import UserError, did_you_mean, unknown_name

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """An explicit mapping from a public name to a class or factory.

    Parameters
    ----------
    kind : str
        What the registry holds ("dataset", "model", "strategy"); used in error messages.
    items : mapping, optional
        The initial entries, name -> object.
    """

    def __init__(self, kind: str, items: Mapping[str, T] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        for name, obj in (items or {}).items():
            self.add(name, obj)

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering an object under ``name``."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name`` (a name can be registered once)."""
        if name in self._items:
            raise ValueError(f"{self.kind} '{name}' registered twice")
        self._items[name] = obj

    def remove(self, name: str) -> None:
        """Unregister ``name`` (for plug-ins and tests that register temporarily)."""
        del self._items[name]

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise unknown_name(self.kind, name, self._items) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)


def parameters_of(factory: Callable[..., Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Public keyword parameters of a class or function with their defaults.

    A wrapper that forwards its keyword parameters names the callable that receives them as
    ``params_from`` (or ``estimator_class``); its parameters are then that callable's.
    """
    for hook in ("params_from", "estimator_class"):
        source = getattr(factory, hook, None)
        if source is not None:
            return parameters_of(source, skip)
    target = factory.__init__ if inspect.isclass(factory) else factory
    out: dict[str, Any] = {}
    for p in inspect.signature(target).parameters.values():
        if p.name in ("self", *skip) or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[p.name] = None if p.default is inspect.Parameter.empty else p.default
    return out


def check_params(kind: str, name: str, factory: Callable[..., Any], params: Mapping[str, Any],
                 skip: tuple[str, ...] = ()) -> None:
    """Raise a one-line :class:`UserError` for parameters the factory does not accept."""
    check_param_names(kind, name, parameters_of(factory, skip), params)


def check_param_names(kind: str, name: str, valid: Iterable[str], params: Iterable[str]) -> None:
    """:func:`check_params` given the ``valid`` parameter names (e.g. from the catalogue of
    :mod:`alprbf.cli.catalogue`, without importing the factory)."""
    valid = list(valid)
    for key in params:
        if key not in valid:
            raise UserError(
                f"{kind} '{name}' has no parameter '{key}'{did_you_mean(key, valid)}; "
                f"valid parameters: {', '.join(sorted(valid)) or '(none)'}"
            )
