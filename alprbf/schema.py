"""The results schema shared by the runner (writer) and the report (reader).

One Parquet file per task (``<results>/<experiment>/tasks/<task_id>.parquet``), one row per
evaluated iteration.  This module imports nothing from the models so that the report can use it.
"""

from __future__ import annotations

import pyarrow as pa

#: Columns that identify a learning curve.
KEY_COLUMNS = ("experiment", "dataset", "model", "strategy", "fold", "repetition")

#: Columns that hold wall-clock measurements (excluded from determinism comparisons).
TIMING_COLUMNS = ("fit_seconds", "query_seconds")

SCHEMA = pa.schema([
    ("experiment", pa.string()),      # config name (plus "-<scale>" for non-full scales)
    ("dataset", pa.string()),         # dataset label
    ("model", pa.string()),           # model label
    ("strategy", pa.string()),        # strategy label
    ("fold", pa.int32()),             # 0-based test fold
    ("repetition", pa.int32()),       # 0-based repetition of the cross-validation
    ("iteration", pa.int32()),        # query round (0 = initial labeled set)
    ("n_labeled", pa.int32()),        # |L| when the model of this row was fitted
    ("test_error", pa.float64()),     # 1 - test_accuracy, on the test fold
    ("test_accuracy", pa.float64()),
    ("train_accuracy", pa.float64()), # accuracy on the whole training part L u U, true labels
    ("labeled_accuracy", pa.float64()),  # accuracy on L
    ("model_size", pa.int64()),       # components / support vectors; null if not meaningful
    ("fit_seconds", pa.float64()),    # wall time of this row's fit
    ("query_seconds", pa.float64()),  # wall time of the queries that added `queried`
    ("queried", pa.list_(pa.int64())),         # rows (dataset indices) labeled since last row
    ("queried_labels", pa.list_(pa.int64())),  # their class codes
    ("task_id", pa.string()),
])

COLUMNS = tuple(SCHEMA.names)
