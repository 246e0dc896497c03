"""A cluster from a file: ``read_servers`` reads aryl's server CSV (``id, pool, gpus,
gpu_type``) or the Alibaba GPU 2023 release's node list (``read_nodes``:
``openb_node_list_*.csv``, ``sn, cpu_milli, memory_mib, gpu, model``) as
``aryl.Server`` records, the ``cluster`` of ``aryl.sim.simulate`` and of the command
line's ``--servers FILE``.

The node list has no pools: a server whose GPU type is one of ``inference`` (by
default ``INFERENCE_TYPES``, the T4: the release's inference GPU, as in the paper's
cluster) is an inference server that can be lent, every other GPU server a training
server. Its ``model`` is the server's GPU type as the release names it, except the
V100's two memory sizes (``V100M16``, ``V100M32``), which are ``V100`` (aryl's
reference GPU, as the 2023 pod importer reads ``gpu_spec``). A node without GPUs
(``gpu`` 0: the CPU nodes of ``openb_node_list_all_node.csv``) is left out, and a
warning says how many.
"""

from __future__ import annotations

import warnings
from typing import Any, Collection, Dict, FrozenSet, List, Optional, Tuple

import numpy as np

from ..model import Server
from .csv_stream import (
    TraceError,
)
from .reading import (
    MAX_JOB_GPUS,
    _first_problem,
    _numbers,
    _raise_first,
    _tables,
)

#: The GPU types whose servers the node list's reading puts in the inference pool:
#: the T4, the release's inference GPU (and the paper's).
INFERENCE_TYPES = ("T4",)
#: The columns of aryl's server CSV, in order.
SERVER_COLUMNS = ("id", "pool", "gpus", "gpu_type")
#: The columns of the release's node list that the reading uses (it has also
#: ``cpu_milli`` and ``memory_mib``).
NODE_COLUMNS = ("sn", "gpu", "model")
#: How the node list's ``model`` names map to aryl's GPU types (any other name is
#: kept as it is: ``P100``, ``T4``, ``A10``, and ``G2``/``G3``, GPUs the release
#: does not disclose).
NODE_GPU_TYPES = {"V100M16": "V100", "V100M32": "V100"}


def read_servers(
    source: Any, *, inference: Optional[Collection[str]] = None
) -> List[Server]:
    """Read a cluster: aryl's server CSV or the release's node list, told apart by
    their header.

    aryl's server CSV has a header line and one row per server: ``id`` (unique),
    ``pool`` (``training`` or ``inference``), ``gpus`` (a whole number >= 1) and,
    optionally, ``gpu_type`` (a name such as ``V100``; empty or absent: the pool's
    type, V100 or T4). A file with the node list's columns (``sn``, ``gpu``,
    ``model``) is read as ``read_nodes`` reads it, with ``inference`` (the GPU types
    whose servers are lent); aryl's CSV names its pools, and ``inference`` must then
    be None.

    Raises ``TraceError`` naming the file, the row and the column of the first
    problem (``TypeError`` for a bad ``inference``).
    """
    lend = _inference_types(inference)
    rows = _Rows()
    for table in _tables(source, (), refuse=_neither):
        if set(NODE_COLUMNS) <= set(table.frame.columns):
            rows.nodes(table, lend)
        else:
            if inference is not None:
                raise ValueError(
                    f"{table.name}: inference={tuple(inference)!r} chooses the pools "
                    "of a node list; this server CSV names each server's pool"
                )
            rows.servers(table)
    return rows.done()


def _neither(header: List[str]) -> Optional[str]:
    """Why a file with this header is neither a server CSV nor a node list."""
    why = _not_nodes(header)
    if why or set(NODE_COLUMNS) <= set(header):
        return why
    missing = [c for c in SERVER_COLUMNS[:3] if c not in header]
    if missing:
        return (
            f"line 1 (header): missing column(s) {', '.join(missing)}; found "
            f"{', '.join(header)}: a cluster file is aryl's server CSV "
            f"({', '.join(SERVER_COLUMNS)}) or the Alibaba GPU 2023 release's node list "
            f"(openb_node_list_gpu_node.csv: {', '.join(NODE_COLUMNS)}, ...)"
        )
    return None


def read_nodes(
    source: Any, *, inference: Optional[Collection[str]] = None
) -> List[Server]:
    """Read the Alibaba GPU 2023 release's node list (``openb_node_list_gpu_node.csv``:
    1,213 GPU servers, 6,212 GPUs; or ``openb_node_list_all_node.csv``) as servers.

    Each node is ``Server(sn, pool, gpu, type)``: ``type`` is its ``model``, with
    ``V100M16`` and ``V100M32`` read as ``V100`` (``NODE_GPU_TYPES``); ``pool`` is
    ``inference`` when ``type`` is one of ``inference`` (default ``INFERENCE_TYPES``:
    the T4 servers, the release's inference GPU), else ``training``. Give your own
    rule as the types to lend, e.g. ``inference=("T4", "A10")``, or ``()`` for no
    inference pool. Nodes with no GPU (``gpu`` 0) are left out, with a warning
    saying how many. Only the T4 and V100 have speeds in aryl (the paper's);
    ``simulate`` warns about the others and runs them at a V100's speed until
    ``Config.gpu_speed`` gives theirs.

    Raises ``TraceError`` naming the file, the row and the column of the first
    problem: a missing column, an empty or repeated ``sn``, a ``gpu`` that is not a
    whole number >= 0, a GPU node with an empty ``model``, a file of pods (not
    nodes), or a file with no GPU node.
    """
    lend = _inference_types(inference)
    rows = _Rows()
    for table in _tables(source, NODE_COLUMNS, refuse=_not_nodes):
        rows.nodes(table, lend)
    return rows.done()


class _Rows:
    """The servers read so far, by chunk of rows, with their ids' rows (repeats are
    refused) and the nodes left out for having no GPU."""

    def __init__(self) -> None:
        self.read: List[Server] = []
        self.seen: Dict[str, str] = {}
        self.cpu_nodes = 0
        self.name = ""

    def add(self, table: Any, i: int, column: str, fields: Tuple[Any, ...]) -> None:
        """Row ``i``'s server, ``Server(*fields)``, unique by id (its ``column``)."""
        key = str(table.frame[column].iloc[i])
        if key in self.seen:
            raise TraceError(
                f"{table.where(i, column)}: {key!r} repeats {self.seen[key]}"
            )
        self.seen[key] = f"row {table.rows[i] + 1}"
        try:
            self.read.append(Server(*fields))
        except (TypeError, ValueError) as exc:
            raise TraceError(f"{table.where(i)}: {exc}") from None

    def nodes(self, table: Any, lend: FrozenSet[str]) -> None:
        """A chunk of the node list's rows."""
        self.name = table.name
        frame = table.frame
        gpus, why_gpus = _numbers(frame["gpu"], integer=True, high=MAX_JOB_GPUS)
        has_gpus = np.nan_to_num(gpus) > 0
        model = frame["model"]
        bad, labels = _first_problem(
            table,
            {
                "sn": _empty(frame["sn"]),
                "gpu": why_gpus,
                "model": np.where(
                    has_gpus & (model == ""), "empty value for a node with GPUs", ""
                ).astype(object),
            },
        )
        if bad.any():
            _raise_first(table, bad, labels)
        for i in np.flatnonzero(has_gpus).tolist():
            kind = NODE_GPU_TYPES.get(model.iloc[i], model.iloc[i])
            pool = "inference" if kind in lend else "training"
            sn, n = frame["sn"].iloc[i], int(gpus[i])
            self.add(table, i, "sn", (sn, pool, n, kind))
        self.cpu_nodes += int((~has_gpus).sum())

    def servers(self, table: Any) -> None:
        """A chunk of aryl's server CSV's rows."""
        self.name = table.name
        frame = table.frame
        gpus, why_gpus = _numbers(
            frame["gpus"], integer=True, high=MAX_JOB_GPUS, zero="zero GPUs"
        )
        pool = frame["pool"].str.lower()
        bad, labels = _first_problem(
            table,
            {
                "id": _empty(frame["id"]),
                "pool": np.where(
                    pool.isin(("training", "inference")),
                    "",
                    "expected training or inference",
                ).astype(object),
                "gpus": why_gpus,
            },
        )
        if bad.any():
            _raise_first(table, bad, labels)
        types = frame["gpu_type"] if "gpu_type" in frame else None
        for i in range(len(frame)):
            kind = None if types is None or types.iloc[i] == "" else types.iloc[i]
            id_, where, n = frame["id"].iloc[i], pool.iloc[i], int(gpus[i])
            self.add(table, i, "id", (id_, where, n, kind))

    def done(self) -> List[Server]:
        """The servers; refused when there are none, a warning for CPU nodes."""
        if not self.read:
            raise TraceError(f"{self.name}: no server with GPUs (every gpu is 0)")
        if self.cpu_nodes:
            warnings.warn(
                f"{self.name}: left out {self.cpu_nodes:,} "
                f"node{'s' * (self.cpu_nodes != 1)} without GPUs (gpu 0: CPU servers)",
                UserWarning,
                stacklevel=3,
            )
        return self.read


def _empty(column: Any) -> np.ndarray:
    """``"empty value"`` where a text column is empty."""
    out: np.ndarray = np.where(column == "", "empty value", "").astype(object)
    return out


def _inference_types(inference: Optional[Collection[str]]) -> FrozenSet[str]:
    """The types to lend, checked: a collection of names (a lone string is refused,
    ``("T4",)`` not ``"T4"``)."""
    if inference is None:
        return frozenset(INFERENCE_TYPES)
    if isinstance(inference, str) or not all(isinstance(t, str) for t in inference):
        raise TypeError(
            f"inference must be a collection of GPU type names such as ('T4',), got "
            f"{inference!r}"
        )
    return frozenset(NODE_GPU_TYPES.get(t, t) for t in inference)


def _not_nodes(header: List[str]) -> Optional[str]:
    """Why a file with this header is not a node list (None: it may be one)."""
    if "name" in header and "num_gpu" in header:
        return (
            "a pod list (openb_pod_list_*.csv: the release's jobs), not a node list; "
            "give it as JOBS with --trace-format alibaba-2023, and the node list "
            "(openb_node_list_gpu_node.csv) as --servers"
        )
    return None
