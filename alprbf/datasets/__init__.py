"""Data sets: the registry, loaders and preprocessing."""

from . import bundled, files, published, synthetic  # noqa: F401  (register loaders)
from ._base import DATASETS, Dataset, DatasetLoader, make_dataset
from .preprocessing import Preprocessing

__all__ = ["DATASETS", "Dataset", "DatasetLoader", "Preprocessing", "make_dataset"]
