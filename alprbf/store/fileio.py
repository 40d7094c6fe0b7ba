"""Atomic file writes shared by the result files, the runner (run.json) and the checkpoints.

Every file is written to a temporary file in its target directory (``.<name>.<random>.tmp``)
and renamed into place, so a reader never sees a partial file.  The permissions follow the
process umask, as ``open()`` would give them (``tempfile`` alone would make them 0600, which
hides a shared results directory from the group).  A run that dies between the write and the
rename leaves a temporary file; :func:`remove_stale_temporaries` clears them at the start of
the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"
_umask_lock = threading.Lock()


def current_umask() -> int:
    """The process umask: from ``/proc/self/status`` where there is one (Linux), else by
    setting and restoring it (serialised within this module)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory + rename.

    The file gets mode ``0o666 & ~umask``.  On any error the temporary file is removed and the
    error propagates (``path``'s directory must exist).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Delete the temporary files :func:`write_atomic` left in ``directory`` (not recursive).

    Call it only while no writer uses the directory (the runner holds the results directory's
    lock).  Returns the removed paths.
    """
    removed = []
    for p in Path(directory).glob(f".*{TEMP_SUFFIX}"):
        if p.is_file():
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


class DirectoryBusy(RuntimeError):
    """Another process holds the lock of a directory; the message says which."""


def lock_holder(directory: Path) -> str | None:
    """Who holds the lock of ``directory`` (:func:`exclusive_lock`), or None if nobody does.

    Read only: takes a shared lock for an instant to test, so it never makes a directory
    look busy to a run that starts later.
    """
    path = Path(directory) / ".lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            with open(path, errors="replace") as fh:
                return fh.read().strip() or "another process"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive_lock(directory: Path, holder: str) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (its ``.lock`` file) for the ``with`` block.

    The lock is an advisory ``flock``: the kernel releases it when the holder exits, however
    it exits, so a killed run never leaves the directory locked.  ``holder`` (who and what)
    is written into the lock file for the error message of the next process that tries.

    Raises
    ------
    DirectoryBusy
        If another process holds the lock (non-blocking: the caller decides what to say).
    """
    path = Path(directory) / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with open(path, errors="replace") as fh:
                raise DirectoryBusy(fh.read().strip() or "another process") from None
        os.ftruncate(fd, 0)
        os.write(fd, holder.encode())
        yield
    finally:
        os.close(fd)   # closing the descriptor releases the lock
