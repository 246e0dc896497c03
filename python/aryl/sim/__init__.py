"""The compiled discrete-event simulator: what-if studies of loaning and elasticity.

``simulate`` replays a job trace on training servers plus inference servers lent
and reclaimed by an inference-load series; ``compare`` runs several
configurations on the same input. Scenario presets (``scenario``) are seeded,
documented transformations of the job list, applied in Python before the run;
``size_cluster`` sizes a cluster to a trace at the paper's load, and
``paper_runs`` lists the rows of the paper's comparison (with controls and
ablations) as ``simulate`` arguments.
"""

from .comparison import BASELINE, LOANING_ROWS, ORDERINGS, check_orderings, paper_runs, speedups
from .result import InvariantError, Result, SUMMARY_KEYS
from .scenarios import SCENARIOS, apply_prediction_error, describe, scenario, scenario_config
from .simulation import Cluster, Config, compare, simulate
from .sizing import Sizing, size_cluster

__all__ = [
    "BASELINE", "Cluster", "Config", "InvariantError", "LOANING_ROWS", "ORDERINGS", "Result",
    "SCENARIOS", "SUMMARY_KEYS", "Sizing", "apply_prediction_error", "check_orderings", "compare",
    "describe", "paper_runs",
    "scenario", "scenario_config", "simulate", "size_cluster", "speedups",
]
