"""Each published-format parser against a small file the test writes in that format.

The fixture files go into a fake mirror (tmp_path); the loader's registered sha256 digests and
class counts are patched to those of the fixture, so the whole path - resolve, verify, parse,
check - runs as it does on the real files.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import struct

import numpy as np
import pytest

from alprbf.datasets import DATASETS
from alprbf.datasets.published import PUBLISHED
from alprbf.errors import UserError

RNG = np.random.default_rng(42)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def install(monkeypatch, tmp_path, name, files, counts=None, split_counts=None,
            split_sizes=None):
    """Write ``files`` into a fake mirror and point the loader's registry entries at them."""
    cls = DATASETS[name]
    mirror = tmp_path / "mirror"
    (mirror / cls.folder).mkdir(parents=True, exist_ok=True)
    new = []
    for f in cls.files:
        data = files[f.name]
        (mirror / cls.folder / f.name).write_bytes(data)
        new.append(dataclasses.replace(f, sha256=sha(data), alt_sha256=()))
    monkeypatch.setattr(cls, "files", tuple(new))
    monkeypatch.setattr(cls, "class_counts", counts or {})
    monkeypatch.setattr(cls, "expected", None)
    monkeypatch.setattr(cls, "split_counts", split_counts or {})
    monkeypatch.setattr(cls, "split_sizes", split_sizes or {})
    return cls, mirror


def load(tmp_path, cls, mirror, **params):
    return cls(**params).load_files(home=tmp_path / "home", mirror=mirror,
                                    allow_download=False, progress=False)


def csv_rows(X, labels, sep=",", fmt="{:g}", label_first=False, prefix=None):
    lines = []
    for i, (row, lab) in enumerate(zip(X, labels, strict=True)):
        vals = [fmt.format(v) for v in row]
        cells = [str(lab), *vals] if label_first else [*vals, str(lab)]
        if prefix is not None:
            cells = [prefix[i], *cells]
        lines.append(sep.join(cells))
    return "\n".join(lines) + "\n"


def ints(n, d, hi=100):
    return RNG.integers(0, hi, size=(n, d)).astype(float)


def decimals(n, d):
    return np.round(RNG.normal(size=(n, d)), 3)


def classes_of(ds):
    return [ds.classes[c] for c in ds.y]


# --------------------------------------------------------------------------- simple tables


SIMPLE = [
    # name, file, d, label position/format, make X, labels, sep
    ("waveform_uci", "waveform.data", 21, False, decimals, [0, 2, 1, 2], ","),
    ("bupa", "bupa.data", 6, False, ints, [1, 2, 2], ","),
    ("pima", "pima-indians-diabetes.data", 8, False, ints, [0, 1, 1], ","),
    ("glass", "glass.data", 10, False, decimals, [1, 7, 5], ","),  # col 1 = Id
    ("wine_uci", "wine.data", 13, True, decimals, [3, 1, 2, 1], ","),
    ("new_thyroid", "new-thyroid.data", 5, True, decimals, [1, 3, 2], ","),
    ("heart", "heart.dat", 13, False, ints, [2, 1, 1], " "),
    ("australian", "australian.dat", 14, False, decimals, [0, 1, 0], " "),
    ("seeds", "seeds_dataset.txt", 7, False, decimals, [1, 2, 3], "\t"),
]


@pytest.mark.parametrize("name,fname,d,first,make,labels,sep", SIMPLE,
                         ids=[s[0] for s in SIMPLE])
def test_simple_tables(monkeypatch, tmp_path, name, fname, d, first, make, labels, sep):
    X = make(len(labels), d)
    text = csv_rows(X, labels, sep=sep, label_first=first)
    if name == "seeds":  # the UCI file separates some fields by two tabs
        text = text.replace("\t", "\t\t", 3).rstrip("\n")  # and has no final newline
    counts = {str(k): labels.count(k) for k in set(labels)}
    cls, mirror = install(monkeypatch, tmp_path, name, {fname: text.encode()}, counts)
    ds = load(tmp_path, cls, mirror)
    expect_X = X[:, 1:] if name == "glass" else X
    np.testing.assert_allclose(ds.X, expect_X)
    assert classes_of(ds) == [str(v) for v in labels]
    assert ds.source == "mirror" and ds.sha256 == {fname: sha(text.encode())}


def test_categorical_masks_follow_the_documentation(monkeypatch, tmp_path):
    cls, mirror = install(monkeypatch, tmp_path, "australian",
                          {"australian.dat": csv_rows(ints(2, 14), [0, 1], " ").encode()})
    ds = load(tmp_path, cls, mirror)
    assert np.flatnonzero(ds.categorical).tolist() == [0, 3, 4, 5, 7, 8, 10, 11]
    cls, mirror = install(monkeypatch, tmp_path, "heart",
                          {"heart.dat": csv_rows(ints(2, 13), [1, 2], " ").encode()})
    ds = load(tmp_path, cls, mirror)
    assert (ds.n_features - ds.categorical.sum(), ds.categorical.sum()) == (6, 7)


def test_iris_uci_keeps_trailing_blank_line(monkeypatch, tmp_path):
    text = "5.1,3.5,1.4,0.2,Iris-setosa\n7.0,3.2,4.7,1.4,Iris-versicolor\n" \
           "6.3,3.3,6.0,2.5,Iris-virginica\n\n"
    cls, mirror = install(monkeypatch, tmp_path, "iris_uci", {"iris.data": text.encode()},
                          {"Iris-setosa": 1, "Iris-versicolor": 1, "Iris-virginica": 1})
    ds = load(tmp_path, cls, mirror)
    assert ds.X.shape == (3, 4) and ds.X[2, 2] == 6.0
    assert classes_of(ds) == ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]


# --------------------------------------------------------------------------- special formats


def test_segmentation_comment_lines_header_and_split(monkeypatch, tmp_path):
    header = ",".join(f"ATTR{i}" for i in range(19)).replace("ATTR0", "REGION-CENTROID-COL")
    pre = ";;; -*- Mode:Common-Lisp; Base:10 -*-\n;;; *-* Last-edit: by Brodley; *-* \n\n" \
          + header + "\n\n"
    Xa, Xb = decimals(2, 19), decimals(3, 19)
    files = {"segmentation.data": (pre + csv_rows(Xa, ["SKY", "PATH"], label_first=True)).encode(),
             "segmentation.test": (pre + csv_rows(Xb, ["PATH", "GRASS", "SKY"],
                                                  label_first=True)).encode()}
    cls, mirror = install(monkeypatch, tmp_path, "segmentation", files,
                          {"GRASS": 1, "PATH": 2, "SKY": 2})
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_allclose(ds.X, np.vstack([Xa, Xb]))
    assert classes_of(ds) == ["SKY", "PATH", "PATH", "GRASS", "SKY"]
    assert ds.split.tolist() == ["train"] * 2 + ["test"] * 3
    assert ds.feature_names[0] == "REGION-CENTROID-COL"
    test_only = load(tmp_path, cls, mirror, subset="test")
    np.testing.assert_allclose(test_only.X, Xb)


@pytest.mark.parametrize("name,tra,tes,d", [("optdigits", "optdigits.tra", "optdigits.tes", 64),
                                            ("pendigits", "pendigits.tra", "pendigits.tes", 16)])
def test_digit_files(monkeypatch, tmp_path, name, tra, tes, d):
    Xa, Xb = ints(3, d, 17), ints(2, d, 17)
    files = {tra: csv_rows(Xa, [0, 9, 3]).encode(), tes: csv_rows(Xb, [9, 9]).encode()}
    cls, mirror = install(monkeypatch, tmp_path, name, files, {"0": 1, "3": 1, "9": 3},
                          split_sizes={"train": 3, "test": 2})
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_allclose(ds.X, np.vstack([Xa, Xb]))
    assert classes_of(ds) == ["0", "9", "3", "9", "9"]
    assert load(tmp_path, cls, mirror, subset="train").n_samples == 3


def test_satimage_labels_skip_six(monkeypatch, tmp_path):
    Xa, Xb = ints(3, 36, 256), ints(2, 36, 256)
    files = {"sat.trn": csv_rows(Xa, [1, 7, 5], " ").encode(),
             "sat.tst": csv_rows(Xb, [7, 2], " ").encode()}
    cls, mirror = install(monkeypatch, tmp_path, "satimage", files,
                          {"1": 1, "2": 1, "5": 1, "7": 2})
    ds = load(tmp_path, cls, mirror)
    assert ds.classes == ("1", "2", "5", "7")  # codes 0..3, label 7 kept as published
    np.testing.assert_allclose(ds.X, np.vstack([Xa, Xb]))


def test_vehicle_nine_files_with_trailing_spaces(monkeypatch, tmp_path):
    names = [f"xa{c}.dat" for c in "abcdefghi"]
    X = ints(9, 18, 300)
    labels = ["van", "saab", "bus", "opel", "van", "bus", "bus", "saab", "opel"]
    files = {n: (" ".join(f"{v:g}" for v in X[i]) + f" {labels[i]} \n").encode()
             for i, n in enumerate(names)}
    counts = {k: labels.count(k) for k in set(labels)}
    cls, mirror = install(monkeypatch, tmp_path, "vehicle", files, counts)
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_allclose(ds.X, X)
    assert classes_of(ds) == labels


def test_phoneme_csv_and_keel_header(monkeypatch, tmp_path):
    X = decimals(3, 5)
    body = csv_rows(X, [0, 1, 0])
    for text in (body, "@relation phoneme\n@attribute Aa real\n@data\n" + body):
        cls, mirror = install(monkeypatch, tmp_path, "phoneme", {"phoneme.dat": text.encode()},
                              {"0": 2, "1": 1})
        ds = load(tmp_path, cls, mirror)
        np.testing.assert_allclose(ds.X, X)
        assert classes_of(ds) == ["0", "1", "0"]


def test_credit_a_missing_values_and_symbolic_codes(monkeypatch, tmp_path):
    text = ("b,30.83,0,u,g,w,v,1.25,t,t,01,f,g,00202,0,+\n"
            "a,?,4.46,u,g,q,h,3.04,t,t,06,f,g,00043,560,+\n"
            "?,24.50,0.5,y,p,q,h,1.5,t,f,0,f,g,?,824,-\n")
    cls, mirror = install(monkeypatch, tmp_path, "credit_a", {"crx.data": text.encode()},
                          {"+": 2, "-": 1})
    ds = load(tmp_path, cls, mirror)
    assert ds.X.shape == (3, 15)
    assert np.isnan(ds.X[1, 1]) and np.isnan(ds.X[2, 0]) and np.isnan(ds.X[2, 13])
    assert np.isnan(ds.X).sum() == 3
    np.testing.assert_array_equal(ds.X[:2, 0], [1, 0])  # a -> 0, b -> 1 (sorted)
    np.testing.assert_array_equal(ds.X[:, 3], [0, 0, 1])  # u -> 0, y -> 1
    assert ds.X[0, 1] == 30.83 and ds.X[1, 14] == 560
    assert np.flatnonzero(ds.categorical).tolist() == [0, 3, 4, 5, 6, 8, 9, 11, 12]
    assert classes_of(ds) == ["+", "+", "-"]


def test_credit_g_symbolic_attributes(monkeypatch, tmp_path):
    text = ("A11 6 A34 A43 1169 A65 A75 4 A93 A101 4 A121 67 A143 A152 2 A173 1 A192 A201 1\n"
            "A12 48 A32 A43 5951 A61 A73 2 A92 A101 2 A121 22 A143 A152 1 A173 1 A191 A201 2\n")
    cls, mirror = install(monkeypatch, tmp_path, "credit_g", {"german.data": text.encode()},
                          {"1": 1, "2": 1})
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_array_equal(ds.X[:, 0], [0, 1])       # A11, A12
    np.testing.assert_array_equal(ds.X[:, 2], [1, 0])       # A34 > A32
    np.testing.assert_array_equal(ds.X[:, 4], [1169, 5951])  # numeric kept
    assert ds.categorical.sum() == 13 and not ds.categorical[[1, 4, 7, 10, 12, 15, 17]].any()


@pytest.mark.parametrize("name,fname,d", [("ecoli", "ecoli.data", 7), ("yeast", "yeast.data", 8)])
def test_sequence_name_column_is_dropped(monkeypatch, tmp_path, name, fname, d):
    X = np.round(RNG.uniform(size=(3, d)), 2)
    labs = ["cp", "im", "cp"] if name == "ecoli" else ["MIT", "NUC", "CYT"]
    text = csv_rows(X, labs, sep="  ", fmt="{:.2f}", prefix=["AAT_X", "ACEA_X", "ADI_X"])
    cls, mirror = install(monkeypatch, tmp_path, name, {fname: text.encode()},
                          {k: labs.count(k) for k in set(labs)})
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_allclose(ds.X, X)
    assert classes_of(ds) == labs


def test_page_blocks_fixed_width_without_final_newline(monkeypatch, tmp_path):
    text = ("   5   7     35  1.400 .400 .657     2.33     14     23      6 1\n"
            "   6  18    108  3.000 .287 .741     4.43     31     80      7 4")
    cls, mirror = install(monkeypatch, tmp_path, "page_blocks",
                          {"page-blocks.data": text.encode()}, {"1": 1, "4": 1})
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_allclose(ds.X[0], [5, 7, 35, 1.4, 0.4, 0.657, 2.33, 14, 23, 6])
    np.testing.assert_allclose(ds.X[1, 4], 0.287)
    assert classes_of(ds) == ["1", "4"]


def test_vowel_subsets(monkeypatch, tmp_path):
    X = decimals(5, 10)
    flags, classes = [0, 0, 1, 0, 1], [0, 10, 3, 3, 10]
    text = "".join(f"{f} {i} {i % 2} " + " ".join(f"{v:.3f}" for v in X[i]) + f"  {c}\n"
                   for i, (f, c) in enumerate(zip(flags, classes, strict=True)))
    cls, mirror = install(monkeypatch, tmp_path, "vowel", {"vowel-context.data": text.encode()},
                          {"0": 1, "3": 2, "10": 2},
                          split_counts={"train": {"0": 1, "3": 1, "10": 1}})
    train = load(tmp_path, cls, mirror)  # default: the training rows (flag 0)
    np.testing.assert_allclose(train.X, X[[0, 1, 3]])
    assert classes_of(train) == ["0", "10", "3"]
    assert train.classes == ("0", "3", "10")  # numeric order, not string order
    every = load(tmp_path, cls, mirror, subset="all")
    assert every.n_samples == 5 and every.split.tolist() == ["train", "train", "test", "train",
                                                             "test"]
    assert load(tmp_path, cls, mirror, subset="test").n_samples == 2
    with pytest.raises(UserError, match="subset must be one of"):
        load(tmp_path, cls, mirror, subset="validation")


def test_ripley_header_line(monkeypatch, tmp_path):
    tr = "    xs            ys       yc\n  0.05100797  0.16086164    0\n -0.748  0.089    1\n"
    te = "    xs            ys       yc\n  0.3  0.7    1\n"
    cls, mirror = install(monkeypatch, tmp_path, "ripley",
                          {"synth.tr": tr.encode(), "synth.te": te.encode()},
                          {"0": 1, "1": 2})
    ds = load(tmp_path, cls, mirror)
    np.testing.assert_allclose(ds.X, [[0.05100797, 0.16086164], [-0.748, 0.089], [0.3, 0.7]])
    assert ds.split.tolist() == ["train", "train", "test"]


def idx(arr: np.ndarray) -> bytes:
    head = struct.pack(">BBBB", 0, 0, 8, arr.ndim) + b"".join(struct.pack(">I", s)
                                                             for s in arr.shape)
    return gzip.compress(head + arr.astype(np.uint8).tobytes())


def test_mnist_idx_files(monkeypatch, tmp_path):
    img_a = RNG.integers(0, 256, (4, 28, 28))
    img_b = RNG.integers(0, 256, (2, 28, 28))
    lab_a, lab_b = np.array([5, 0, 4, 1]), np.array([7, 2])
    files = {"train-images-idx3-ubyte.gz": idx(img_a), "train-labels-idx1-ubyte.gz": idx(lab_a),
             "t10k-images-idx3-ubyte.gz": idx(img_b), "t10k-labels-idx1-ubyte.gz": idx(lab_b)}
    cls, mirror = install(monkeypatch, tmp_path, "mnist", files,
                          {str(k): 1 for k in (0, 1, 2, 4, 5, 7)})
    ds = load(tmp_path, cls, mirror)
    assert ds.X.shape == (6, 784)
    np.testing.assert_array_equal(ds.X[1].reshape(28, 28), img_a[1])  # row-major pixels
    np.testing.assert_array_equal(ds.X[5], img_b[1].ravel())
    assert classes_of(ds) == ["5", "0", "4", "1", "7", "2"]
    train = load(tmp_path, cls, mirror, subset="train")
    assert train.n_samples == 4 and set(train.split) == {"train"}


def test_mnist_truncated_idx_is_refused(monkeypatch, tmp_path):
    good = idx(RNG.integers(0, 256, (2, 28, 28)))
    bad = gzip.compress(gzip.decompress(good)[:-5])
    files = {"train-images-idx3-ubyte.gz": bad, "train-labels-idx1-ubyte.gz": idx(np.array([1, 2])),
             "t10k-images-idx3-ubyte.gz": good, "t10k-labels-idx1-ubyte.gz": idx(np.array([1, 2]))}
    cls, mirror = install(monkeypatch, tmp_path, "mnist", files)
    with pytest.raises(UserError, match="idx header"):
        load(tmp_path, cls, mirror)


# --------------------------------------------------------------------------- published checks


def test_shape_and_class_count_mismatches_are_user_errors(monkeypatch, tmp_path):
    text = csv_rows(ints(3, 6), [1, 2, 2]).encode()
    cls, mirror = install(monkeypatch, tmp_path, "bupa", {"bupa.data": text}, {"1": 2, "2": 1})
    with pytest.raises(UserError, match="published classes"):
        load(tmp_path, cls, mirror)
    monkeypatch.setattr(cls, "class_counts", {"1": 1, "2": 2})
    monkeypatch.setattr(cls, "expected", (345, 6, 2))
    with pytest.raises(UserError, match=r"loaded 3 x 6 with 2 classes, expected 345 x 6"):
        load(tmp_path, cls, mirror)


def test_registry_entries_are_complete():
    for name in PUBLISHED:
        cls = DATASETS[name]
        assert cls.files and cls.folder and cls.citation and cls.licence, name
        assert cls.expected is not None and cls.class_counts, name
        assert sum(cls.class_counts.values()) >= cls.expected[0], name
        for f in cls.files:
            assert len(f.sha256) == 64 and f.url.startswith(("http://", "https://")), name


def test_pima_zeros_missing_marks_only_columns_2_to_6(monkeypatch, tmp_path):
    X = np.array([[0, 0, 70, 0, 0, 30.5, 0.2, 50], [6, 148, 0, 35, 0, 0, 0.6, 0],
                  [1, 85, 66, 29, 94, 26.6, 0.0, 31]], dtype=float)
    text = csv_rows(X, [0, 1, 1])
    cls, mirror = install(monkeypatch, tmp_path, "pima",
                          {"pima-indians-diabetes.data": text.encode()}, {"0": 1, "1": 2})
    published = load(tmp_path, cls, mirror)
    np.testing.assert_array_equal(published.X, X)          # default: as published
    ds = load(tmp_path, cls, mirror, zeros_missing=True)
    expect = X.copy()
    block = expect[:, 1:6]
    block[block == 0] = np.nan
    np.testing.assert_array_equal(ds.X, expect)            # pregnancies, pedigree, age kept
    with pytest.raises(UserError, match="zeros_missing"):
        cls(zeros_missing="yes")
