"""Experiment configuration: YAML -> frozen, validated objects.

A config names one or more datasets, models and strategies (lists expand to a grid, or
``methods`` lists explicit model/strategy pairs) and a cross-validation / active-learning
protocol.  Every problem is reported as a one-line :class:`~alprbf.errors.UserError` naming the
field and the valid choices.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from .datasets import DATASETS, Preprocessing
from .datasets.preprocessing import STANDARDIZE
from .errors import UserError, did_you_mean
from .models import MODELS
from .registry import Registry, check_params
from .strategies import STRATEGIES

INITIAL_METHODS = ("random", "per_class", "density", "all")
SCALES = ("smoke", "full")


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


@dataclass(frozen=True, eq=False)
class DatasetSpec(Component):
    preprocessing: Preprocessing = field(default_factory=Preprocessing)


@dataclass(frozen=True)
class Initial:
    """Initial labeled set: ``method`` random | per_class | density | all, and its ``size``.

    ``size`` is the total number of rows for ``random`` and ``density`` and the number per class
    for ``per_class``; ``all`` labels the whole training part (plain supervised CV, budget 0).
    """

    method: str = "random"
    size: int = 10


@dataclass(frozen=True)
class Protocol:
    """Cross-validation and active-learning protocol.

    Parameters
    ----------
    folds : int
        Number of cross-validation folds (>= 2); each fold is the test set once.
    stratified : bool
        Stratify the folds by class.
    repetitions : int
        Independent repetitions of the whole cross-validation with different fold splits.
    seed : int
        Root of every random draw (through ``numpy.random.SeedSequence``).
    initial : Initial
        How the initial labeled set is drawn from the training part of a fold.
    budget : int
        Number of label queries after the initial set (0 = no active learning).
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
    repetitions: int = 1
    seed: int = 0
    initial: Initial = field(default_factory=Initial)
    budget: int = 0
    batch_size: int = 1
    evaluate_every: int = 1
    max_rows: int = 0

    @property
    def n_iterations(self) -> int:
        """Number of query rounds."""
        return -(-self.budget // self.batch_size)


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

    def with_scale(self, scale: str | None) -> Config:
        """Apply the ``scales[scale]`` protocol overrides (``full`` or None: unchanged)."""
        if scale is None or scale == self.scale:
            return self
        if scale not in SCALES and scale not in self.scales:
            raise UserError(f"unknown scale '{scale}'{did_you_mean(scale, SCALES)}; valid scales: "
                            + ", ".join(sorted(set(SCALES) | set(self.scales))))
        overrides = dict(self.scales.get(scale, {}))
        model_params = overrides.pop("model_params", {}) or {}
        proto = _parse_protocol({**_protocol_dict(self.protocol), **overrides},
                                f"scales.{scale}")
        methods = _override_model_params(self.methods, model_params, f"scales.{scale}")
        return replace(self, protocol=proto, methods=methods, scale=scale)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("source")
        return d

    def digest(self) -> str:
        """Stable hash of everything that determines the results.

        The reference file (published numbers) does not, and its absolute path would make the
        digest depend on where the repository is checked out, so it is left out.
        """
        d = self.to_dict()
        d.pop("reference")
        blob = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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
    extra_keys = ("preprocessing",) if kind == "dataset" else ()
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


def _unique_labels(items: list, kind: str) -> list:
    """Default labels: the name, or name-<params hash> when one name occurs with other params."""
    distinct = list(dict.fromkeys(items))
    names = [c.name for c in distinct]
    out = []
    for c in items:
        label = c.label
        if not label:
            label = c.name
            if names.count(c.name) > 1:
                h = hashlib.sha256(json.dumps(c.params, sort_keys=True).encode()).hexdigest()
                label = f"{c.name}-{h[:6]}"
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
                         ("batch_size", 1), ("evaluate_every", 1), ("max_rows", 0)):
        if key in raw:
            kw[key] = _int(raw[key], f"{where}.{key}", minimum)
    if "stratified" in raw:
        kw["stratified"] = _bool(raw["stratified"], f"{where}.stratified")
    if "initial" in raw:
        ini = raw["initial"]
        if isinstance(ini, Initial):
            ini = asdict(ini)
        _check_keys(ini, ("method", "size"), f"{where}.initial")
        method = _choice(ini.get("method", "random"), INITIAL_METHODS, f"{where}.initial.method")
        size = _int(ini.get("size", 10), f"{where}.initial.size", 0 if method == "all" else 1)
        kw["initial"] = Initial(method=method, size=size)
    proto = Protocol(**kw)
    if proto.initial.method == "all" and proto.budget > 0:
        raise _fail(f"{where}.budget", "must be 0 when initial.method is 'all' (nothing is left "
                    "to query)")
    return proto


TOP_KEYS = ("name", "dataset", "model", "strategy", "methods", "protocol", "reference",
            "scales")


def _parse_list(raw: Any, kind: str, registry: Registry, where: str,
                skip: tuple[str, ...]) -> list[Component]:
    out = []
    for i, item in enumerate(_as_list(raw)):
        w = where if not isinstance(raw, list) else f"{where}[{i}]"
        n, p, lab, _ = _component(item, kind, registry, w, skip=skip)
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
        pre = _parse_preprocessing(extra.get("preprocessing"), f"{where}.preprocessing")
        datasets.append(DatasetSpec(name=n, params=p, label=lab, preprocessing=pre))
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
