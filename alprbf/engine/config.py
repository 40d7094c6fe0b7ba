"""Experiment configuration: YAML -> frozen, validated objects.

A config names one or more datasets, models and strategies (lists expand to a grid, or
``methods`` lists explicit model/strategy pairs) and a cross-validation / active-learning
protocol.  Every problem is reported as a one-line :class:`~alprbf.errors.UserError` naming the
field and the valid choices.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from ..datasets import DATASETS, Preprocessing
from ..datasets.preprocessing import STANDARDIZE
from ..errors import UserError, did_you_mean
from ..models import MODELS
from ..registry import Registry, check_params
from ..strategies import STRATEGIES
from ..svm_kernels.density import REITMAIER2016_M0, DensityOptions

INITIAL_METHODS = ("random", "per_class", "density", "density_m0", "all")
SCALES = ("smoke", "full")
TEST_SETS = ("folds", "split", "unlabeled")
ERROR_DENOMINATORS = ("tested", "training")


@dataclass(frozen=True, eq=False)
class Component:
    """A registry name with its parameters; ``label`` names it in results (default: name)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    def _key(self) -> str:
        return json.dumps([type(self).__name__, asdict(self)], sort_keys=True, default=str)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Component) and self._key() == other._key()

    def __hash__(self) -> int:
        return int(hashlib.sha256(self._key().encode()).hexdigest()[:15], 16)


#: What a model seed depends on beside the data set, repetition, fold and model (ModelSpec).
SEED_SCOPES = ("method", "fold")


@dataclass(frozen=True, eq=False)
class ModelSpec(Component):
    """A model of the grid.

    ``seed_key`` (empty: the label) names the model in the derivation of its task's model seed
    and strategy stream (:func:`alprbf.engine.protocol.task_seeds`).  Models that are compared
    paired (e.g. Titsias & Likas 2001's constrained and plain PRBF at one M) give the same key, so
    on every task both start from the same random draws (the same initial network) and their
    difference is the method's, not the draw's; without a key each model's draws follow its own
    label.

    ``seed_scope`` says what else the model seed depends on: ``"method"`` (the default) the
    whole task identity, strategy included; ``"fold"`` the data set, repetition, fold and key
    only, so that models with one key draw the same model seed on a fold whatever strategy they
    are run with (Reitmaier et al. 2016's five paradigms: one inner-CV split of ``L_1`` for the
    once-only tuning, one density model of the pool).  The strategy stream stays the method's.
    """

    seed_key: str = ""
    seed_scope: str = "method"


@dataclass(frozen=True, eq=False)
class StrategySpec(Component):
    """A strategy of the grid; ``batch_size`` > 0 overrides the protocol's for its tasks
    (Reitmaier et al. 2016's MNIST runs US one query at a time and 4DS five at a time).

    ``select`` (empty: none) chooses one strategy parameter per task by inner cross-validation
    on the task's training part (Reitmaier et al. 2016 picks 4DS's lambda so):
    ``{"param": name, "values": [...], "folds": k}``; see
    :func:`alprbf.engine.protocol.select_strategy_param`.
    """

    batch_size: int = 0
    select: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class DatasetSpec(Component):
    """A data set of the grid.

    Attributes
    ----------
    preprocessing : Preprocessing
    one_vs_rest : str or None
        Original class label that becomes the positive class of a two-class task (every other
        class is ``rest``); None keeps the classes as loaded.
    rows : int
        If > 0, a database of exactly this many rows drawn from the data set (stratified by
        the original classes, seeded by the seed, the loader name and its params: every
        ``one_vs_rest`` variant of one data set shares its databases).  Unlike the protocol's
        ``max_rows`` (a smoke-scale cap), more rows than the data set holds is an error.
    protocol : dict
        Protocol fields that differ for this data set (e.g. a budget of its own).
    """

    preprocessing: Preprocessing = field(default_factory=Preprocessing)
    one_vs_rest: str | None = None
    rows: int = 0
    protocol: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Initial:
    """Initial labeled set: ``method`` random | per_class | density | all, and its ``size``.

    ``size`` is the total number of rows for ``random`` and ``density`` and the number per class
    for ``per_class``; ``all`` labels the whole training part (plain supervised CV, budget 0).
    ``size_per_class`` > 0 sizes a ``random`` or ``density`` set by the number of classes
    instead: ``size_per_class * n_classes`` rows (Reitmaier et al. 2016's Algorithm 2 starts
    from 4 x K).  ``density`` (``density_m0`` only): options of M0 that replace those of
    :data:`~alprbf.svm_kernels.density.REITMAIER2016_M0` (empty: M0 as that defines it).
    """

    method: str = "random"
    size: int = 10
    size_per_class: int = 0
    density: dict[str, Any] = field(default_factory=dict, hash=False)

    def n_rows(self, n_train: int, n_classes: int) -> int:
        """Rows of the initial set in a training part of ``n_train`` rows."""
        if self.method == "all":
            return n_train
        if self.method == "per_class":
            return self.size * n_classes
        return self.size_per_class * n_classes if self.size_per_class else self.size


@dataclass(frozen=True)
class Protocol:
    """Cross-validation and active-learning protocol.

    Parameters
    ----------
    folds : int
        Number of cross-validation folds (>= 2); each fold is the test set once.
    stratified : bool
        Stratify the folds by class.
    allow_small_classes : bool
        With stratified folds, accept classes with fewer rows than folds (their rows go to as
        many folds as they have); refused by default.
    repetitions : int
        Independent repetitions of the whole cross-validation with different fold splits.
    seed : int
        Root of every random draw (through ``numpy.random.SeedSequence``).
    initial : Initial
        How the initial labeled set is drawn from the training part of a fold.
    budget : int
        Number of label queries after the initial set (0 = no active learning).
    labels : int
        If > 0, the number of labeled rows to reach, the initial set included (Reitmaier et al. 2016
        counts its budgets this way); the queries are ``labels`` minus the initial set's size.  Give
        either ``budget`` or ``labels``.
    cap_at_pool : bool
        A budget larger than a fold's pool labels the whole pool (Reitmaier et al. 2016's small data
        sets) instead of being refused.
    test : {"folds", "split", "unlabeled"}
        What a task is evaluated on: ``folds``, the held-out fold of a cross-validation;
        ``split``, the data set's published test rows (the pool is its training rows; one
        "fold"); ``unlabeled``, the rows of the pool not yet labeled at each evaluation (no
        held-out rows; one "fold"; Nguyen & Smeulders 2004).
    error_denominator : {"tested", "training"}
        ``test_error`` = misclassified tested rows over the tested rows, or over every row of
        the training part (Nguyen & Smeulders 2004: missed positives plus false alarms relative to
        the database size ``n``); ``test_accuracy`` is ``1 - test_error``.
    batch_size : int
        Labels queried per iteration.
    evaluate_every : int
        Evaluate the model every this many iterations (the first and last always are).
    max_rows : int
        If > 0, use a stratified random subset of at most this many rows of each data set
        (drawn once per data set from the seed; meant for smoke scales).
    """

    folds: int = 5
    stratified: bool = True
    allow_small_classes: bool = False
    repetitions: int = 1
    seed: int = 0
    initial: Initial = field(default_factory=Initial)
    budget: int = 0
    labels: int = 0
    cap_at_pool: bool = False
    test: str = "folds"
    error_denominator: str = "tested"
    batch_size: int = 1
    evaluate_every: int = 1
    max_rows: int = 0

    @property
    def n_folds(self) -> int:
        """Folds per repetition: ``folds``, or 1 when the test set is not a fold."""
        return self.folds if self.test == "folds" else 1

    def queries(self, n_train: int, n_classes: int) -> int:
        """Label queries of a task whose training part has ``n_train`` rows.

        Raises
        ------
        ValueError
            When the training part cannot hold the initial set, or the queries exceed the pool
            and ``cap_at_pool`` is false (the message names the numbers).
        """
        n_initial = self.initial.n_rows(n_train, n_classes)
        pool = n_train - n_initial
        if pool < 0:
            raise ValueError(f"protocol.initial needs {n_initial} rows but a training part "
                             f"has only {n_train}")
        if self.labels:
            if self.labels < n_initial:
                raise ValueError(f"protocol.labels = {self.labels} is smaller than the "
                                 f"initial set of {n_initial} rows")
            wanted, field_ = self.labels - n_initial, f"protocol.labels = {self.labels}"
        else:
            wanted, field_ = self.budget, f"protocol.budget = {self.budget}"
        if wanted > pool and not self.cap_at_pool:
            raise ValueError(f"{field_} exceeds the pool: a fold has {n_train} training rows, "
                             f"{n_initial} initially labeled, so at most {pool} can be "
                             "queried (or set cap_at_pool: true)")
        return min(wanted, pool)

    def n_iterations(self, queries: int, batch_size: int = 0) -> int:
        """Number of query rounds for ``queries`` label queries (in batches of
        ``batch_size``, default the protocol's)."""
        return -(-queries // (batch_size or self.batch_size))


@dataclass(frozen=True)
class Config:
    name: str
    datasets: tuple[DatasetSpec, ...]
    methods: tuple[tuple[Component, Component], ...]
    protocol: Protocol
    reference: str | None = None
    scales: dict[str, dict[str, Any]] = field(default_factory=dict)
    scale: str = "full"
    source: str = ""

    @property
    def models(self) -> tuple[Component, ...]:
        return tuple(dict.fromkeys(m for m, _ in self.methods))

    @property
    def strategies(self) -> tuple[Component, ...]:
        return tuple(dict.fromkeys(s for _, s in self.methods))

    def protocol_for(self, dataset: DatasetSpec) -> Protocol:
        """The protocol of one data set: the config's, with the data set's own fields."""
        if not dataset.protocol:
            return self.protocol
        return _parse_protocol({**_protocol_dict(self.protocol), **dataset.protocol},
                               f"dataset '{dataset.label}'.protocol")

    def with_scale(self, scale: str | None) -> Config:
        """Apply the ``scales[scale]`` overrides (``full`` or None: unchanged): protocol fields,
        ``model_params`` (by model label) and ``datasets`` (the labels to keep)."""
        if scale is None or scale == self.scale:
            return self
        if scale not in SCALES and scale not in self.scales:
            raise UserError(f"unknown scale '{scale}'{did_you_mean(scale, SCALES)}; valid scales: "
                            + ", ".join(sorted(set(SCALES) | set(self.scales))))
        overrides = dict(self.scales.get(scale, {}))
        model_params = overrides.pop("model_params", {}) or {}
        keep = overrides.pop("datasets", None)
        proto = _parse_protocol({**_protocol_dict(self.protocol), **overrides},
                                f"scales.{scale}")
        methods = _override_model_params(self.methods, model_params, f"scales.{scale}")
        datasets = _keep_datasets(self.datasets, keep, f"scales.{scale}.datasets")
        out = replace(self, protocol=proto, methods=methods, datasets=datasets, scale=scale)
        for d in out.datasets:   # a data set's own fields must still fit the scaled protocol
            out.protocol_for(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("source")
        return d

    def digest(self) -> str:
        """Stable hash of everything that determines the results.

        The reference file (published numbers) does not, and its absolute path would make the
        digest depend on where the repository is checked out, so it is left out.
        """
        return _digest_of(self._digest_dict())

    def _digest_dict(self) -> dict[str, Any]:
        d = self.to_dict()
        d.pop("reference")
        _drop_later_defaults(d)
        return d

    def extends(self, old: dict[str, Any], old_digest: str) -> bool:
        """Whether this config is the config ``old`` with data sets or methods added.

        ``old`` is a run's ``run.json`` ``config`` and ``old_digest`` its ``config_digest``.
        True when :meth:`shared_grid` finds every data set and method of ``old`` here
        unchanged.  A task's rows depend only on its data set, its method, the protocol and
        the seeds derived from their labels, so the results of ``old`` are then results of
        this config: a run may add the new tasks to them
        (:func:`alprbf.engine.runner.run_experiment`).
        """
        shared = self.shared_grid(old, old_digest)
        return shared is not None and shared.covers_old

    def shared_grid(self, old: dict[str, Any], old_digest: str) -> SharedGrid | None:
        """The data sets and methods that this config and ``old`` define the same way.

        ``old`` is a run's ``run.json`` ``config`` and ``old_digest`` its ``config_digest``.
        None when ``old`` does not hash to ``old_digest`` (its record is not what it says) or
        differs in a field other than the data sets, the methods and the other scales'
        overrides (``scales``; the config is already scaled): then no task of ``old`` is a
        task of this config.  Otherwise the labels of the data sets and methods both define
        alike (same label, model, strategy and parameters): a task of both is the same task
        (:func:`alprbf.engine.runner.run_experiment` keeps its file with ``rerun_changed``).
        """
        old = json.loads(json.dumps(old, default=str))   # a deep copy, JSON types only
        try:
            old.pop("reference", None)
            _drop_later_defaults(old)
        except (AttributeError, KeyError, TypeError, IndexError):   # not a config's layout
            return None
        if _digest_of(old) != old_digest:
            return None
        new = json.loads(json.dumps(self._digest_dict(), default=str))
        grid = ("datasets", "methods", "scales")
        if any(old.get(k) != new.get(k) for k in new.keys() | old.keys() if k not in grid):
            return None
        old_datasets, old_methods = old.get("datasets", []), old.get("methods", [])
        datasets = [d for d in new["datasets"] if d in old_datasets]
        methods = [m for m in new["methods"] if m in old_methods]
        return SharedGrid(
            datasets=frozenset(d["label"] for d in datasets),
            methods=frozenset((m["label"], s["label"]) for m, s in methods),
            covers_old=(all(d in new["datasets"] for d in old_datasets)
                        and all(m in new["methods"] for m in old_methods)))


@dataclass(frozen=True)
class SharedGrid:
    """The data sets and methods two configs define the same way (:meth:`Config.shared_grid`).

    Attributes
    ----------
    datasets : frozenset of str
        Labels of the data sets defined alike.
    methods : frozenset of (str, str)
        ``(model label, strategy label)`` of the methods defined alike.
    covers_old : bool
        Every data set and method of the earlier config is among them (the later config
        extends it).
    """

    datasets: frozenset[str]
    methods: frozenset[tuple[str, str]]
    covers_old: bool

    def holds(self, dataset: str, model: str, strategy: str) -> bool:
        """Whether the task of this data set and method (labels) is defined alike."""
        return dataset in self.datasets and (model, strategy) in self.methods


def _digest_of(d: dict[str, Any]) -> str:
    blob = json.dumps(d, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: Fields added after results were recorded, left out of the digest while they hold their
#: default, so that a config that does not use them keeps its digest (and its records stay
#: valid): (path of the mapping, field, default).
_LATER_FIELDS = (
    ("protocol", "labels", 0), ("protocol", "cap_at_pool", False),
    ("protocol", "allow_small_classes", False),
    ("protocol", "test", "folds"), ("protocol", "error_denominator", "tested"),
    ("protocol.initial", "size_per_class", 0), ("protocol.initial", "density", {}),
    ("datasets[]", "one_vs_rest", None), ("datasets[]", "rows", 0), ("datasets[]", "protocol", {}),
    ("strategies[]", "batch_size", 0), ("datasets[].preprocessing", "pca_whiten", False),
    ("strategies[]", "select", {}), ("models[]", "seed_key", ""),
    ("models[]", "seed_scope", "method"),
)


def _drop_later_defaults(d: dict[str, Any]) -> None:
    for path, key, default in _LATER_FIELDS:
        if path == "datasets[]":
            targets = d["datasets"]
        elif path == "datasets[].preprocessing":
            targets = [x["preprocessing"] for x in d["datasets"]]
        elif path == "strategies[]":
            targets = [pair[1] for pair in d["methods"]]
        elif path == "models[]":
            targets = [pair[0] for pair in d["methods"]]
        else:
            target = d
            for part in path.split("."):
                target = target[part]
            targets = [target]
        for t in targets:
            if key in t and t[key] == default:
                del t[key]


def _keep_datasets(datasets: tuple[DatasetSpec, ...], keep: Any,
                   where: str) -> tuple[DatasetSpec, ...]:
    if keep is None:
        return datasets
    labels = [d.label for d in datasets]
    if not isinstance(keep, list) or not keep or not all(isinstance(x, str) for x in keep):
        raise _fail(where, "expected a non-empty list of dataset labels")
    for x in keep:
        if x not in labels:
            raise _fail(where, f"no dataset labelled '{x}'{did_you_mean(x, labels)}; labels: "
                        + ", ".join(labels))
    return tuple(d for d in datasets if d.label in keep)


# --------------------------------------------------------------------------- parsing helpers


def _fail(where: str, msg: str) -> UserError:
    return UserError(f"config field '{where}': {msg}")


def _check_keys(d: dict, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(d, dict):
        raise _fail(where, f"expected a mapping, got {type(d).__name__}")
    for k in d:
        if k not in allowed:
            path = f"{where}.{k}" if where else str(k)
            raise UserError(f"unknown config field '{path}'{did_you_mean(str(k), allowed)}; "
                            f"valid fields: {', '.join(allowed)}")


def _int(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, f"expected an integer, got {value!r}")
    if value < minimum:
        raise _fail(where, f"must be >= {minimum}, got {value}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, f"expected true or false, got {value!r}")
    return value


def _choice(value: Any, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise _fail(where, f"'{value}' is not valid{did_you_mean(str(value), choices)}; "
                    f"valid choices: {', '.join(choices)}")
    return value


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, list) else [value]


def _component(raw: Any, kind: str, registry: Registry, where: str,
               skip: tuple[str, ...]) -> tuple[str, dict, str, dict]:
    extra_keys = {"dataset": ("preprocessing", "one_vs_rest", "rows", "protocol"),
                  "strategy": ("batch_size", "select"),
                  "model": ("seed_key", "seed_scope")}.get(kind, ())
    if isinstance(raw, str):
        raw = {"name": raw}
    _check_keys(raw, ("name", "params", "label", *extra_keys), where)
    name = raw.get("name")
    if not isinstance(name, str):
        raise _fail(f"{where}.name", f"expected a {kind} name; valid {kind}s: "
                    + ", ".join(registry))
    factory = registry[name]
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise _fail(f"{where}.params", f"expected a mapping, got {type(params).__name__}")
    check_params(kind, name, factory, params, skip=skip)
    _try_build(kind, name, factory, params)
    label = raw.get("label") or ""
    if not isinstance(label, str):
        raise _fail(f"{where}.label", "expected a string")
    return name, dict(params), label, {k: raw[k] for k in extra_keys if k in raw}


def _override_model_params(methods, overrides: dict, where: str):
    """Merge ``overrides[label]`` into the params of the model with that label."""
    if not isinstance(overrides, dict):
        raise _fail(f"{where}.model_params", "expected a mapping from model label to params")
    labels = {m.label for m, _ in methods}
    for label, params in overrides.items():
        if label not in labels:
            raise _fail(f"{where}.model_params", f"no model labelled '{label}'"
                        f"{did_you_mean(label, labels)}; labels: {', '.join(sorted(labels))}")
        if not isinstance(params, dict):
            raise _fail(f"{where}.model_params.{label}", "expected a mapping of parameters")
    out = []
    for m, s in methods:
        if m.label in overrides:
            params = {**m.params, **overrides[m.label]}
            factory = MODELS[m.name]
            check_params("model", m.name, factory, params, skip=MODEL_SKIP)
            _try_build("model", m.name, factory, params)
            m = replace(m, params=params)
        out.append((m, s))
    return tuple(out)


def _parse_select(raw: Any, name: str, params: dict, where: str) -> dict[str, Any]:
    """``select: {param, values, folds}`` of a strategy entry (empty without one)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(where, "expected a mapping {param, values, folds}")
    _check_keys(raw, ("param", "values", "folds"), where)
    factory = STRATEGIES[name]
    valid = [p for p in inspect.signature(factory).parameters if p != "self"]
    param = raw.get("param")
    if param not in valid:
        raise _fail(f"{where}.param", f"strategy '{name}' has no parameter {param!r}; valid: "
                    + (", ".join(valid) or "none"))
    values = raw.get("values")
    if not isinstance(values, list) or not values:
        raise _fail(f"{where}.values", "expected a non-empty list of values")
    for v in values:
        _try_build("strategy", name, factory, {**params, param: v})
    folds = _int(raw.get("folds", 5), f"{where}.folds", 2)
    return {"param": param, "values": list(values), "folds": folds}


def _try_build(kind: str, name: str, factory, params: dict) -> None:
    """Construct models and strategies once so that bad parameter values fail at parse time."""
    if kind == "dataset":
        return  # loaders may touch files; they are checked by `validate` / `run`
    kwargs = {"n_classes": 2, "random_state": 0} if kind == "model" else {}
    try:
        factory(**kwargs, **params)
    except (TypeError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{kind} '{name}': {msg}") from None


def _refuse_repeats(items: list, what: str) -> None:
    """Refuse an entry given twice (a repeat would overwrite the other's results)."""
    seen = set()
    for x in items:
        if x in seen:
            name = f"'{x.label or x.name}'" if isinstance(x, Component) else str(x)
            raise UserError(f"config: {what} {name} appears twice; remove the repeat or give "
                            "the entries distinct labels")
        seen.add(x)


def _default_label(c: Component) -> str:
    """The name, with a data set's database size and one-vs-rest class (``mnist-n1250-3``)."""
    label = c.name
    if isinstance(c, StrategySpec) and c.batch_size:
        label += f"-b{c.batch_size}"
    if isinstance(c, StrategySpec) and c.select:
        label += f"-cv-{c.select['param']}"
    if isinstance(c, DatasetSpec):
        label += f"-n{c.rows}" if c.rows else ""
        label += f"-{c.one_vs_rest}" if c.one_vs_rest is not None else ""
    return label


def _unique_labels(items: list, kind: str) -> list:
    """Default labels: the name, or name-<params hash> when one name occurs with other params."""
    distinct = list(dict.fromkeys(items))
    names = [_default_label(c) for c in distinct]
    out = []
    for c in items:
        label = c.label
        if not label:
            label = _default_label(c)
            if names.count(label) > 1:
                h = hashlib.sha256(json.dumps(c.params, sort_keys=True).encode()).hexdigest()
                label = f"{label}-{h[:6]}"
        out.append(replace(c, label=label))
    labels = [c.label for c in dict.fromkeys(out)]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise UserError(f"two {kind} entries share the label {sorted(dup)[0]!r}; give them "
                        "distinct 'label' fields")
    return out


def _parse_preprocessing(raw: Any, where: str) -> Preprocessing:
    if raw is None:
        return Preprocessing()
    allowed = tuple(f.name for f in fields(Preprocessing))
    _check_keys(raw, allowed, where)
    kw = dict(raw)
    if "standardize" in kw:
        _choice(kw["standardize"], STANDARDIZE, f"{where}.standardize")
    try:
        return Preprocessing(**kw)
    except (TypeError, ValueError) as exc:
        raise _fail(where, str(exc)) from None


def _protocol_dict(p: Protocol) -> dict[str, Any]:
    d = asdict(p)
    return d


def _parse_protocol(raw: Any, where: str = "protocol") -> Protocol:
    raw = raw or {}
    allowed = tuple(f.name for f in fields(Protocol))
    _check_keys(raw, allowed, where)
    kw: dict[str, Any] = {}
    for key, minimum in (("folds", 2), ("repetitions", 1), ("seed", 0), ("budget", 0),
                         ("labels", 0), ("batch_size", 1), ("evaluate_every", 1),
                         ("max_rows", 0)):
        if key in raw:
            kw[key] = _int(raw[key], f"{where}.{key}", minimum)
    for key in ("stratified", "cap_at_pool", "allow_small_classes"):
        if key in raw:
            kw[key] = _bool(raw[key], f"{where}.{key}")
    if "test" in raw:
        kw["test"] = _choice(raw["test"], TEST_SETS, f"{where}.test")
    if "error_denominator" in raw:
        kw["error_denominator"] = _choice(raw["error_denominator"], ERROR_DENOMINATORS,
                                          f"{where}.error_denominator")
    if "initial" in raw:
        ini = raw["initial"]
        if isinstance(ini, Initial):
            ini = asdict(ini)
        _check_keys(ini, ("method", "size", "size_per_class", "density"), f"{where}.initial")
        method = _choice(ini.get("method", "random"), INITIAL_METHODS, f"{where}.initial.method")
        size = _int(ini.get("size", 10), f"{where}.initial.size", 0 if method == "all" else 1)
        per_class = _int(ini.get("size_per_class", 0), f"{where}.initial.size_per_class", 0)
        if per_class and method not in ("random", "density", "density_m0"):
            raise _fail(f"{where}.initial.size_per_class", "applies to the random and density "
                        f"methods only, not '{method}'")
        density = _m0_options(ini.get("density") or {}, method, f"{where}.initial.density")
        kw["initial"] = Initial(method=method, size=size, size_per_class=per_class,
                                density=density)
    proto = Protocol(**kw)
    if proto.initial.method == "all" and (proto.budget > 0 or proto.labels > 0):
        raise _fail(f"{where}.budget", "must be 0 when initial.method is 'all' (nothing is left "
                    "to query)")
    if proto.budget > 0 and proto.labels > 0:
        raise _fail(f"{where}.labels", "give either budget (queries after the initial set) or "
                    "labels (labeled rows to reach, initial set included), not both")
    if proto.test == "unlabeled" and proto.initial.method == "all":
        raise _fail(f"{where}.test", "'unlabeled' needs rows left unlabeled; initial.method "
                    "'all' labels them all")
    return proto


def _m0_options(raw: Any, method: str, where: str) -> dict[str, Any]:
    """``initial.density``: M0's options over :data:`REITMAIER2016_M0`, checked."""
    if not raw:
        return {}
    if method != "density_m0":
        raise _fail(where, f"applies to the density_m0 method only, not '{method}'")
    if not isinstance(raw, dict):
        raise _fail(where, "must be a mapping of density options")
    try:
        DensityOptions(**{**REITMAIER2016_M0, **raw})
    except (TypeError, ValueError) as exc:
        raise _fail(where, str(exc)) from None
    return {k: list(v) if isinstance(v, tuple) else v for k, v in raw.items()}


TOP_KEYS = ("name", "dataset", "model", "strategy", "methods", "protocol", "reference",
            "scales")


def _parse_list(raw: Any, kind: str, registry: Registry, where: str,
                skip: tuple[str, ...]) -> list[Component]:
    out = []
    for i, item in enumerate(_as_list(raw)):
        w = where if not isinstance(raw, list) else f"{where}[{i}]"
        n, p, lab, extra = _component(item, kind, registry, w, skip=skip)
        if kind == "strategy":
            batch = _int(extra.get("batch_size", 0), f"{w}.batch_size", 0)
            select = _parse_select(extra.get("select"), n, p, f"{w}.select")
            out.append(StrategySpec(name=n, params=p, label=lab, batch_size=batch,
                                    select=select))
        elif kind == "model":
            key = extra.get("seed_key", "")
            if not isinstance(key, str) or ("seed_key" in extra and not key):
                raise _fail(f"{w}.seed_key", f"expected a non-empty string, got {key!r}")
            scope = extra.get("seed_scope", "method")
            if scope not in SEED_SCOPES:
                raise _fail(f"{w}.seed_scope", f"unknown value {scope!r}; valid: "
                            + ", ".join(SEED_SCOPES))
            out.append(ModelSpec(name=n, params=p, label=lab, seed_key=key, seed_scope=scope))
        else:
            out.append(Component(name=n, params=p, label=lab))
    return out


MODEL_SKIP = ("n_classes", "random_state", "classes")  # set by the loop, not the config


def _check_pair(model: Component, strategy: Component, where: str) -> None:
    """Refuse a strategy whose model protocol the model lacks (e.g. a committee)."""
    needs = STRATEGIES[strategy.name].required_model_methods
    missing = [m for m in needs if not hasattr(MODELS[model.name], m)]
    if missing:
        able = [n for n in MODELS if all(hasattr(MODELS[n], m) for m in needs)]
        raise _fail(where, f"strategy '{strategy.name}' needs a model with "
                    f"{', '.join(missing)}; model '{model.name}' has none; valid models: "
                    + ", ".join(able))


def _parse_methods(data: dict) -> list[tuple[Component, Component]]:
    """``model`` x ``strategy`` grid, or the explicit ``methods`` list of pairs."""
    pairs = _parse_pairs(data)
    for i, (m, s) in enumerate(pairs):
        _check_pair(m, s, f"methods[{i}]" if "methods" in data else "strategy")
    return pairs


def _parse_pairs(data: dict) -> list[tuple[Component, Component]]:
    if "methods" in data:
        if "model" in data or "strategy" in data:
            raise UserError("config: give either 'methods' (a list of model/strategy pairs) or "
                            "'model' and 'strategy' (a grid), not both")
        raw = data["methods"]
        if not isinstance(raw, list) or not raw:
            raise _fail("methods", "expected a non-empty list of {model: ..., strategy: ...}")
        pairs = []
        for i, item in enumerate(raw):
            _check_keys(item, ("model", "strategy"), f"methods[{i}]")
            if "model" not in item:
                raise _fail(f"methods[{i}]", "needs a 'model'")
            m = _parse_list(item["model"], "model", MODELS, f"methods[{i}].model", MODEL_SKIP)
            s = _parse_list(item.get("strategy", "random"), "strategy", STRATEGIES,
                            f"methods[{i}].strategy", ())
            if len(m) != 1 or len(s) != 1:
                raise _fail(f"methods[{i}]", "takes one model and one strategy (not lists)")
            pairs.append((m[0], s[0]))
        return pairs
    if "model" not in data:
        raise UserError("config field 'model' is missing (required: name, dataset, and model "
                        "or methods)")
    models = _parse_list(data["model"], "model", MODELS, "model", MODEL_SKIP)
    strategies = _parse_list(data.get("strategy", "random"), "strategy", STRATEGIES,
                             "strategy", ())
    return [(m, s) for m in models for s in strategies]


def parse_config(data: Any, source: str = "<dict>", base_dir: Path | None = None) -> Config:
    """Validate a config mapping (as read from YAML) and build a :class:`Config`."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: a config must be a YAML mapping with fields "
                        + ", ".join(TOP_KEYS))
    _check_keys(data, TOP_KEYS, "")
    for req in ("name", "dataset"):
        if req not in data:
            raise UserError(f"config field '{req}' is missing (required: name, dataset, and "
                            "model or methods)")
    name = data["name"]
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\:"):
        raise _fail("name", "expected a non-empty string without '/', '\\' or ':'")

    datasets = []
    for i, raw in enumerate(_as_list(data["dataset"])):
        where = "dataset" if not isinstance(data["dataset"], list) else f"dataset[{i}]"
        n, p, lab, extra = _component(raw, "dataset", DATASETS, where, skip=())
        expand = getattr(DATASETS[n], "expand", None)   # a loader's shorthand for several
        entries = expand(p, lab) if expand is not None else [(p, lab)]
        pre = _parse_preprocessing(extra.get("preprocessing"), f"{where}.preprocessing")
        ovr = extra.get("one_vs_rest")
        if ovr is not None and (isinstance(ovr, bool) or not isinstance(ovr, (str, int))):
            raise _fail(f"{where}.one_vs_rest", f"expected a class label, got {ovr!r}")
        rows = _int(extra.get("rows", 0), f"{where}.rows", 0)
        own = extra.get("protocol") or {}
        _check_keys(own, tuple(f.name for f in fields(Protocol) if f.name != "seed"),
                    f"{where}.protocol")
        datasets += [DatasetSpec(name=n, params=p, label=lab, preprocessing=pre,
                                 one_vs_rest=None if ovr is None else str(ovr), rows=rows,
                                 protocol=dict(own)) for p, lab in entries]
    _refuse_repeats(datasets, "the dataset entry")
    pairs = _parse_methods(data)
    _refuse_repeats([_PairName(m, s) for m, s in pairs], "the method")
    models = dict(zip(pairs, _unique_labels([m for m, _ in pairs], "model"), strict=True))
    strats = dict(zip(pairs, _unique_labels([s for _, s in pairs], "strategy"), strict=True))

    protocol = _parse_protocol(data.get("protocol"))
    reference = data.get("reference")
    if reference is not None:
        if not isinstance(reference, str):
            raise _fail("reference", "expected a file path")
        ref_path = (base_dir or Path.cwd()) / reference
        if not ref_path.is_file():
            raise _fail("reference", f"file not found: {ref_path}")
        reference = str(ref_path.resolve())
    scales = data.get("scales") or {}
    if not isinstance(scales, dict):
        raise _fail("scales", "expected a mapping from scale name to protocol overrides")
    for s, over in scales.items():
        if over is not None and not isinstance(over, dict):
            raise _fail(f"scales.{s}", "expected a mapping of protocol fields (and model_params)")
    cfg = Config(
        name=name,
        datasets=tuple(_unique_labels(datasets, "dataset")),
        methods=tuple(dict.fromkeys((models[p], strats[p]) for p in pairs)),
        protocol=protocol,
        reference=reference,
        scales={str(k): dict(v or {}) for k, v in scales.items()},
        source=source,
    )
    for d in cfg.datasets:
        cfg.protocol_for(d)
    for s in cfg.scales:  # check every scale now, not when it is first used
        cfg.with_scale(s)
    return cfg


@dataclass(frozen=True)
class _PairName:
    """A (model, strategy) entry as the error message names it."""

    model: Component
    strategy: Component

    def __str__(self) -> str:
        m = self.model.label or self.model.name
        st = self.strategy.label or self.strategy.name
        return f"'{m} / {st}'"


class _StrictLoader(yaml.SafeLoader):
    """YAML loader that refuses a mapping with a repeated key (PyYAML keeps the last)."""


def _mapping_without_repeats(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # '<<: *anchor' merges a mapping; its keys may be overridden here
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            line = key_node.start_mark.line + 1
            raise UserError(f"{loader.name}: line {line}: the key '{key}' is given twice in one "
                            "mapping; keep one")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_without_repeats)


def load_config(path: str | Path, scale: str | None = None) -> Config:
    """Read, validate and (optionally) scale a YAML config file."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"config file not found: {path}")
    try:
        with open(path, encoding="utf-8") as fh:   # the loader names the file in messages
            data = yaml.load(fh, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise UserError(f"{path}:{where} is not valid YAML "
                        f"({getattr(exc, 'problem', None) or exc})") from None
    cfg = parse_config(data, source=str(path), base_dir=path.parent)
    return cfg.with_scale(scale)
