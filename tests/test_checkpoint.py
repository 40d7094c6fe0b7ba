"""Mid-task checkpoints: a task stopped mid-way and resumed gives the uninterrupted rows."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml

from alprbf import __version__
from alprbf.engine import runner
from alprbf.engine.checkpoint import CHECKPOINT_FORMAT, Checkpoint, LoopState
from alprbf.engine.config import load_config
from alprbf.engine.execution import checkpoint_key
from alprbf.engine.protocol import run_task
from alprbf.engine.runner import code_version, load_datasets, plan, run_experiment
from alprbf.store.results import TIMING_COLUMNS, read_results

from .conftest import write_config

BUDGET = 8
STOP_AFTER = 4


class Crash(Exception):
    pass


def _config(tmp_path):
    # stateful learners (warm-started networks) and a strategy that draws from its generator
    methods = [
        {"model": {"name": "active_prbf", "params": {"covariance_type": "diag"}},
         "strategy": "posterior_ratio"},
        {"model": {"name": "incremental_ssl_prbf", "params": {"covariance_type": "diag"}},
         "strategy": {"name": "qbc_prbf", "params": {"n_members": 2}}},
        {"model": "gaussian_nb", "strategy": "random"},
        # its pickled mixture leaves out the memberships and recomputes them on loading
        {"model": "preclustering", "strategy": "preclustering"},
    ]
    path = write_config(tmp_path / "ckpt.yaml", model=None, strategy=None, methods=methods,
                        protocol={"folds": 2, "seed": 3, "budget": BUDGET, "batch_size": 1,
                                  "initial": {"method": "random", "size": 10}})
    return load_config(path)


def _comparable(df: pd.DataFrame) -> pd.DataFrame:
    df = df.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)
    for col in ("queried", "queried_labels"):
        df[col] = df[col].map(lambda v: tuple(int(x) for x in v))
    return df


def _stop_at(n_calls):
    calls = []

    def on_query(n):
        calls.append(n)
        if len(calls) == n_calls:
            raise Crash

    return on_query


@pytest.fixture
def setup(tmp_path):
    cfg = _config(tmp_path)
    datasets = load_datasets(cfg)
    tasks = [t for t in plan(cfg) if t.fold == 1]
    return cfg, datasets, tasks


@pytest.mark.slow
def test_resumed_task_gives_the_uninterrupted_rows(setup, tmp_path):
    cfg, datasets, tasks = setup
    for task in tasks:
        ds = datasets[task.dataset.label]
        ref = run_task(task, ds, cfg.protocol)
        ck = Checkpoint(tmp_path / f"{task.task_id}.pkl", "k", every_seconds=0.0)
        with pytest.raises(Crash):
            run_task(task, ds, cfg.protocol, on_query=_stop_at(STOP_AFTER), checkpoint=ck)
        assert ck.path.exists()
        calls = []
        res = run_task(task, ds, cfg.protocol, on_query=calls.append, checkpoint=ck)
        # the resumed run reports the saved queries first and then runs only the rest
        assert calls == [STOP_AFTER] + [1] * (BUDGET - STOP_AFTER), task.task_id
        pd.testing.assert_frame_equal(_comparable(res), _comparable(ref))


def test_task_threads_do_not_change_the_rows(setup):
    cfg, datasets, tasks = setup
    task = next(t for t in tasks if t.strategy.name == "qbc_prbf")
    ds = datasets[task.dataset.label]
    one = run_task(task, ds, cfg.protocol, threads=1)
    two = run_task(task, ds, cfg.protocol, threads=2)
    pd.testing.assert_frame_equal(_comparable(one), _comparable(two))


def test_checkpoint_of_another_run_or_damaged_is_ignored(setup, tmp_path):
    cfg, datasets, tasks = setup
    task = tasks[0]
    ds = datasets[task.dataset.label]
    ref = run_task(task, ds, cfg.protocol)
    path = tmp_path / "c.pkl"
    with pytest.raises(Crash):
        run_task(task, ds, cfg.protocol, on_query=_stop_at(STOP_AFTER),
                 checkpoint=Checkpoint(path, "old config", every_seconds=0.0))
    other = Checkpoint(path, "new config", every_seconds=0.0)
    assert other.load() is None
    calls = []
    res = run_task(task, ds, cfg.protocol, on_query=calls.append, checkpoint=other)
    assert calls == [1] * BUDGET                      # started from the first query
    pd.testing.assert_frame_equal(_comparable(res), _comparable(ref))

    # a checkpoint of an older pickle layout (same run) is ignored too
    other.save(LoopState(task.task_id, 1, None, None, np.random.default_rng(0), np.zeros(3), [],
                         np.zeros(0, np.int64), 0.0, BUDGET))
    payload = pickle.loads(path.read_bytes())
    assert isinstance(other.load(), LoopState)
    path.write_bytes(pickle.dumps({**payload, "format": CHECKPOINT_FORMAT - 1}))
    assert other.load() is None
    # format 2 kept the loop state as a dict beside "format" and "key": its task restarts
    old = {**vars(payload["state"]), "format": 2, "key": other.key}
    path.write_bytes(pickle.dumps(old))
    assert other.load() is None
    calls = []
    res = run_task(task, ds, cfg.protocol, on_query=calls.append, checkpoint=other)
    assert calls == [1] * BUDGET
    pd.testing.assert_frame_equal(_comparable(res), _comparable(ref))

    path.write_bytes(b"not a pickle")
    with pytest.warns(UserWarning, match="ignoring unreadable checkpoint"):
        res = run_task(task, ds, cfg.protocol, checkpoint=other)
    pd.testing.assert_frame_equal(_comparable(res), _comparable(ref))


def test_unwritable_checkpoint_warns_and_the_task_goes_on(setup, tmp_path):
    cfg, datasets, tasks = setup
    task = tasks[0]
    ds = datasets[task.dataset.label]
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    ck = Checkpoint(blocker / "c.pkl", "k", every_seconds=0.0)
    with pytest.warns(UserWarning, match="cannot write checkpoint") as record:
        res = run_task(task, ds, cfg.protocol, checkpoint=ck)
    assert sum("cannot write checkpoint" in str(w.message) for w in record) == 1  # warned once
    pd.testing.assert_frame_equal(_comparable(res), _comparable(run_task(task, ds, cfg.protocol)))


@pytest.mark.slow   # two whole runs of the experiment
def test_run_resumes_an_unfinished_task_from_its_checkpoint(setup, tmp_path):
    cfg, datasets, tasks = setup
    out, clean = tmp_path / "out", tmp_path / "clean"
    task = tasks[0]
    path = out / "checkpoints" / f"{task.task_id}.pkl"
    path.parent.mkdir(parents=True)
    ck = Checkpoint(path, checkpoint_key(task, cfg.protocol, code_version()), every_seconds=0.0)
    with pytest.raises(Crash):
        run_task(task, datasets[task.dataset.label], cfg.protocol,
                 on_query=_stop_at(STOP_AFTER), checkpoint=ck)
    # mark the saved rows: only a run that resumed from this file carries the mark
    payload = pickle.loads(path.read_bytes())
    payload["state"].rows[0]["model_size"] = 12345
    path.write_bytes(pickle.dumps(payload))

    run_experiment(cfg, out, progress=False, checkpoint_every=0.0)
    run_experiment(cfg, clean, progress=False, checkpoint_every=None)
    got, want = read_results(out), read_results(clean)
    mine = (got["task_id"] == task.task_id) & (got["iteration"] == 0)
    assert got.loc[mine, "model_size"].tolist() == [12345]
    got.loc[mine, "model_size"] = want.loc[(want["task_id"] == task.task_id)
                                           & (want["iteration"] == 0), "model_size"].to_numpy()
    key = ["task_id", "iteration"]
    pd.testing.assert_frame_equal(_comparable(got.sort_values(key)),
                                  _comparable(want.sort_values(key)))
    assert not (out / "checkpoints").exists(), "finished tasks leave no checkpoint directory"


def test_a_run_keeps_the_checkpoint_directory_while_something_is_in_it(setup, tmp_path):
    """A checkpoint the run did not finish (here: of a task outside the run) keeps the
    directory and its file; a run that leaves the directory empty removes it."""
    cfg, _, tasks = setup
    out = tmp_path / "out"
    other = out / "checkpoints" / "some_other_task.pkl"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"state of a task in flight")
    run_experiment(cfg, out, progress=False, checkpoint_every=0.0, only=[tasks[0].task_id])
    assert other.read_bytes() == b"state of a task in flight"
    other.unlink()
    run_experiment(cfg, out, progress=False, checkpoint_every=0.0, only=[tasks[1].task_id])
    assert not other.parent.exists()


@pytest.mark.parametrize("every", [None, 0.0])
def test_a_run_that_dies_leaves_a_checkpoint_directory_only_with_checkpoints_on(
        setup, tmp_path, monkeypatch, every):
    """The runner makes ``checkpoints/`` only when checkpoints are on; a run that dies
    (here: interrupted as its tasks start) leaves it then, and never with them off."""
    import alprbf.engine.runner as runner

    def dying_fan_out(*args, **kwargs):
        raise KeyboardInterrupt
        yield  # pragma: no cover - makes this a generator, as fan_out is

    cfg, _, tasks = setup
    out = tmp_path / "out"
    monkeypatch.setattr(runner, "fan_out", dying_fan_out)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, out, progress=False, checkpoint_every=every,
                       only=[tasks[0].task_id])
    assert (out / "tasks").is_dir()
    assert (out / "checkpoints").is_dir() == (every is not None)


def test_negative_checkpoint_interval_is_a_user_error(setup, tmp_path):
    from alprbf.errors import UserError
    cfg, _, _ = setup
    with pytest.raises(UserError, match="--checkpoint-every must be >= 0"):
        run_experiment(cfg, tmp_path / "o", progress=False, checkpoint_every=-1.0)


def test_every_registered_model_and_strategy_pickles():
    from alprbf.models import MODELS
    from alprbf.strategies import STRATEGIES
    for name in MODELS:
        model = MODELS[name](n_classes=3, random_state=0)
        again = pickle.loads(pickle.dumps(model))
        assert type(again) is MODELS[name], name
    for name in STRATEGIES:
        strategy = STRATEGIES[name]()
        assert type(pickle.loads(pickle.dumps(strategy))) is STRATEGIES[name], name


def test_a_checkpoint_outlives_an_extension_of_the_config_and_no_other_change(setup, tmp_path):
    """Adding a method to the config keeps a task's checkpoint (its key is the task's own);
    changing the task's protocol, method parameters or the code version does not."""
    cfg, datasets, tasks = setup
    task = tasks[0]
    raw = yaml.safe_load((tmp_path / "ckpt.yaml").read_text())
    raw["methods"].append({"model": "logistic_regression", "strategy": "random"})
    bigger = write_config(tmp_path / "bigger.yaml", model=None, strategy=None,
                          methods=raw["methods"], protocol=raw["protocol"])
    big = load_config(bigger)
    assert big.digest() != cfg.digest()
    same = next(t for t in plan(big) if t.task_id == task.task_id)
    key = checkpoint_key(task, cfg.protocol, code_version())
    assert checkpoint_key(same, big.protocol_for(same.dataset), code_version()) == key
    assert checkpoint_key(task, replace(cfg.protocol, budget=BUDGET + 1), __version__) != key
    assert checkpoint_key(task, cfg.protocol, __version__ + "x") != key
    other = replace(task, model=replace(task.model, params={**task.model.params, "x": 1}))
    assert checkpoint_key(other, cfg.protocol, __version__) != key
    # end to end: a run of the bigger config resumes the task from the smaller one's checkpoint
    out = tmp_path / "out"
    cheap = next(t for t in tasks if t.model.name == "gaussian_nb")
    run_experiment(cfg, out, progress=False, checkpoint_every=None, only=[cheap.task_id])
    path = out / "checkpoints" / f"{task.task_id}.pkl"
    path.parent.mkdir()                 # the finished run left none: a run in flight makes it
    ck = Checkpoint(path, key, every_seconds=0.0)
    with pytest.raises(Crash):
        run_task(task, datasets[task.dataset.label], cfg.protocol,
                 on_query=_stop_at(STOP_AFTER), checkpoint=ck)
    payload = pickle.loads(path.read_bytes())
    payload["state"].rows[0]["model_size"] = 12345     # only a resumed run carries the mark
    path.write_bytes(pickle.dumps(payload))
    run_experiment(big, out, progress=False, checkpoint_every=0.0, only=[task.task_id])
    got = read_results(out)
    assert got.loc[(got["task_id"] == task.task_id) & (got["iteration"] == 0),
                   "model_size"].tolist() == [12345]


def _old_module_paths(blob: bytes) -> bytes:
    """A checkpoint as the layout before ``alprbf.engine`` and ``alprbf.svm_kernels`` wrote it:
    the same state, its classes pickled under their old module paths."""
    payload = pickle.loads(blob)
    text = pickle.dumps(payload, protocol=2)        # protocol 2 names classes in plain text
    assert b"alprbf.engine.checkpoint\nLoopState\n" in text
    text = text.replace(b"alprbf.engine.checkpoint\n", b"alprbf.checkpoint\n")
    return text.replace(b"alprbf.svm_kernels.", b"alprbf.kernels.")


def test_a_checkpoint_of_other_code_is_not_resumed(setup, tmp_path, monkeypatch):
    """The key names the commit: a checkpoint written at another commit is ignored (its
    pickled model may lack parameters added since), and the task starts over."""
    cfg, datasets, tasks = setup
    task = tasks[0]
    monkeypatch.setattr(runner, "_git_commit", lambda: "aaa")
    version_a = code_version()
    monkeypatch.setattr(runner, "_git_commit", lambda: "bbb")
    assert code_version() != version_a and code_version().endswith("+bbb")
    ck = Checkpoint(tmp_path / "c.pkl", checkpoint_key(task, cfg.protocol, version_a),
                    every_seconds=0.0)
    with pytest.raises(Crash):
        run_task(task, datasets[task.dataset.label], cfg.protocol,
                 on_query=_stop_at(STOP_AFTER), checkpoint=ck)
    assert ck.load() is not None
    other = Checkpoint(ck.path, checkpoint_key(task, cfg.protocol, code_version()))
    assert other.load() is None
    monkeypatch.setattr(runner, "_git_commit", lambda: None)
    assert code_version() == __version__


@pytest.mark.slow
def test_a_checkpoint_of_the_old_module_layout_resumes(tmp_path):
    """Checkpoints pickle classes by module path; one written before the modules moved
    (``alprbf.checkpoint``, ``alprbf.kernels``) resumes to the uninterrupted rows."""
    path = write_config(tmp_path / "c.yaml", model=None, strategy=None,
                        methods=[{"model": "cmm_sha", "strategy": "random"}],
                        protocol={"folds": 2, "seed": 3, "budget": BUDGET, "batch_size": 1,
                                  "initial": {"method": "random", "size": 10}})
    cfg = load_config(path)
    task = plan(cfg)[1]
    ds = load_datasets(cfg)[task.dataset.label]
    ref = run_task(task, ds, cfg.protocol)
    ck = Checkpoint(tmp_path / "c.pkl", "k", every_seconds=0.0)
    with pytest.raises(Crash):
        run_task(task, ds, cfg.protocol, on_query=_stop_at(STOP_AFTER), checkpoint=ck)
    old = _old_module_paths(ck.path.read_bytes())
    assert b"alprbf.kernels.cmm\nCMMShared\n" in old and b"alprbf.svm_kernels" not in old
    ck.path.write_bytes(old)
    calls = []
    res = run_task(task, ds, cfg.protocol, on_query=calls.append, checkpoint=ck)
    assert calls == [STOP_AFTER] + [1] * (BUDGET - STOP_AFTER)     # resumed, not restarted
    pd.testing.assert_frame_equal(_comparable(res), _comparable(ref))
