"""Seeds derived from the config seed and a task's identity (never Python's salted ``hash()``)."""

from __future__ import annotations

import hashlib

import numpy as np


def _word(part: object) -> int:
    """A stable 32-bit integer for a string or integer identity part."""
    if isinstance(part, (int, np.integer)) and not isinstance(part, bool) and 0 <= part < 2**32:
        return int(part)
    digest = hashlib.sha256(str(part).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little")


def derive_seed(root: int, *identity: object) -> np.random.SeedSequence:
    """``SeedSequence(root, spawn_key=identity)`` with each identity part mapped to 32 bits.

    The same (root, identity) always yields the same stream, across processes and machines.
    """
    return np.random.SeedSequence(int(root), spawn_key=tuple(_word(p) for p in identity))


def seed_int(seq: np.random.SeedSequence) -> int:
    """A 31-bit integer for APIs that want ``random_state=int`` (sklearn)."""
    return int(seq.generate_state(1, dtype=np.uint32)[0] >> 1)
