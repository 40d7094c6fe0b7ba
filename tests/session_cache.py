"""Values computed once per test session, however many pytest-xdist workers run it.

``make test`` runs the suite on two workers, and a module-level cache (``functools.cache``) is
per process: a reference that tests on both workers need is computed twice.  Here the first
worker to ask computes it and pickles it into a directory all workers of the session share
(the parent of each worker's base temporary directory, pytest-xdist's ``popen-gwN``); the
others wait on a lock and read it.  For deterministic values only: a reader gets exactly the
computed value.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def session_dir(tmp_path_factory) -> Path:
    """A directory shared by every worker of this test session (the session's own temporary
    directory without xdist)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    path = root / "session-cache"
    path.mkdir(exist_ok=True)
    return path


def computed_once(directory: Path, key: str, compute: Callable[[], T]) -> T:
    """``compute()``, or the value another worker of the session computed for ``key``."""
    path = directory / f"{key}.pickle"
    with open(directory / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)      # released when the file is closed
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compute()
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(value))
        tmp.replace(path)
        return value


def digest(*parts) -> str:
    """A name for ``parts``: arrays by shape, dtype and bytes, anything else by ``repr``."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(repr((p.shape, p.dtype.str)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def once_per_session(directory: Path, name: str, fn: Callable[..., T],
                     key: Callable[..., tuple | None]) -> Callable[..., T]:
    """``fn`` with its result for each ``key(*args, **kwargs)`` computed once per session
    (``fn`` must be a pure function of what the key names); a key of None calls ``fn``."""
    def wrapper(*args, **kwargs):
        parts = key(*args, **kwargs)
        if parts is None:
            return fn(*args, **kwargs)
        return computed_once(directory, f"{name}-{digest(*parts)}", lambda: fn(*args, **kwargs))
    return wrapper
