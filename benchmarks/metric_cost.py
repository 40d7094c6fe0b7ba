"""Extra evaluation seconds of the metric columns, timed inside one run of one task.

    .venv/bin/python benchmarks/metric_cost.py TASK_ID [CONFIG]   (default configs/table_003.yaml)

Wraps the log-loss and the balanced-accuracy / macro-F1 computations of
:func:`alprbf.engine.protocol.run_task` with timers and prints their sums beside the task's
``eval_seconds`` (docs/cli.md quotes two table-003 tasks).
"""

import dataclasses
import sys
import time

from threadpoolctl import threadpool_limits

from alprbf.engine import protocol
from alprbf.engine.config import load_config
from alprbf.engine.runner import load_datasets, plan, select_tasks

spent = {"log_loss": 0.0, "class_scores": 0.0}


def timed(name, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[name] += time.perf_counter() - t0
    return wrapper


protocol._test_log_loss = timed("log_loss", protocol._test_log_loss)
protocol.class_scores = timed("class_scores", protocol.class_scores)
cfg = load_config(sys.argv[2] if len(sys.argv) > 2 else "configs/table_003.yaml")
[task] = select_tasks(plan(cfg), [sys.argv[1]])
cfg1 = dataclasses.replace(cfg, datasets=[task.dataset])
ds = load_datasets(cfg1)[task.dataset.label]
with threadpool_limits(1):
    t0 = time.perf_counter()
    df = protocol.run_task(task, ds, cfg.protocol_for(task.dataset))
    total = time.perf_counter() - t0
print(f"{task.task_id}: {len(df)} evaluations, task {total:.2f} s, eval_seconds "
      f"{df.eval_seconds.sum():.3f} s, of which log-loss {spent['log_loss']:.3f} s, "
      f"balanced accuracy + macro F1 {spent['class_scores']:.4f} s")
