"""Human-readable values for notebooks and terminals: units, percentages, small HTML tables."""

from __future__ import annotations

import csv
import html
import io
import json
import math
import shutil
import textwrap
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence, Tuple

#: Coarser units a time in seconds is shown in, largest first: (symbol, seconds).
TIME_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0))


def duration(seconds: float) -> str:
    """``18,290 s (5.1 h)``: seconds, with a coarser unit when it helps; ``—`` for NaN."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    text = f"{seconds:,.0f} s"
    for unit, size in TIME_UNITS:
        if abs(seconds) >= size:
            return f"{text} ({seconds / size:.1f} {unit})"
    return text


def metric(value: Any, kind: str) -> str:
    """A summary value of ``kind`` (``aryl.engine.metrics``) with its unit: times in s (and
    h/d), ratios as percentages, counts, hours (``1,234.5 h``), factors (``2.50x``)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value) and kind in ("ratio", "factor"):
        return "—"
    if kind == "ratio":
        return f"{value:.2%}"
    if kind == "hours":
        return f"{value:,.1f} h"
    if kind == "factor":
        return f"{value:.2f}x"
    if kind == "count":  # a mean of counts over replications
        return f"{value:,.1f}"
    return duration(value)


def html_table(rows: Iterable[Tuple[str, Any]], caption: str) -> str:
    """A two-column HTML table (name, value), escaped, left-aligned names."""
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
        f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    return f"<table><caption>{html.escape(caption)}</caption>{body}</table>"


# ---- tables for the terminal and for files ------------------------------------------

#: The output formats of the command line's ``--format``.
FORMATS = ("table", "csv", "markdown", "json")


@dataclass
class Table:
    """Rows of raw values under a header, and optionally how they read in a terminal.

    ``shown`` (same shape as ``rows``) is the text of ``table`` and ``markdown``
    (default: ``str`` of each value); ``csv`` and ``json`` get the raw values (NaN as
    empty / null), so that numbers stay numbers.
    """

    header: Sequence[str]
    rows: Sequence[Sequence[Any]]
    shown: Optional[Sequence[Sequence[str]]] = None

    def cells(self) -> List[List[str]]:
        """Every row as text."""
        if self.shown is not None:
            return [list(map(str, row)) for row in self.shown]
        return [[str(v) for v in row] for row in self.rows]


def render(table: Table, fmt: str = "table", width: Optional[int] = None) -> str:
    """``table`` as text in one of ``FORMATS``; ``table`` fits ``width`` columns
    (default: the terminal's) by wrapping headers, then splitting the columns into
    blocks that each repeat the first column."""
    if fmt == "csv":
        return _csv(table)
    if fmt == "json":
        return _json(table)
    if fmt == "markdown":
        return _markdown(table)
    if fmt != "table":
        raise ValueError(
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"
        )
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    return _fitted(list(table.header), table.cells(), width)


def _csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.header)
    writer.writerows([_plain(v, "") for v in row] for row in table.rows)
    return buffer.getvalue().rstrip("\n")


def _json(table: Table) -> str:
    records = [
        {h: _plain(v, None) for h, v in zip(table.header, row)} for row in table.rows
    ]
    return json.dumps(records, indent=2, default=str)


def _plain(value: Any, missing: Any) -> Any:
    """A cell as a plain Python value (numpy scalars unwrapped), ``missing`` for NaN."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return missing
    return value


def _markdown(table: Table) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join(["---"] + ["---:"] * (len(table.header) - 1)) + "|"
    return "\n".join([line(table.header), rule] + [line(r) for r in table.cells()])


def _fitted(header: List[str], cells: List[List[str]], width: int) -> str:
    """A plain-text table no wider than ``width`` when it can be made so."""
    wrapped = [[h] for h in header]
    if _width(wrapped, cells) > width:
        wrapped = [_wrap_header(h, [r[i] for r in cells]) for i, h in enumerate(header)]
    blocks: List[List[int]] = []
    for i in range(1, len(header)):
        trial = blocks[-1] + [i] if blocks else [i]
        if (
            blocks
            and _width(
                [wrapped[j] for j in [0] + trial],
                [[r[j] for j in [0] + trial] for r in cells],
            )
            <= width
        ):
            blocks[-1] = trial
        else:
            blocks.append([i])
    if not blocks:
        blocks = [[]]
    return "\n\n".join(_block([0] + b, wrapped, cells) for b in blocks)


def _wrap_header(header: str, values: Sequence[str]) -> List[str]:
    """A header on as many lines as it takes to be no wider than its values."""
    widest = max([len(v) for v in values] + [len(w) for w in header.split()] + [1])
    return textwrap.wrap(header, widest) or [header]


def _width(wrapped: Sequence[Sequence[str]], cells: List[List[str]]) -> int:
    widths = [
        max([len(x) for x in h] + [len(r[i]) for r in cells])
        for i, h in enumerate(wrapped)
    ]
    return sum(widths) + 2 * (len(widths) - 1)


def _block(columns: List[int], wrapped: List[List[str]], cells: List[List[str]]) -> str:
    heads = [wrapped[i] for i in columns]
    rows = [[r[i] for i in columns] for r in cells]
    widths = [
        max([len(x) for x in h] + [len(r[k]) for r in rows])
        for k, h in enumerate(heads)
    ]
    depth = max(len(h) for h in heads)
    # Bottom-aligned multi-line headers: each column's last line sits on the rule.
    head_lines = [[""] * (depth - len(h)) + h for h in heads]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if k == 0 else c.rjust(w)
            for k, (c, w) in enumerate(zip(row, widths))
        ).rstrip()

    out = [line([h[d] for h in head_lines]) for d in range(depth)]
    out.append("  ".join("-" * w for w in widths))
    return "\n".join(out + [line(r) for r in rows])
