"""``Comparison``: the table ``compare`` returns, which keeps the runs' ``Result``\\s."""

from __future__ import annotations

from typing import Dict

import pandas as pd

from .result import Result


class Comparison(pd.DataFrame):
    """One row per run (the summary's keys as columns), and the runs themselves.

    A ``pandas.DataFrame``, so code written for the table ``compare`` used to return
    keeps working; ``results`` maps each row name to its ``Result`` (plot them with
    ``aryl.plot.cdf(comparison.results)``, save them, read their provenance) and
    ``table`` is the plain DataFrame. Frames derived from it (``.loc``, arithmetic)
    are plain DataFrames.
    """

    _metadata = ["results"]
    results: Dict[str, Result]

    @property
    def _constructor(self) -> type[pd.DataFrame]:  # derived frames drop the runs
        return pd.DataFrame

    @classmethod
    def of(cls, table: pd.DataFrame, results: Dict[str, Result]) -> Comparison:
        """``table`` (one row per name of ``results``) with ``results`` attached."""
        out = cls(table)
        out.results = dict(results)
        return out

    @property
    def table(self) -> pd.DataFrame:
        """The summary table as a plain ``DataFrame`` (a copy)."""
        return pd.DataFrame(self).copy()
