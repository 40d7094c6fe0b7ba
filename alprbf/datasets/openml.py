"""OpenML data sets by id, through the project's cache, mirror and checksums.

``{name: openml, params: {data_id: 61}}`` reads OpenML data set 61 from two files in the
folder ``openml/<data_id>/`` of the cache or the mirror (:mod:`alprbf.datasets.fetch`), or
downloads them there:

* ``description.json``: OpenML's description of the data set,
  ``https://www.openml.org/api/v1/json/data/<data_id>`` (its ``data_set_description`` gives
  the data file's ``file_id`` and ``md5_checksum``, the ``default_target_attribute``, the
  ``row_id_attribute`` and the ``ignore_attribute`` columns, the ``format``);
* ``dataset.arff``: the data file the description names, from its canonical URL
  ``https://api.openml.org/data/v1/download/<file_id>`` (what OpenML serves there, and what
  its ``url`` field points to, is the ARFF file; the Parquet copies OpenML also keeps are
  derived from it and have no checksum in the description).

Checks.  The ARFF file must match the description's md5 wherever it comes from (cache,
mirror, download); with ``sha256`` in the params it must match that too (pins one version of
the data: OpenML may re-upload a file under a new description).  The description itself
carries no checksum; both files' sha256 go into ``run.json`` with every data set.

Parsing.  ``scipy.io.arff`` (no new dependency; the ``openml`` package would add a client,
its cache and its network layer for what two files and a parser do): numeric attributes as
floats (``?`` is a missing value, NaN, left to the preprocessing's ``missing`` policy);
nominal attributes as integer codes in their declared order, marked categorical. The target
is ``target`` or the description's default target; row-id and ignored attributes are
dropped; rows with a missing target are dropped with a warning.  Not supported (a one-line
error): string and date attributes, sparse ARFF, a description whose format is not ARFF.

Suites.  ``{name: openml, params: {data_ids: [61, 187, 40]}}`` is a shorthand the config
expands into one data set per id (:meth:`OpenML.expand`), labelled ``openml-<id>``: e.g. the
ids of an OpenML benchmark suite such as OpenML-CC18 (whose ids the user lists; the suite's
own listing is another download, not made here).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataWarning, UserError
from ._base import DATASETS, Dataset, DatasetLoader, make_dataset
from .fetch import DataFile, resolve, sha256_file

DESCRIPTION_URL = "https://www.openml.org/api/v1/json/data/{data_id}"
FILE_URL = "https://api.openml.org/data/v1/download/{file_id}"
DESCRIPTION = "description.json"
DATA_FILE = "dataset.arff"


def folder_of(data_id: int) -> str:
    """The data set's folder in the cache and in the mirror."""
    return f"openml/{data_id}"


def _data_id(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"dataset 'openml': {where} must be a positive integer (an OpenML "
                        f"data set id, e.g. 61 for iris), got {value!r}")
    return value


@DATASETS.register("openml")
class OpenML(DatasetLoader):
    """An OpenML data set by id (its ARFF file, checked against OpenML's md5)."""

    description = "OpenML data set by id (ARFF; cache / mirror folder openml/<id>/)"
    source = "file"
    citation = "Vanschoren et al. 2013, OpenML: networked science in machine learning"

    def __init__(self, data_id: int | None = None, data_ids: list[int] | None = None,
                 target: str | None = None, sha256: str | None = None) -> None:
        if data_ids is not None:
            raise UserError("dataset 'openml': data_ids is expanded by the config into one "
                            "data set per id; load one data set with data_id")
        self.data_id = _data_id(data_id, "data_id")
        self.target = target
        self.sha256 = sha256

    @classmethod
    def expand(cls, params: dict[str, Any], label: str) -> list[tuple[dict[str, Any], str]]:
        """The config entries of one ``dataset`` item: ``data_ids: [...]`` gives one per id
        (label ``<label or openml>-<id>``), ``data_id`` one (label ``openml-<id>`` unless
        the entry has its own)."""
        if "data_ids" not in params:
            if "data_id" in params:
                _data_id(params["data_id"], "data_id")
            return [(params, label or f"openml-{params.get('data_id')}")]
        ids = params["data_ids"]
        if "data_id" in params or not isinstance(ids, list) or not ids:
            raise UserError("dataset 'openml': data_ids must be a non-empty list of ids, "
                            "without data_id")
        rest = {k: v for k, v in params.items() if k != "data_ids"}
        if "sha256" in rest:
            raise UserError("dataset 'openml': sha256 pins one file; give it per data set "
                            "(data_id entries), not with data_ids")
        return [({**rest, "data_id": _data_id(i, "data_ids[]")},
                 f"{label or 'openml'}-{i}") for i in ids]

    def load(self, seed=None) -> Dataset:
        return self.load_files()

    def load_files(self, *, home=None, mirror=None, allow_download: bool = True,
                   progress: bool = True) -> Dataset:
        """Resolve the description and the ARFF file (cache, mirror, download), verify the
        ARFF file, parse it (see the module docstring)."""
        name, folder = f"openml-{self.data_id}", folder_of(self.data_id)
        where = {"home": home, "mirror": mirror, "allow_download": allow_download,
                 "progress": progress}
        desc_file = DataFile(DESCRIPTION, DESCRIPTION_URL.format(data_id=self.data_id), "")
        desc_path, o1 = resolve(name, folder, desc_file, **where)
        desc = read_description(desc_path, self.data_id)
        arff = DataFile(DATA_FILE, FILE_URL.format(file_id=desc["file_id"]),
                        self.sha256 or "", md5=desc.get("md5_checksum"))
        path, o2 = resolve(name, folder, arff, **where)
        target = self.target or desc.get("default_target_attribute")
        if not target:
            raise UserError(f"dataset '{name}': the description names no default target; "
                            "give params.target")
        ignore = [*_names(desc.get("row_id_attribute")), *_names(desc.get("ignore_attribute"))]
        X, labels, features, categorical = parse_arff(path, str(target), ignore, name)
        return make_dataset(name, X, labels, feature_names=features, categorical=categorical,
                            source="+".join(sorted({o1, o2})),
                            sha256={DESCRIPTION: sha256_file(desc_path),
                                    DATA_FILE: sha256_file(path)})


def _names(value: Any) -> list[str]:
    """An OpenML attribute field: absent, one name, or a list of names."""
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def read_description(path: Path, data_id: int) -> dict[str, Any]:
    """The ``data_set_description`` of OpenML's JSON description of data set ``data_id``."""
    try:
        desc = json.loads(path.read_text())["data_set_description"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"dataset 'openml-{data_id}': {path} is not an OpenML data set "
                        f"description ({exc}); fetch {DESCRIPTION_URL.format(data_id=data_id)}"
                        ) from None
    if str(desc.get("id")) != str(data_id) or "file_id" not in desc:
        raise UserError(f"dataset 'openml-{data_id}': {path} describes data set "
                        f"{desc.get('id')!r}, not {data_id} (or names no file_id)")
    if str(desc.get("format", "ARFF")).lower() not in ("arff", "sparse_arff"):
        raise UserError(f"dataset 'openml-{data_id}': format {desc.get('format')!r} is not "
                        "supported; valid: ARFF")
    if str(desc.get("format", "")).lower() == "sparse_arff":
        raise UserError(f"dataset 'openml-{data_id}': sparse ARFF is not supported; valid: "
                        "dense ARFF")
    return desc


def parse_arff(path: Path, target: str, ignore: list[str], name: str
               ) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """``X`` (float, NaN for missing), the target's labels, feature names and the categorical
    mask of a dense ARFF file (see the module docstring)."""
    from scipy.io import arff

    try:
        data, meta = arff.loadarff(str(path))
    except (NotImplementedError, ValueError, arff.ParseArffError) as exc:
        raise UserError(f"dataset '{name}': cannot read {path} as ARFF ({exc}); supported: "
                        "dense ARFF with numeric and nominal attributes") from None
    attributes = list(meta.names())
    if target not in attributes:
        raise UserError(f"dataset '{name}': target '{target}' is not an attribute of {path}; "
                        f"attributes: {', '.join(attributes[:12])}")
    if meta[target][0] != "nominal":
        raise UserError(f"dataset '{name}': target '{target}' is {meta[target][0]}, not "
                        "nominal; alprbf classifies (give a nominal params.target)")
    columns, features, categorical = [], [], []
    for a in attributes:
        if a == target or a in ignore:
            continue
        kind, values = meta[a]
        if kind == "nominal":
            code = {v: i for i, v in enumerate(values)}
            columns.append(np.array([code.get(_text(v), np.nan) for v in data[a]], float))
        else:
            columns.append(np.asarray(data[a], float))
        features.append(a)
        categorical.append(kind == "nominal")
    labels = np.array([_text(v) for v in data[target]], dtype=object)
    X = np.column_stack(columns) if columns else np.empty((len(labels), 0))
    keep = labels != "?"
    if not keep.all():
        warnings.warn(f"dataset '{name}': {int((~keep).sum())} rows without a target value "
                      "dropped", DataWarning, stacklevel=2)
    return X[keep], labels[keep].astype(str), features, np.array(categorical, bool)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
