"""The engine: one simulated run, from configuration to saved result.

``simulate`` replays a job trace on training servers plus inference servers lent and
reclaimed by an inference-load series, in the compiled event simulator (``aryl._core``),
and returns a ``Result`` (``result``: summary, per-job table, ``history`` of the cluster;
``storage``: Parquet + JSON, ``load``; ``provenance``: what produced it). ``Config`` and
``Cluster`` (``config``) say how and where it runs; ``scenarios`` are the seeded
transformations of the job list applied before a run; ``runs`` is the recipe that turns
a trace and a run's parameters into ``simulate``'s arguments; ``hooks`` runs a policy of
your own inside the engine. Everything that runs more than one simulation lives in
``aryl.studies``, which imports this package and never the reverse; users reach both
through ``aryl.sim``.
"""

from .config import Cluster, Config
from .hooks import Epoch, Policy
from .metrics import SUMMARY_KEYS
from .provenance import Provenance
from .result import InvariantError, Result, load
from .scenarios import (
    ELASTIC_SELECTIONS,
    SCENARIOS,
    apply_prediction_error,
    describe,
    elastic_bound,
    scenario,
    scenario_config,
)
from .simulation import simulate
from .storage import ResultFileError

__all__ = [
    "apply_prediction_error",
    "Cluster",
    "Config",
    "describe",
    "elastic_bound",
    "ELASTIC_SELECTIONS",
    "Epoch",
    "InvariantError",
    "load",
    "Policy",
    "Provenance",
    "Result",
    "ResultFileError",
    "scenario",
    "scenario_config",
    "SCENARIOS",
    "simulate",
    "SUMMARY_KEYS",
]
