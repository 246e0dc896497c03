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

from ..engine import *  # noqa: F403  (each name's home: aryl.engine or aryl.studies)
from ..engine import __all__ as _engine_names
from ..studies import *  # noqa: F403
from ..studies import __all__ as _studies_names

__all__ = [*_engine_names, *_studies_names]
