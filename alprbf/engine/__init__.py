"""The experiment engine: from a config file to one result file per task.

Top to bottom (each module imports only those below it; ``lint-imports`` checks):

- :mod:`~alprbf.engine.record` re-runs recorded tasks and compares them with the record;
  :mod:`~alprbf.engine.status` says how far a run has got;
- :mod:`~alprbf.engine.runner` plans a config's tasks, runs the missing ones and writes the
  results directory (``run.json``, locks, failures);
- :mod:`~alprbf.engine.execution` fans the tasks out (loky processes or dask), with time
  limits and checkpoints;
- :mod:`~alprbf.engine.protocol` runs one task: split, initial labeled set, the query loop,
  the metrics of each row;
- :mod:`~alprbf.engine.initial` chooses the initial labeled sets;
- :mod:`~alprbf.engine.config` reads and checks the YAML config (names resolve through the
  registries of data sets, models and strategies);
- :mod:`~alprbf.engine.checkpoint` (a task's loop state, saved now and then),
  :mod:`~alprbf.engine.seeding` (seeds derived from labels) and :mod:`~alprbf.engine.cpu`
  (pinned CPU kernels, so that rows are the same on every x86-64 machine).
"""
