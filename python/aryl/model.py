"""The cluster model: servers, jobs and where their workers run (docs/model.md).

The records are plain dataclasses. Ids may be ints or strings (any hashable);
two ids that print the same (``7`` and ``"7"``) count as duplicates. Every public function also accepts them as
dicts with the same field names or as pandas DataFrames with those columns. The
conversion here checks what only Python can (field names, id references) and
hands columns to the C++ core, which validates the numbers and raises
``ValueError`` naming the offending record.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Optional,
    Type,
    TypeVar,
    Union,
    cast,
    get_args,
)

import numpy as np

from .defaults import DEFAULT_GPU_TYPE
from .typing import Id, Pool

if TYPE_CHECKING:
    import pandas as pd

POOLS = get_args(Pool)


def _received(value: Any) -> str:
    """``'4' (str)``: a value and its type, for error messages."""
    return f"{value!r} ({type(value).__name__})"


def _integer(value: Any, what: str, typed: bool = False) -> int:
    """An int (or NumPy int, or a float without a fraction, as DataFrames give them);
    not a bool, a str or a float with a fraction. ``typed``: the message names the
    type received too."""
    got = _received(value) if typed else repr(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be an integer, got {got}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if not math.isfinite(value) or value != int(float(value)):
        raise ValueError(f"{what} must be an integer, got {got}")
    return int(float(value))


def _real(value: Any, what: str, typed: bool = False) -> float:
    """A real number (int or float, NumPy's too), not a bool or a str."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        got = _received(value) if typed else repr(value)
        raise ValueError(f"{what} must be a number, got {got}")
    return float(value)


def _gpu_type(value: Any, what: str) -> Optional[str]:
    """A GPU type (or another optional name: a job's user, its vc): a str, or None (a
    missing value in a DataFrame, NaN or NA, is None)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return None
    import pandas as pd  # only here: pd.NA is pandas' missing value

    if value is pd.NA:
        return None
    raise ValueError(f"{what} must be a str or None, got {_received(value)}")


def _flag(value: Any, what: str, typed: bool = True) -> bool:
    """A bool (Python's or NumPy's): not 0/1, not a str such as 'yes'.

    The one check of a flag at every door (records and their columns here; an
    argument or a ``Config`` field through ``validation.flag``): anything else is a
    ``ValueError``, as every other bad record or option value. ``typed``: the
    message names the type received too."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    got = _received(value) if typed else repr(value)
    raise ValueError(f"{what} must be True or False, got {got}")


def _id(value: Any, what: str) -> Id:
    """A record id: any hashable value but None (ints and strs in practice)."""
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"{what} must be hashable (an int or a str), got {_received(value)}"
        ) from None
    if value is None:
        raise ValueError(f"{what} must be an int or a str, got None")
    return cast(Id, value)


@dataclass(frozen=True)
class Server:
    """A GPU server.

    ``pool`` is ``"training"`` or ``"inference"``; ``on_loan`` marks an inference
    server currently lent to training (only those can be reclaimed). ``gpu_type``
    defaults to ``"V100"`` for training and ``"T4"`` for inference servers.
    """

    id: Id
    pool: Pool = "training"
    gpus: int = 8
    # None (the default): the pool's type, filled in by __post_init__.
    gpu_type: str = None  # type: ignore[assignment]
    on_loan: bool = False

    def __post_init__(self) -> None:
        _id(self.id, "server id")
        what = f"server {self.id!r}"
        if not isinstance(self.pool, str) or self.pool not in POOLS:
            raise ValueError(
                f"{what}: pool must be 'training' or 'inference', got "
                f"{_received(self.pool)}"
            )
        object.__setattr__(self, "gpus", _integer(self.gpus, f"{what}: gpus", True))
        object.__setattr__(self, "on_loan", _flag(self.on_loan, f"{what}: on_loan"))
        object.__setattr__(
            self, "gpu_type", _gpu_type(self.gpu_type, f"{what}: gpu_type")
        )
        if self.gpu_type is None:
            object.__setattr__(self, "gpu_type", DEFAULT_GPU_TYPE[self.pool])


@dataclass(frozen=True)
class Job:
    """A training job with ``min_workers``..``max_workers`` workers of ``gpus_per_worker`` GPUs.

    ``duration`` is the running time (s) at ``reference_workers`` workers on
    reference GPUs (default: at ``max_workers``); ``estimated_duration`` is what the
    scheduler is told (default: ``duration``). The job's throughput curve (linear,
    imperfect or its own) is anchored there: at ``reference_workers`` it runs
    exactly ``duration``. ``gpu_type=None`` lets the job run on any GPU type,
    loaned inference servers included; ``hetero`` lets one job mix GPU types.
    ``checkpoint`` (default True, as the paper's evaluation assumes) lets a
    preempted job resume from its progress after a restart overhead; without it
    the job starts over. A job with ``min_workers == max_workers`` is inelastic.
    ``user`` and ``vc`` (its group: a virtual cluster, a team) name who submitted it,
    when the trace says (None otherwise); the simulator does not use them, and
    ``Result.jobs`` carries them for per-user and per-group metrics.
    """

    id: Id
    gpus_per_worker: int
    min_workers: int
    max_workers: int
    duration: float
    submit_time: float = 0.0
    # None (the default) stands for duration / max_workers; __post_init__ puts the
    # number in, so readers always see one, as the annotations say.
    estimated_duration: float = None  # type: ignore[assignment]
    gpu_type: Optional[str] = None
    checkpoint: bool = True
    hetero: bool = False
    reference_workers: int = None  # type: ignore[assignment]
    user: Optional[str] = None
    vc: Optional[str] = None

    def __post_init__(self) -> None:
        _id(self.id, "job id")
        what = f"job {self.id!r}"
        for name in ("gpus_per_worker", "min_workers", "max_workers"):
            value = _integer(getattr(self, name), f"{what}: {name}", True)
            object.__setattr__(self, name, value)
        for name in ("duration", "submit_time"):
            real = _real(getattr(self, name), f"{what}: {name}", True)
            object.__setattr__(self, name, real)
        if self.estimated_duration is None:
            object.__setattr__(self, "estimated_duration", self.duration)
        object.__setattr__(
            self,
            "estimated_duration",
            _real(self.estimated_duration, f"{what}: estimated_duration", True),
        )
        for name in ("checkpoint", "hetero"):
            object.__setattr__(
                self, name, _flag(getattr(self, name), f"{what}: {name}")
            )
        object.__setattr__(
            self, "gpu_type", _gpu_type(self.gpu_type, f"{what}: gpu_type")
        )
        if self.reference_workers is None:
            object.__setattr__(self, "reference_workers", self.max_workers)
        reference = _integer(self.reference_workers, f"{what}: reference_workers", True)
        if reference < 1:  # 0 is the core's "max_workers": never a record's value
            raise ValueError(
                f"{what}: reference_workers must be >= 1 (None means max_workers), "
                f"got {reference}"
            )
        object.__setattr__(self, "reference_workers", reference)
        for group in ("user", "vc"):
            named = _gpu_type(getattr(self, group), f"{what}: {group}")
            object.__setattr__(self, group, named or None)  # "" is not a name

    @property
    def elastic(self) -> bool:
        """True when the job can run on more than one worker count."""
        return self.max_workers > self.min_workers


@dataclass(frozen=True)
class Worker:
    """One worker of job ``job`` on server ``server`` (both ids).

    ``gpus`` defaults to the job's ``gpus_per_worker`` and must equal it when
    given; ``flexible`` marks a worker beyond the job's ``min_workers``.
    """

    job: Id
    server: Id
    gpus: Optional[int] = None
    flexible: bool = False

    def __post_init__(self) -> None:
        _id(self.job, "worker: job")
        _id(self.server, "worker: server")
        what = f"worker of job {self.job!r} on server {self.server!r}"
        if self.gpus is not None:
            object.__setattr__(self, "gpus", _integer(self.gpus, f"{what}: gpus", True))
        object.__setattr__(self, "flexible", _flag(self.flexible, f"{what}: flexible"))


def trusted_records(cls: Type[R], columns: Iterable[List[Any]]) -> List[R]:
    """``cls`` records of values checked already (a ``ClusterState``'s columns as
    Python values, one list per field in field order): the records ``cls(*row)``
    makes, without checking every value again (a state's views build thousands
    of them per simulated epoch)."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    new = object.__new__
    out = []
    for row in zip(*columns):
        record = new(cls)
        record.__dict__.update(zip(names, row))
        out.append(record)
    return out


#: Records as a public function takes them: instances, dicts or a DataFrame.
Records = Union[Iterable[Any], "pd.DataFrame"]
R = TypeVar("R")


def as_records(records: Records, cls: Type[R], what: str) -> List[R]:
    """``records`` as a list of ``cls`` instances, from instances, dicts or a DataFrame."""
    if hasattr(records, "to_dict") and hasattr(records, "columns"):
        records = records.to_dict("records")
    if isinstance(records, (str, bytes, dict)):
        raise ValueError(
            f"{what}s must be a list of records or a DataFrame, got {type(records).__name__}"
        )
    if isinstance(records, (list, tuple)) and set(map(type, records)) <= {cls}:
        return list(records)  # all records already (checked when made): the fast path
    out: List[R] = []
    for i, r in enumerate(records):
        if isinstance(r, cls):
            out.append(r)
        elif isinstance(r, dict):
            out.append(_from_dict(r, cls, f"{what} record {i}"))
        else:
            raise ValueError(
                f"{what} record {i} must be a {cls.__name__} or a dict, got {type(r).__name__}"
            )
    return out


def _from_dict(record: Dict[str, Any], cls: Type[R], what: str) -> R:
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(record) - fields, key=str)
    if unknown:
        raise ValueError(
            f"{what}: unknown field(s) {unknown}; expected some of {sorted(fields)}"
        )
    required = [
        f.name
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in record]
    if missing:
        raise ValueError(f"{what}: missing field(s) {missing}")
    return cls(**record)


def server_columns(servers: List[Server]) -> Dict[str, List[Any]]:
    """The servers as the core's columns (ids as str, pool as its index in ``POOLS``)."""
    return {
        "id": [str(s.id) for s in servers],
        "pool": [POOLS.index(s.pool) for s in servers],
        "gpus": [s.gpus for s in servers],
        "gpu_type": [s.gpu_type for s in servers],
        "on_loan": [s.on_loan for s in servers],
    }


def job_columns(jobs: List[Job]) -> Dict[str, List[Any]]:
    """The jobs as the core's columns (ids as str, "any GPU type" as "")."""
    columns = {
        name: [getattr(j, name) for j in jobs]
        for name in (
            "gpus_per_worker",
            "min_workers",
            "max_workers",
            "duration",
            "submit_time",
            "estimated_duration",
            "checkpoint",
            "hetero",
            "reference_workers",
        )
    }
    columns["id"] = [str(j.id) for j in jobs]
    columns["gpu_type"] = [j.gpu_type or "" for j in jobs]
    return columns
