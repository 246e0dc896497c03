"""The compiled discrete-event simulator: what-if studies of loaning and elasticity.

``simulate`` replays a job trace on training servers plus inference servers lent
and reclaimed by an inference-load series; ``compare`` runs several
configurations on the same input. Scenario presets (``scenario``) are seeded,
documented transformations of the job list, applied in Python before the run;
``size_cluster`` sizes a cluster to a trace at the paper's load, and
``paper_runs`` lists the rows of the paper's comparison (with controls and
ablations) as ``simulate`` arguments (``PAPER_TABLE3``: the paper's figures;
``pollux_beside_paper``: the Pollux comparison beside them). Every ``Result``
records what produced it (``Provenance``) and saves to Parquet + JSON (``Result.save``, ``load``);
``sweep`` runs a grid of configurations on Ray, cached (``sweep_summary``: each
point's mean and interval over a seed axis). ``compare(..., seeds=N)``
replicates a comparison with 95% intervals (``replications``, ``confidence``);
``replicate_paper`` does it for the paper's rows through ``sweep``, cached;
``verdict_lines`` answers the comparison's questions (does loaning pay, what does
elastic scaling buy) in one line each, with the interval.
``simulate(..., policy=obj)`` runs a policy of your own in the compiled engine
(``Policy``: its hooks, called with a read-only ``aryl.ClusterState``; ``hooks``).

This package is the face of two others and holds no code: the engine, one run
(``aryl.engine``), and the studies built on it (``aryl.studies``). Each name below is
re-exported from its home once.
"""

from ..engine.config import Cluster, Config
from ..engine.hooks import Epoch, Policy
from ..engine.metrics import SUMMARY_KEYS
from ..engine.provenance import Provenance
from ..engine.result import InvariantError, Result, load
from ..engine.scenarios import (
    ELASTIC_SELECTIONS,
    SCENARIOS,
    apply_prediction_error,
    describe,
    elastic_bound,
    scenario,
    scenario_config,
)
from ..engine.simulation import simulate
from ..engine.storage import ResultFileError
from ..studies.compare import compare
from ..studies.comparison import Comparison
from ..studies.paper import (
    BASELINE,
    ELASTIC_ROW,
    LOANING_ROWS,
    OWN_POLICY_BASE,
    PAPER_ELASTIC_CUT,
    PAPER_POLLUX_SCALING,
    PAPER_TABLE3,
    POLLUX_COMPARISON,
    POLLUX_ROWS,
    own_policy_features,
    paper_runs,
    pollux_beside_paper,
    pollux_nodes,
    running_time_cut,
    speedups,
)
from ..studies.paper_orderings import ORDERINGS
from ..studies.paper_replications import (
    PAPER_POINTS,
    POLLUX_POINTS,
    PaperPlan,
    paper_plan,
    replicate_paper,
)
from ..studies.reference import reference_problems
from ..studies.replications import check_orderings
from ..studies.sizing import Sizing, size_cluster
from ..studies.sweep import (
    PARAMETERS,
    sweep,
    sweep_points,
    sweep_summary,
)
from ..studies.verdict import verdict_lines

__all__ = [
    "BASELINE",
    "Cluster",
    "ELASTIC_ROW",
    "ELASTIC_SELECTIONS",
    "Comparison",
    "Config",
    "Epoch",
    "InvariantError",
    "LOANING_ROWS",
    "ORDERINGS",
    "OWN_POLICY_BASE",
    "PAPER_ELASTIC_CUT",
    "PAPER_POINTS",
    "POLLUX_POINTS",
    "PaperPlan",
    "PAPER_POLLUX_SCALING",
    "PAPER_TABLE3",
    "PARAMETERS",
    "POLLUX_COMPARISON",
    "POLLUX_ROWS",
    "Policy",
    "Provenance",
    "Result",
    "ResultFileError",
    "SCENARIOS",
    "SUMMARY_KEYS",
    "Sizing",
    "apply_prediction_error",
    "check_orderings",
    "compare",
    "describe",
    "elastic_bound",
    "load",
    "own_policy_features",
    "paper_runs",
    "paper_plan",
    "replicate_paper",
    "running_time_cut",
    "pollux_beside_paper",
    "pollux_nodes",
    "scenario",
    "scenario_config",
    "simulate",
    "size_cluster",
    "speedups",
    "sweep",
    "sweep_points",
    "sweep_summary",
    "verdict_lines",
    "reference_problems",
]
