"""The studies: what many runs of the engine (``aryl.engine``) answer.

``compare`` runs several configurations on the same input (``comparison``: the table),
replicated over seeds or trace windows with 95% intervals (``replications``,
``confidence``); ``reference`` says when its reference row is unfit to compare against;
``verdict`` and ``loaning`` answer its questions in one line each; ``groups`` splits the
answers per team or user. ``paper`` lists the paper's rows (with controls and ablations)
and its published figures, ``paper_replications`` replicates them; ``sizing`` sizes a
cluster to a trace; ``windowed`` runs one configuration over a trace's time windows
(a trace too long for one process); ``sweep`` runs a grid of configurations (``sweep_runs``: one point,
``sweep_engines``: a process pool or Ray), cached. This package imports the engine; the
engine never imports it. Users reach both through ``aryl.sim``.
"""

from .compare import compare
from .comparison import Comparison
from .paper import (
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
from .paper_orderings import ORDERINGS
from .paper_replications import (
    PAPER_POINTS,
    POLLUX_POINTS,
    PaperPlan,
    paper_plan,
    replicate_paper,
)
from .reference import reference_problems
from .replications import check_orderings
from .sizing import Sizing, size_cluster
from .sweep import (
    PARAMETERS,
    sweep,
    sweep_points,
    sweep_summary,
)
from .verdict import verdict_lines
from .windowed import Windowed, WindowRun, simulate_windows

__all__ = [
    "BASELINE",
    "check_orderings",
    "compare",
    "Comparison",
    "ELASTIC_ROW",
    "LOANING_ROWS",
    "ORDERINGS",
    "OWN_POLICY_BASE",
    "own_policy_features",
    "PAPER_ELASTIC_CUT",
    "paper_plan",
    "PAPER_POINTS",
    "PAPER_POLLUX_SCALING",
    "paper_runs",
    "PAPER_TABLE3",
    "PaperPlan",
    "PARAMETERS",
    "pollux_beside_paper",
    "POLLUX_COMPARISON",
    "pollux_nodes",
    "POLLUX_POINTS",
    "POLLUX_ROWS",
    "reference_problems",
    "replicate_paper",
    "running_time_cut",
    "size_cluster",
    "simulate_windows",
    "Sizing",
    "speedups",
    "sweep",
    "sweep_points",
    "sweep_summary",
    "verdict_lines",
    "Windowed",
    "WindowRun",
]
