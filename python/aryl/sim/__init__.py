"""The compiled discrete-event simulator: what-if studies of loaning and elasticity.

``simulate`` replays a job trace on training servers plus inference servers lent
and reclaimed by an inference-load series; ``compare`` runs several
configurations on the same input. Scenario presets (``scenario``) are seeded,
documented transformations of the job list, applied in Python before the run.
"""

from .result import InvariantError, Result, SUMMARY_KEYS
from .scenarios import SCENARIOS, apply_prediction_error, describe, scenario, scenario_config
from .simulation import Cluster, Config, compare, simulate

__all__ = [
    "Cluster", "Config", "InvariantError", "Result", "SCENARIOS", "SUMMARY_KEYS",
    "apply_prediction_error", "compare", "describe", "scenario", "scenario_config", "simulate",
]
