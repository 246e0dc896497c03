"""``Comparison``: the table ``compare`` returns, which keeps the runs' ``Result``\\s."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import pandas as pd

from ..engine.result import Result


class Comparison(pd.DataFrame):
    """One row per run (the summary's keys as columns), and the runs themselves.

    A ``pandas.DataFrame``, so code written for the table ``compare`` used to return
    keeps working; ``results`` maps each row name to its ``Result`` (plot them with
    ``aryl.plot.cdf(comparison.results)``, save them, read their provenance) and
    ``table`` is the plain DataFrame. Frames derived from it (``.loc``, arithmetic)
    are plain DataFrames.

    A replicated comparison (``compare(..., seeds=N)`` or ``windows=K``;
    ``aryl.studies.replications``) also has ``samples`` (one row per run: row, seed,
    window and its summary), ``runs`` ((row, seed, window) -> ``Result``, every
    replication's run) and ``reference`` (the row its speed-ups are over); its
    ``results`` are each row's first run. A single comparison has ``samples`` None.
    """

    _metadata = ["results", "samples", "runs", "reference"]
    results: Dict[str, Result]
    samples: Optional[pd.DataFrame] = None
    runs: Dict[Tuple[str, int, int], Result]
    reference: Optional[str] = None

    @property
    def _constructor(self) -> type[pd.DataFrame]:  # derived frames drop the runs
        return pd.DataFrame

    @classmethod
    def of(cls, table: pd.DataFrame, results: Dict[str, Result]) -> Comparison:
        """``table`` (one row per name of ``results``) with ``results`` attached."""
        out = cls(table)
        out.results = dict(results)
        out.runs = {}
        return out

    @property
    def table(self) -> pd.DataFrame:
        """The summary table as a plain ``DataFrame`` (a copy)."""
        return pd.DataFrame(self).copy()
