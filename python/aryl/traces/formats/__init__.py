"""Importers of the public GPU cluster traces, each read in the format it was released in.

``read(path, format=...)`` returns the job frame of ``aryl.traces.read_jobs`` from:

* ``aryl`` — aryl's own job CSV (``read_jobs``);
* ``philly`` — Microsoft Philly's ``cluster_job_log`` (JSON; ``read_philly``);
* ``alibaba-pai`` — Alibaba PAI 2020's ``pai_job_table.csv`` with its
  ``pai_task_table.csv`` (``read_alibaba_pai``);
* ``alibaba-2023`` — Alibaba GPU 2023's ``openb_pod_list_*.csv`` (``read_alibaba_2023``);
* ``helios`` — SenseTime Helios's ``cluster_log.csv`` (``read_helios``).

Each importer maps the trace's fields onto ``job_id, submit_time_s, num_gpus,
duration_s, gpu_type`` (``docs/traces.md`` lists every field and rule), keeps the
trace's other fields as extra columns, re-bases time to the first kept submission and
sorts by it. A record that breaks the published schema raises ``TraceError`` naming
the file, the row and the column (or, with ``drop_invalid``, is counted in
``.attrs["drop_reasons"]``); a valid record that is not a GPU job aryl can replay (a
CPU job, one that never started or was still running, one that ran 0 s) is left out
and counted in ``.attrs["skip_reasons"]``, with a warning: nothing is dropped silently.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import pandas as pd

from ..reading import read_jobs
from .alibaba_2023 import OPENB_COLUMNS, read_alibaba_2023
from .alibaba_pai import PAI_JOB_COLUMNS, PAI_TASK_COLUMNS, read_alibaba_pai
from .helios import HELIOS_COLUMNS, read_helios
from .philly import read_philly

_READERS: Dict[str, Callable[..., pd.DataFrame]] = {
    "aryl": read_jobs,
    "philly": read_philly,
    "alibaba-pai": read_alibaba_pai,
    "alibaba-2023": read_alibaba_2023,
    "helios": read_helios,
}
#: The job trace formats ``read`` takes (``aryl simulate --trace-format``).
TRACE_FORMATS = tuple(_READERS)


def read(
    source: Any, format: str = "aryl", *, drop_invalid: bool = False
) -> pd.DataFrame:
    """Read a job trace in one of ``TRACE_FORMATS``.

    Parameters
    ----------
    source
        A path or a file object (text or binary; gzip detected by its magic bytes). For
        ``alibaba-pai``, the path of ``pai_job_table.csv``, with ``pai_task_table.csv``
        beside it (``read_alibaba_pai`` takes the two apart).
    format
        ``aryl`` (default: ``read_jobs``), ``philly``, ``alibaba-pai``,
        ``alibaba-2023`` or ``helios``.
    drop_invalid
        ``False``: the first invalid record raises. ``True``: invalid records are
        skipped and counted (``read_jobs``).

    Returns
    -------
    pandas.DataFrame
        ``job_id, submit_time_s, num_gpus, duration_s, gpu_type`` and the trace's other
        fields; ``.attrs`` as ``read_jobs`` sets them, and for the public formats
        ``format``, ``skipped`` and ``skip_reasons``.

    Raises
    ------
    TraceError
        Naming the file, the row and the column of the first invalid record.
    ValueError
        For an unknown ``format``.
    TypeError
        For a ``format`` that is not a string.
    """
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, got {type(format).__name__}")
    if format not in _READERS:
        raise ValueError(
            f"unknown trace format {format!r}; expected one of {', '.join(TRACE_FORMATS)}"
        )
    return _READERS[format](source, drop_invalid=drop_invalid)


__all__ = [
    "HELIOS_COLUMNS",
    "OPENB_COLUMNS",
    "PAI_JOB_COLUMNS",
    "PAI_TASK_COLUMNS",
    "TRACE_FORMATS",
    "read",
    "read_alibaba_2023",
    "read_alibaba_pai",
    "read_helios",
    "read_philly",
]
