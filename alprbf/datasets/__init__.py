"""Data sets: the registry, loaders and preprocessing."""

from . import bundled, files, openml, published, synthetic  # noqa: F401  (register loaders)
from ._base import DATASETS, Dataset, DatasetLoader, make_dataset
from .fetch import DataFile
from .preprocessing import Preprocessing
from .published import PublishedDataset

__all__ = ["DATASETS", "DataFile", "Dataset", "DatasetLoader", "Preprocessing",
           "PublishedDataset", "make_dataset"]
