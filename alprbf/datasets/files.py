"""A user's own tabular data: a CSV or Parquet file with a target column."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataWarning, UserError
from ._base import DATASETS, Dataset, DatasetLoader, make_dataset
from .fetch import sha256_file


@DATASETS.register("file")
class FileDataset(DatasetLoader):
    """Any CSV or Parquet file, given the name of its target column.

    Parameters
    ----------
    path : str
        A ``.csv``, ``.tsv``, ``.parquet`` or ``.pq`` file (relative paths resolve against the
        current directory).
    target : str
        Name of the class column.
    categorical : list of str, default=()
        Columns holding categorical attributes; they are integer-coded in sorted order and
        flagged in ``Dataset.categorical``.
    drop : list of str, default=()
        Columns to ignore (identifiers, free text).
    test_path : str, optional
        A second file with the same columns: a fixed test set (its rows are the "test" split,
        used by ``protocol.test: split``; the first file's rows are "train").
    missing : {"drop", "error"}, default="drop"
        Rows with a missing value are dropped (and counted in the loader's log), or refused.
    sep : str or None, default=None
        CSV separator; None lets pandas sniff it.
    """

    source = "file"
    description = "your own CSV or Parquet file (params: path, target, categorical, drop)"

    def __init__(self, path: str = "", target: str = "", categorical: list[str] = (),
                 drop: list[str] = (), missing: str = "drop", sep: str | None = None,
                 test_path: str | None = None) -> None:
        self.path = path
        self.target = target
        self.categorical = list(categorical)
        self.drop = list(drop)
        self.missing = missing
        self.sep = sep
        self.test_path = test_path

    def load(self, seed=None) -> Dataset:
        if not self.path or not self.target:
            raise UserError("dataset 'file' needs params 'path' and 'target'")
        if self.missing not in ("drop", "error"):
            raise UserError("dataset 'file': missing must be 'drop' or 'error', got "
                            f"'{self.missing}'")
        path = Path(self.path)
        df = self._read(path)
        split, sha = None, {path.name: sha256_file(path)}
        if self.test_path:
            test_path = Path(self.test_path)
            test = self._read(test_path)
            if list(test.columns) != list(df.columns):
                raise UserError(
                    f"dataset test file {test_path} has {test.shape[1] - 1} feature columns "
                    f"({', '.join(map(str, test.columns.drop(self.target)))}) but {path} has "
                    f"{df.shape[1] - 1} ({', '.join(map(str, df.columns.drop(self.target)))}); "
                    "a fixed test set needs the training file's columns")
            split = np.array(["train"] * len(df) + ["test"] * len(test))
            df = pd.concat([df, test], ignore_index=True)
            sha[test_path.name] = sha256_file(test_path)
        y = df.pop(self.target).astype(str).to_numpy()
        cat = np.array([c in self.categorical for c in df.columns])
        for c in self.categorical:      # one coding for both files
            df[c] = pd.Categorical(df[c].astype(str)).codes
        try:
            X = df.to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            bad = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
            raise UserError(f"dataset file {path}: non-numeric columns {bad}; list them under "
                            "'categorical' or 'drop'") from None
        return make_dataset(path.stem, X, y, feature_names=list(df.columns), categorical=cat,
                            source="file", sha256=sha, split=split)

    def _read(self, path: Path) -> pd.DataFrame:
        """One file as a frame: parsed, named columns checked, ``drop`` removed, missing rows
        handled."""
        if not path.is_file():
            raise UserError(f"dataset file not found: {path.resolve()}")
        suffix = path.suffix.lower()
        try:
            if suffix in (".parquet", ".pq"):
                df = pd.read_parquet(path)
            elif suffix in (".csv", ".tsv", ".txt"):
                sep = self.sep if self.sep is not None else ("\t" if suffix == ".tsv" else None)
                df = pd.read_csv(path, sep=sep, engine="python")
            else:
                raise UserError(f"dataset file {path}: unsupported type '{suffix}'; "
                                "use .csv, .tsv, .parquet or .pq")
        except UserError:
            raise
        except Exception as exc:  # parser errors from pandas/pyarrow
            raise UserError(f"cannot read dataset file {path}: {exc}".splitlines()[0]) from None
        for col in [self.target, *self.categorical, *self.drop]:
            if col not in df.columns:
                raise UserError(f"dataset file {path}: no column '{col}'; columns: "
                                + ", ".join(map(str, df.columns)))
        df = df.drop(columns=self.drop)
        if df.isna().any().any():
            if self.missing == "error":
                raise UserError(f"dataset file {path} has missing values (set missing: drop)")
            n_before = len(df)
            df = df.dropna()
            warnings.warn(f"dataset file {path}: {n_before - len(df)} of {n_before} rows with "
                          "missing values dropped", DataWarning, stacklevel=2)
        return df
