"""A sweep's runs: their parameters, how a run is checked, built and fingerprinted.

A run is a mapping of ``PARAMETERS`` (plus any ``aryl.sim.Config`` field):
``resolve`` fills in and checks it, ``run_point`` simulates it on a trace with the
recipe ``aryl simulate`` uses (``aryl.engine.runs``), and ``run_fingerprint`` names it in
the sweep cache (the trace's contents, the resolved run and the code).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    get_args,
)

import numpy as np
import pandas as pd

from .. import validation
from ..defaults import (
    ANY_TYPE_SHARE,
    ELASTIC_GPU_SHARE,
    ELASTIC_JOB_SHARE,
    ELASTIC_RANGE,
    ELASTIC_SELECTION,
    HETERO_SHARE,
    PLACEMENTS,
    SIMULATION_RECLAIM_POLICIES,
)
from ..defaults import SCHEDULE_POLICIES as POLICIES
from ..engine.config import Config
from ..engine.core_io import _config
from ..engine.provenance import code_fingerprint, fingerprint_frame, fingerprint_jobs
from ..engine.result import Result
from ..engine.runs import run_arguments, scenario_settings, trace_jobs
from ..engine.scenarios import ELASTIC_SELECTIONS, SCENARIOS
from ..engine.simulation import simulate
from ..policy import (
    check_policy,
    has_hook,
    load_policy,
    policy_identity,
    policy_name,
    run_copy,
)
from ..typing import GoodputPolicy
from .sweep_clusters import (
    gpu_types,
    is_server_list,
    resolve_cluster,
    run_cluster,
    servers_fingerprint,
    training_gpus,
)

#: The parameters of a run besides ``Config``'s fields: name -> (default, meaning).
PARAMETERS: Dict[str, Tuple[Any, str]] = {
    "trace": (
        "embedded",
        "name of the trace in ``traces`` (default: the embedded ITP jobs "
        "with the Alibaba-2018 load)",
    ),
    "first_jobs": (None, "use only the trace's first N jobs (None: all)"),
    "training_servers": (64, "8-GPU V100 training servers"),
    "inference_servers": (64, "8-GPU T4 inference servers that can be lent"),
    "servers": (
        None,
        "the cluster as a list of servers (aryl.Server records, e.g. "
        "aryl.traces.read_servers(FILE)) instead of training_servers and "
        "inference_servers (None: those counts)",
    ),
    "scenario": ("basic", "which jobs are elastic/hetero (aryl.sim.SCENARIOS)"),
    "elastic_gpu_share": (
        ELASTIC_GPU_SHARE,
        "share of GPU-time held by elastic jobs (basic, advanced)",
    ),
    "elastic_selection": (
        ELASTIC_SELECTION,
        "how basic/advanced pick elastic jobs: gpu_time (elastic_gpu_share of the "
        "GPU-time) or jobs (elastic_job_share of the jobs, largest first)",
    ),
    "elastic_job_share": (
        ELASTIC_JOB_SHARE,
        "share of all jobs made elastic with elastic_selection=jobs",
    ),
    "elastic_range": (
        ELASTIC_RANGE,
        "an elastic job at w workers in the trace scales up to floor(range * w); "
        "inf: up to the training servers' GPUs",
    ),
    "hetero_share": (HETERO_SHARE, "share of all jobs made hetero (advanced)"),
    "policy": (
        None,
        "allocation policy (None: the scenario's; fifo for baseline, else aryl), "
        "or a policy of your own: an aryl.Policy object, or 'module:Class' / "
        "'path.py:Class' (imported by each worker)",
    ),
    "reclaim": ("aryl", "reclaim policy: aryl, scf, random or least-work"),
    "seed": (0, "seed of every random choice (GPU types, scenario, random reclaim)"),
    "any_type_share": (
        ANY_TYPE_SHARE,
        "share of unknown-type jobs that may run on any GPU type",
    ),
    "goodput_jobs": (
        False,
        "run the scenario's jobs as goodput-driven Pollux applications "
        "(traces.pollux_profiles, seeded) on the training servers split into 4-GPU "
        "nodes (sim.pollux_nodes), without inference servers: the Pollux rows",
    ),
}


#: GPUs per node of the cluster the goodput-driven jobs run on (``sim.pollux_nodes``).
GOODPUT_NODE_GPUS = 4


CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(Config))


Trace = Tuple[Any, Any]  # (job frame or list of Jobs, load frame / pairs / None)


def grid_points(
    base: Optional[Mapping[str, Any]], grid: Optional[Mapping[str, Sequence[Any]]]
) -> List[Dict[str, Any]]:
    """The runs of a sweep: ``base`` updated with each combination of ``grid``'s values.

    The first grid key varies slowest (``itertools.product`` order). Unknown names and
    empty value lists are a ``ValueError``.
    """
    base, grid = dict(base or {}), dict(grid or {})
    check_names([base, grid])
    for name, values in grid.items():
        if (
            isinstance(values, (str, bytes))
            or not isinstance(values, Sequence)
            or not len(values)
        ):
            raise ValueError(
                f"grid {name!r}: give a non-empty list of values, got {values!r}"
            )
    names = list(grid)
    return [
        {**base, **dict(zip(names, combo))}
        for combo in itertools.product(*grid.values())
    ]


def check_names(points: Sequence[Mapping[str, Any]]) -> None:
    """A ``ValueError`` naming any parameter that is neither in ``PARAMETERS`` nor a
    ``Config`` field."""
    given = {name for point in points for name in point}
    known = sorted(PARAMETERS) + sorted(CONFIG_FIELDS)
    unknown = sorted(given - set(known))
    if unknown:
        hints = []
        for name in unknown:
            hint = validation.did_you_mean(name, known)[2:]  # "did you mean 'x'?"
            if hint:
                hints.append(hint if len(unknown) == 1 else f"{name!r}: {hint}")
        raise ValueError(
            f"unknown sweep parameter(s) {unknown}"
            f"{''.join(': ' + h if i == 0 else ', ' + h for i, h in enumerate(hints))}"
            f" (expected some of {known})"
        )


def resolve(point: Mapping[str, Any]) -> Dict[str, Any]:
    """A run's complete settings: ``PARAMETERS`` filled in, policy and ``config`` resolved.

    Returns the parameters (defaults filled) plus ``"config"``: the full ``Config`` as a
    dict (scenario preset, then the point's Config fields). Unknown names, policies,
    scenarios and placements and bad counts are a ``ValueError`` here, before anything
    runs; the simulator checks the rest.
    """
    p = {
        name: _as_default_type(point.get(name, default), default)
        for name, (default, _) in PARAMETERS.items()
    }
    validation.text(p["scenario"], "scenario", SCENARIOS)
    p["goodput_jobs"] = validation.flag(p["goodput_jobs"], "goodput_jobs")
    p["policy"], preset = scenario_settings(p["scenario"], p["policy"])
    # The simulator's own checks, so a sweep and simulate say the same.
    if is_policy_name(p["policy"]):
        # tiresias too, as simulate takes it (its loaning rule is simulate's to check)
        kernels = (*POLICIES, "tiresias")
        goodput = (*kernels, *get_args(GoodputPolicy)) if p["goodput_jobs"] else kernels
        validation.text(p["policy"], "policy", goodput)
    else:
        own_policy(p["policy"])
    validation.text(p["reclaim"], "reclaim policy", SIMULATION_RECLAIM_POLICIES)
    for name in ("training_servers", "inference_servers", "seed"):
        if (
            isinstance(p[name], bool)
            or not isinstance(p[name], (int, np.integer))
            or p[name] < 0
        ):
            raise ValueError(f"{name} must be an integer >= 0, got {p[name]!r}")
        p[name] = int(p[name])
    resolve_cluster(p, point)
    if p["first_jobs"] is not None:
        p["first_jobs"] = validation.integer(p["first_jobs"], "first_jobs", 1)
    for share in (
        "elastic_gpu_share",
        "elastic_job_share",
        "hetero_share",
        "any_type_share",
    ):
        p[share] = validation.real(p[share], share, 0.0, 1.0)
    validation.text(p["elastic_selection"], "elastic_selection", ELASTIC_SELECTIONS)
    p["elastic_range"] = validation.real(
        p["elastic_range"], "elastic_range", 1.0, finite=False
    )
    defaults = Config()
    config = {
        **preset,
        **{
            k: _as_default_type(
                gpu_speed_value(v) if k == "gpu_speed" else v, getattr(defaults, k)
            )
            for k, v in point.items()
            if k in CONFIG_FIELDS
        },
    }
    checked = _config(config)
    validation.check_config(checked, PLACEMENTS)  # every field, before any run
    p["config"] = dataclasses.asdict(checked)
    return p


#: How a sweep's ``gpu_speed`` may be given, for its error message.
GPU_SPEED_SYNTAX = (
    "give TYPE=SPEED as --gpu-speed takes it, types of one run joined by ';' "
    "(e.g. --grid 'gpu_speed=T4=0.25,T4=1' is two runs, --grid "
    "'gpu_speed=T4=0.25;P100=0.5' one), or a JSON object per run (--grid "
    '\'gpu_speed={"T4":0.25},{"T4":1}\'; in Python a dict)'
)

_SPEED_PAIR = re.compile(r"^\s*([A-Za-z0-9_.+-]+)\s*=\s*(\S+?)\s*$")


def gpu_speed_value(value: Any) -> Any:
    """A run's ``gpu_speed`` as a dict: ``"T4=0.25"`` (``--gpu-speed``'s syntax; several
    types of one run joined by ``;``, ``"T4=0.25;P100=0.5"``) parsed, a mapping or
    ``None`` as given (the speeds' range is checked with the rest of the ``Config``).
    An integer speed is that float (``{"T4": 1}`` is ``T4=1``: the same run, the same
    cache key). Anything else is a ``ValueError`` that shows the accepted syntax."""
    if value is None:
        return value
    if isinstance(value, Mapping):
        return {k: _as_default_type(v, 1.0) for k, v in value.items()}
    if isinstance(value, str):
        speeds: Dict[str, float] = {}
        for part in value.split(";"):
            match = _SPEED_PAIR.match(part)
            speed = None
            if match is not None:
                try:
                    speed = float(match.group(2))
                except ValueError:
                    speed = None
            if match is None or speed is None:
                break
            speeds[match.group(1)] = speed
        else:
            return speeds
    raise ValueError(f"gpu_speed: cannot read {value!r}; {GPU_SPEED_SYNTAX}")


def _as_default_type(value: Any, default: Any) -> Any:
    """An integer given for a float setting as that float (``headroom=0`` is ``0.0``).

    So ``0`` and ``0.0`` are the same run, with the same cache key and column type.
    """
    if (
        isinstance(default, float)
        and isinstance(value, (int, np.integer))
        and not isinstance(value, bool)
    ):
        return float(value)
    return value


def run_fingerprint(resolved: Mapping[str, Any], trace_fingerprint: str) -> str:
    """SHA-256 of the trace's contents, the resolved run (trace name aside) and the code.

    The code is ``code_fingerprint()`` (the compiled module and the Python sources), not
    the version string, so a changed aryl never serves the old code's results.
    """
    run = {k: v for k, v in resolved.items() if k != "trace"}
    if run.get("servers") is not None:  # by content, not as a page of reprs
        run["servers"] = servers_fingerprint(run["servers"])
    if not is_policy_name(run["policy"]):  # its code and settings, not its address
        run["policy"] = policy_identity(own_policy(run["policy"]))
    text = json.dumps(
        {"trace": trace_fingerprint, "run": run, "code": code_fingerprint()},
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def trace_fingerprint(trace: Trace) -> str:
    """A hash of a trace's jobs and load (frames by value, job lists field by field)."""
    jobs, load = trace
    jobs_fp = (
        fingerprint_frame(jobs)
        if isinstance(jobs, pd.DataFrame)
        else fingerprint_jobs(jobs)
    )
    if load is None or isinstance(load, pd.DataFrame):
        load_fp = fingerprint_frame(load)
    else:
        load_fp = hashlib.sha256(np.asarray(load, dtype=float).tobytes()).hexdigest()[
            :16
        ]
    return f"{jobs_fp}-{load_fp}"


def embedded_fingerprint() -> str:
    """A hash of the embedded trace files' bytes (cheaper than parsing them)."""
    from importlib.resources import files

    from ..traces.reading import DEFAULT_JOBS, DEFAULT_LOAD

    data = files("aryl") / "data"
    h = hashlib.sha256()
    for name in (DEFAULT_JOBS, DEFAULT_LOAD):
        h.update((data / name).read_bytes())
    return "embedded-" + h.hexdigest()[:16]


def run_point(point: Mapping[str, Any], trace: Trace, check: bool = True) -> Result:
    """Simulate one run of a sweep (``point``: its parameters) on ``trace`` = (jobs, load).

    Builds the run as the module docstring says; the ``Result``'s
    ``provenance.inputs`` records the trace's name and the point's parameters.
    """
    p = resolve(point)
    jobs, load = trace
    label = (
        ", ".join(f"{k}={display_value(v)}" for k, v in point.items() if k != "trace")
        or "sweep run"
    )
    # A policy object is copied per run (as a process or Ray worker unpickles
    # its own), so runs on threads never share a policy's state.
    policy = p["policy"]
    if not is_policy_name(policy):
        policy = run_copy(own_policy(policy))
    cluster = run_cluster(p)
    run = run_arguments(
        trace_jobs(jobs, p["first_jobs"], p["any_type_share"], p["seed"]),
        load,
        scenario_name=p["scenario"],
        seed=p["seed"],
        policy=policy,
        reclaim=p["reclaim"],
        config=p["config"],
        elastic_gpu_share=p["elastic_gpu_share"],
        hetero_share=p["hetero_share"],
        elastic_selection=p["elastic_selection"],
        elastic_job_share=p["elastic_job_share"],
        elastic_range=p["elastic_range"],
        elastic_max_gpus=(
            training_gpus(cluster) if math.isinf(p["elastic_range"]) else None
        ),
    )
    if p["goodput_jobs"]:  # the Pollux rows, as paper_runs builds them
        from ..traces.pollux_mapping import pollux_profiles
        from .paper import pollux_nodes

        mapped = pollux_profiles(run["jobs"], p["seed"], GOODPUT_NODE_GPUS)
        run.update(jobs=mapped, inference_load=None)
        cluster = pollux_nodes(cluster, GOODPUT_NODE_GPUS)
    result = simulate(cluster=cluster, label=label, **run)
    if check:
        result.check()
    if result.provenance is not None:
        result.provenance.inputs = {
            "trace": p["trace"],
            "sweep": _jsonable_point(point),
        }
    return result


def _jsonable_point(point: Mapping[str, Any]) -> Dict[str, Any]:
    values = {k: display_value(v) for k, v in point.items()}
    jsonable: Dict[str, Any] = json.loads(json.dumps(values, default=repr))
    return jsonable


def display_value(value: Any) -> Any:
    """A parameter's value as tables show it: a policy object by its name, a server
    list by its size and content's fingerprint."""
    if is_server_list(value):
        return f"{len(value):,} servers {servers_fingerprint(value)}"
    return (
        value
        if is_policy_name(value) or not has_hook(value, "allocate")
        else (policy_name(value))
    )


def is_policy_name(policy: Any) -> bool:
    """Whether a sweep's ``policy`` is a built-in's name (or None: the scenario's),
    not a policy object or a ``module:Class`` spec."""
    return policy is None or (isinstance(policy, str) and ":" not in policy)


def own_policy(policy: Any) -> Any:
    """A sweep's policy of your own as an object: a ``module:Class`` spec loaded
    (``aryl.policy.load_policy``), an object checked (``check_policy``)."""
    if isinstance(policy, str):
        return load_policy(policy)
    check_policy(policy)
    return policy


def trace_name(point: Mapping[str, Any]) -> str:
    """The name of the trace a run replays (default: the embedded one)."""
    name: str = point.get("trace", PARAMETERS["trace"][0])
    return name


def check_gpu_names(
    points: Sequence[Mapping[str, Any]],
    resolved: Sequence[Mapping[str, Any]],
    traces: Mapping[str, Trace],
) -> None:
    """Each run's ``gpu_speed`` names checked against its trace's and cluster's GPU
    types (``validation.run_gpu_speeds``) once, here, before any run: a run on Ray or
    in a process would raise only when it starts, and its warnings would be lost."""
    from ..traces import UNKNOWN_GPU_TYPES, load_default

    checked = set()
    for point, run in zip(points, resolved):
        speeds, name = run["config"]["gpu_speed"], trace_name(point)
        cluster = (run["training_servers"], run["inference_servers"])
        speeds_text = json.dumps(speeds, sort_keys=True)
        key = (name, speeds_text, cluster, display_value(run["servers"]))
        if key in checked:
            continue
        checked.add(key)
        jobs = traces[name][0] if name in traces else load_default()[0]
        named: Any
        if isinstance(jobs, pd.DataFrame):
            named = jobs["gpu_type"] if "gpu_type" in jobs else []
        else:
            named = [getattr(j, "gpu_type", None) for j in jobs]
        required = {str(t) for t in pd.unique(pd.Series(named, dtype=object).dropna())}
        unknown = {t for t in required if t.strip().lower() in UNKNOWN_GPU_TYPES}
        validation.run_gpu_speeds(speeds, gpu_types(run) | (required - unknown))
