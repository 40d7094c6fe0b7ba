"""Result files on disk: what the engine writes and the report reads.

:mod:`~alprbf.store.results` holds the task-file schema (one Parquet file per task, its
checksum and metadata), ``run.json``, failures, and the comparison and compaction of results
directories; :mod:`~alprbf.store.fileio` atomic writes and the directory lock.  The store
imports nothing of the engine, so the report can read results without loading models.
"""
