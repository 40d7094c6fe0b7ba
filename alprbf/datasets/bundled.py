"""Data sets that ship with scikit-learn (no download needed)."""

from __future__ import annotations

from sklearn import datasets as skd

from ._base import DATASETS, Dataset, DatasetLoader, make_dataset


class _SklearnBundled(DatasetLoader):
    source = "sklearn"
    _loader = None
    _name = ""

    def load(self, seed=None) -> Dataset:
        bunch = type(self)._loader()
        names = getattr(bunch, "feature_names", None)
        return make_dataset(self._name, bunch.data, bunch.target, feature_names=names,
                            source="sklearn")


@DATASETS.register("iris")
class Iris(_SklearnBundled):
    """Fisher's iris (150 x 4, 3 classes), as bundled with scikit-learn."""

    description = "Fisher's iris, sklearn copy (150 x 4, 3 classes)"
    citation = "Fisher (1936); UCI Machine Learning Repository"
    expected = (150, 4, 3)
    papers = "001 TI, 003 T1"
    paper_note = "sklearn copy: rows 35, 38 as in Fisher (1936)"
    _loader = staticmethod(skd.load_iris)
    _name = "iris"


@DATASETS.register("wine")
class Wine(_SklearnBundled):
    """UCI wine recognition (178 x 13, 3 classes), as bundled with scikit-learn."""

    description = "UCI wine recognition, sklearn copy (178 x 13, 3 classes)"
    citation = "Forina et al.; UCI Machine Learning Repository"
    expected = (178, 13, 3)
    papers = "001 TI, 003 T1"
    paper_note = "sklearn copy, same values as wine_uci"
    _loader = staticmethod(skd.load_wine)
    _name = "wine"


@DATASETS.register("digits")
class Digits(_SklearnBundled):
    """The 8x8 UCI optical digits test set bundled with scikit-learn (1797 x 64, 10 classes)."""

    description = "8x8 optical digits, sklearn copy (1797 x 64, 10 classes)"
    citation = "Alpaydin & Kaynak (1998); UCI Machine Learning Repository"
    expected = (1797, 64, 10)
    _loader = staticmethod(skd.load_digits)
    _name = "digits"
