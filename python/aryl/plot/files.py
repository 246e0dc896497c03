"""The standard figures of a run or a comparison, written to files: ``save_all``."""

from __future__ import annotations

from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from matplotlib.figure import Figure

from ..engine.result import Result
from .comparisons import speedups
from .distributions import cdf, preemptions
from .runs import Results, named
from .style import DPI, MAX_SERIES
from .timelines import usage, usage_grid
from .timeseries import DEFAULT_WINDOW
from .verdict import answered, verdict_cdf

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The figure formats ``save_all`` can write.
FORMATS = ("png", "svg", "pdf")


def save_all(
    results: Results,
    directory: Union[str, Path],
    metadata: Optional[Mapping[str, str]] = None,
    formats: Sequence[str] = ("png",),
    window: Optional[float] = DEFAULT_WINDOW,
    headline: Optional[pd.DataFrame] = None,
    note: Optional[str] = None,
) -> List[Path]:
    """Write the standard figures of one or several runs.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by
        ``.label``) or a single ``Result``.
    directory
        Where to write; created (with its parents) if missing.
    metadata
        Text written into every file (``Software``, ``Description``: the CLI
        records the command, inputs, parameters and version there): PNG text
        chunks; in SVG and PDF as ``Creator`` and ``Description`` / ``Subject``.
    formats
        File formats, each figure in each: ``"png"``, ``"svg"``, ``"pdf"``.
    window
        Seconds the usage figures average over (default an hour; see ``usage``).
    headline
        ``aryl.sim.speedups``' table of the runs: adds ``speedups``' figure.
    note
        A caption under every figure drawn from ``results`` (all but ``speedups``):
        a replicated comparison says there which seed the runs are
        (``"seed 0, the first of 5 seeds; ..."``). Nothing else is drawn there:
        the legends are beside or above the axes.

    Returns
    -------
    list of pathlib.Path
        Per format, in this order: ``jct_cdf``, ``queuing_cdf``, ``verdict_cdf``
        (when the runs hold the two rows of a verdict question: ``verdict_cdf``),
        ``preemptions``, ``speedups`` (with ``headline``) and ``usage``: for one run
        its two-panel ``usage`` figure, for several one ``usage_grid`` figure.

    Notes
    -----
    A CDF draws at most 8 runs (``cdf``). With more, the CDFs are split into
    figures of 8: ``jct_cdf`` has the first 8 runs, ``jct_cdf_2`` the first run
    (the reference, e.g. the Baseline, in the same colour) and the next 7, and so
    on; a run keeps its colour and dash within each file. The rows that answer
    one question of the verdict share an axes in ``verdict_cdf`` whatever file
    their CDFs fall in. PNGs, and the dense
    series of SVG and PDF files (rasterised, see ``usage``), are rendered at 120
    dpi (a default figure shrunk to a paper's column is then finer than 300 dpi);
    figures are released after saving; nothing is left open in pyplot.
    """
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(
            f"unknown figure format(s) {unknown}; expected some of {FORMATS}"
        )
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths: List[Path] = []
    for stem, fig in standard_figures(results, window, headline, note):
        try:
            for fmt in formats:
                path = out / f"{stem}.{fmt}"
                fig.savefig(
                    path,
                    dpi=DPI,  # PNGs, and the raster parts of SVG and PDF
                    format=fmt,
                    metadata=_file_metadata(fmt, metadata or {}),
                )
                paths.append(path)
        finally:
            fig.clear()
    return sorted(paths, key=lambda p: formats.index(p.suffix[1:]))


def standard_figures(
    results: Results,
    window: Optional[float] = DEFAULT_WINDOW,
    headline: Optional[pd.DataFrame] = None,
    note: Optional[str] = None,
) -> Iterator[Tuple[str, Figure]]:
    """(file stem, figure) of each figure ``save_all`` writes, in its order, drawn one
    at a time as the iteration reaches it (``note`` below every figure but the
    speed-ups'), so that a caller can free each before the next."""
    runs = named(results)

    def captioned(fig: Figure) -> Figure:
        if note:
            fig.supxlabel(note, fontsize="small", color="0.35")
        return fig

    for stem, metric in (("jct_cdf", "jct"), ("queuing_cdf", "queuing_time")):
        for suffix, group in _cdf_groups(runs):
            yield stem + suffix, captioned(cdf(dict(group), metric))
    mapping = dict(runs)
    if answered(list(mapping)):
        yield "verdict_cdf", captioned(verdict_cdf(mapping))
    yield "preemptions", captioned(preemptions(mapping))
    if headline is not None:
        yield "speedups", speedups(headline)
    if len(runs) == 1:
        name, result = runs[0]
        yield "usage", captioned(usage(result, label=name, window=window))
    else:
        yield "usage", captioned(usage_grid(mapping, window=window))


def _cdf_groups(
    runs: List[Tuple[str, Result]],
) -> List[Tuple[str, List[Tuple[str, Result]]]]:
    """(file suffix, runs) per CDF figure: all runs if they fit in one, else the
    first ``MAX_SERIES``, then the first run with the next ``MAX_SERIES - 1``, ..."""
    if len(runs) <= MAX_SERIES:
        return [("", runs)]
    groups = [("", runs[:MAX_SERIES])]
    rest, step = runs[MAX_SERIES:], MAX_SERIES - 1
    for i in range(0, len(rest), step):
        groups.append((f"_{len(groups) + 1}", [runs[0], *rest[i : i + step]]))
    return groups


def _file_metadata(fmt: str, metadata: Mapping[str, str]) -> Dict[str, str]:
    """``metadata`` under the keys each format accepts (SVG and PDF have fixed ones)."""
    if fmt == "png":
        return dict(metadata)
    keys = {
        "svg": {"Software": "Creator", "Description": "Description"},
        "pdf": {"Software": "Creator", "Description": "Subject"},
    }[fmt]
    return {keys[k]: v for k, v in metadata.items() if k in keys}
