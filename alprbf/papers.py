"""The five papers alprbf reproduces, by the key code and docs name them with.

A paper's key is its first author and year in lower case (``reitmaier2016``); prose cites it as
:attr:`Paper.cite` ("Reitmaier et al. 2016").  Its number (``"003"``) is the prefix of its text
file in ``shared/papers`` (the specification) and names what the record was made under:
``make table-003``, ``configs/table_003*.yaml``, ``results/table-003-full/`` and the task ids
in them.  Those names stay; ``make table-reitmaier2016`` runs the same as ``make table-003``.

This module is the one place that maps key to number, authors, year, title, configs and
reproduction page.  It imports nothing of alprbf (stdlib only, so ``alprbf list papers`` stays
light) and sits at the bottom of the import layers, usable from any of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """One paper: ``key`` (author-year), ``number`` (its file's prefix, the table number),
    ``authors`` and ``year``, ``title`` (short), ``venue``, ``cite`` (the prose form),
    ``configs`` (the recorded table configs, repository paths) and ``page`` (its reproduction
    page)."""

    key: str
    number: str
    authors: str
    year: int
    title: str
    venue: str
    cite: str
    configs: tuple[str, ...]

    @property
    def page(self) -> str:
        """The paper's reproduction page (repository path)."""
        return f"docs/reproduction/{self.key}.md"

    @property
    def table(self) -> str:
        """The ``make`` target and results-directory stem of its record (``table-003``)."""
        return f"table-{self.number}"

    @property
    def experiments(self) -> str:
        """Glob of its experiment configs beside the record (repository path)."""
        return f"configs/experiments/{self.key}_*.yaml"


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("constantinopoulos2008", "000", "Constantinopoulos & Likas", 2008,
          "semi-supervised and active learning with the probabilistic RBF classifier",
          "Neurocomputing", "Constantinopoulos & Likas 2008",
          ("configs/table_000.yaml", "configs/table_000_gate.yaml",
           "configs/table_000_passive.yaml")),
    Paper("constantinopoulos2006", "001", "Constantinopoulos & Likas", 2006,
          "an incremental training method for the probabilistic RBF network",
          "IEEE Transactions on Neural Networks", "Constantinopoulos & Likas 2006",
          ("configs/table_001.yaml",)),
    Paper("titsias2001", "002", "Titsias & Likas", 2001,
          "the probabilistic RBF network with constrained kernel sharing",
          "preprint, University of Ioannina", "Titsias & Likas 2001",
          ("configs/table_002.yaml", "configs/table_002_floor.yaml")),
    Paper("reitmaier2016", "003", "Reitmaier, Calma & Sick", 2016,
          "semi-supervised active learning for support vector machines",
          "arXiv", "Reitmaier et al. 2016",
          ("configs/table_003.yaml", "configs/table_003_mnist.yaml")),
    Paper("nguyen2004", "004", "Nguyen & Smeulders", 2004,
          "active learning using pre-clustering", "ICML", "Nguyen & Smeulders 2004",
          ("configs/table_004.yaml",)),
)}

#: number ("003") -> key ("reitmaier2016")
BY_NUMBER: dict[str, str] = {p.number: p.key for p in PAPERS.values()}


def paper(name: str) -> Paper:
    """The paper of a key (``reitmaier2016``) or a number (``003``); KeyError otherwise."""
    if name in PAPERS:
        return PAPERS[name]
    if name in BY_NUMBER:
        return PAPERS[BY_NUMBER[name]]
    raise KeyError(f"no paper '{name}': one of {', '.join(PAPERS)} (or 000-004)")
