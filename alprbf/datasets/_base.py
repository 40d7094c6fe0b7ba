"""The :class:`Dataset` container and the dataset registry.

A dataset loader is a small class registered under a public name.  Its ``__init__`` takes the
config's ``dataset.params``; ``load(seed)`` returns a :class:`Dataset`.  Generated datasets draw
from ``seed`` (a :class:`numpy.random.SeedSequence` derived from the config seed); file-backed
ones ignore it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..registry import Registry


@dataclass(frozen=True, eq=False)
class Dataset:
    """A classification data set held in memory.

    Attributes
    ----------
    name : str
        Registry name.
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int64
        Class codes ``0 .. n_classes - 1``; ``classes[y]`` gives the original labels.
    classes : tuple of str
        Original class labels, in code order.
    feature_names : tuple of str
    categorical : ndarray of shape (n_features,), bool
        True for categorical attributes (integer-coded in ``X``).
    source : str
        Where it came from ("sklearn", "generated", "mirror", "cache", "file").
    sha256 : dict
        Checksums of the files read (file name -> sha256); empty for generated data.
    split : ndarray of shape (n_samples,) of str or None
        The published train/test membership (e.g. ``"train"``/``"test"``) when the data set has one.
    groups : ndarray of shape (n_features,) of int or None
        Source attribute of each column when columns were derived (one-hot indicators share
        their attribute's index; principal components are -1); None = one column per attribute.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    classes: tuple[str, ...]
    feature_names: tuple[str, ...]
    categorical: np.ndarray
    source: str = "generated"
    sha256: dict[str, str] = field(default_factory=dict)
    split: np.ndarray | None = None
    groups: np.ndarray | None = None

    def __post_init__(self) -> None:
        X = np.ascontiguousarray(self.X, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.int64)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise ValueError(f"dataset {self.name}: X {X.shape} and y {y.shape} do not match")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        cat = np.zeros(X.shape[1], bool) if self.categorical is None else self.categorical
        object.__setattr__(self, "categorical", np.asarray(cat, dtype=bool))

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def content_sha256(self) -> str:
        """sha256 of the loaded arrays (X as float64 then y as int64): identifies the data used."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.X).tobytes())
        h.update(np.ascontiguousarray(self.y).tobytes())
        return h.hexdigest()


def make_dataset(name: str, X, labels, *, feature_names=None, categorical=None,
                 source: str = "generated", sha256=None, split=None) -> Dataset:
    """Build a :class:`Dataset` from raw labels of any type (encoded in sorted order)."""
    labels = np.asarray(labels)
    classes, y = np.unique(labels, return_inverse=True)
    X = np.asarray(X, dtype=np.float64)
    if feature_names is None:
        feature_names = [f"x{i}" for i in range(X.shape[1])]
    return Dataset(
        name=name, X=X, y=y, classes=tuple(str(c) for c in classes),
        feature_names=tuple(str(f) for f in feature_names), categorical=categorical,
        source=source, sha256=dict(sha256 or {}), split=split,
    )


class DatasetLoader:
    """Base class of registered dataset loaders.

    Subclasses set the class attributes and implement :meth:`load`.  ``expected`` is
    ``(n_samples, n_features, n_classes)`` for data sets with a fixed published shape.
    ``papers`` names the papers' tables that print the data set ("000 T1, 001 TI"; empty when
    none), ``paper_shape`` the shape they print when it differs from ``expected`` and
    ``paper_note`` any other difference (``alprbf datasets info`` / ``verify`` show them).
    """

    description: ClassVar[str] = ""
    source: ClassVar[str] = "generated"
    citation: ClassVar[str] = ""
    expected: ClassVar[tuple[int, int, int] | None] = None
    papers: ClassVar[str] = ""
    paper_shape: ClassVar[tuple[int, int, int] | None] = None
    paper_note: ClassVar[str] = ""

    def load(self, seed: np.random.SeedSequence | int | None = None) -> Dataset:
        raise NotImplementedError


DATASETS: Registry[type[DatasetLoader]] = Registry("dataset")
