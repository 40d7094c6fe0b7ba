"""Query strategies and their registry."""

from . import (
    basic,  # noqa: F401  (registers the strategies)
    qbc,  # noqa: F401  (qbc_prbf)
)
from .base import STRATEGIES, QueryStrategy, select_top

__all__ = ["STRATEGIES", "QueryStrategy", "select_top"]
