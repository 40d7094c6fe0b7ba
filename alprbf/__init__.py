"""alprbf: reproducible pool-based active-learning benchmarks for probabilistic RBF networks."""

__version__ = "0.1.0"
