"""The compiled discrete-event simulator: what-if studies of loaning and elasticity.

``simulate`` replays a job trace on training servers plus inference servers lent
and reclaimed by an inference-load series; ``compare`` runs several
configurations on the same input. Scenario presets (``scenario``) are seeded,
documented transformations of the job list, applied in Python before the run.
Every ``Result`` records what produced it (``Provenance``) and saves to Parquet + JSON
(``Result.save``, ``load``); ``sweep`` runs a grid of configurations on Ray, cached.
"""

from .comparison import Comparison
from .provenance import Provenance
from .result import InvariantError, Result, SUMMARY_KEYS
from .scenarios import SCENARIOS, apply_prediction_error, describe, scenario, scenario_config
from .simulation import Cluster, Config, compare, simulate
from .storage import load
from .sweep import PARAMETERS, sweep

__all__ = [
    "Cluster", "Comparison", "Config", "InvariantError", "PARAMETERS", "Provenance", "Result",
    "SCENARIOS", "SUMMARY_KEYS", "apply_prediction_error", "compare", "describe", "load",
    "scenario", "scenario_config", "simulate", "sweep",
]
