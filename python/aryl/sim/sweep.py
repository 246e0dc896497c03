"""Sweeps: every combination of a parameter grid, run in parallel on Ray, cached on disk.

``sweep(base, grid)`` builds one run per combination of ``grid``'s values (on top of the
fixed parameters ``base``), runs the runs not in the cache on Ray (a local Ray by
default, ``address=`` for an existing cluster), shows one progress bar with an ETA, and
returns one tidy ``DataFrame``: a row per run with its parameters and summary.

A run's parameters (``PARAMETERS``, plus any ``aryl.sim.Config`` field such as
``headroom`` or ``lend_hold``) say how it is built, with the recipe ``aryl simulate``
uses (``aryl.sim.runs``): the trace's job frame (its first ``first_jobs`` rows) becomes jobs with
``aryl.traces.to_jobs(any_type_share, seed)``, ``aryl.sim.scenario(scenario, seed,
elastic_gpu_share, hetero_share)`` makes some of them elastic, and ``aryl.sim.simulate``
replays them on ``Cluster(training_servers, inference_servers)`` with the trace's load,
the scenario's preset settings (``scenario_config``) overridden by the Config fields
given, and ``seed``. So a sweep's row equals ``aryl simulate`` with the same options.

Every finished run is saved (``Result.save``) in the cache under a fingerprint of the
trace's contents, the run's resolved parameters and the code (the compiled module and
the Python sources, ``code_fingerprint``; not the version string): running the same
sweep again reads the rows back without simulating, an interrupted sweep resumes where
it stopped, and a changed aryl computes afresh. An entry is written whole and at once
(concurrent sweeps may share a cache); a damaged one is recomputed, with a warning
naming it. ``aryl.sim.load(row.saved)`` gives a row's full ``Result``.

Engines: ``"ray"`` (``pip install 'aryl[ray]'``); ``"threads"`` (the simulator releases
the GIL), the fallback ``"auto"`` takes when Ray is not installed; ``"processes"``, a
local process pool (a script using it needs an ``if __name__ == "__main__":`` guard);
and ``"serial"`` for small sweeps and debugging.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
import os
import pickle
import signal
import sys
import threading
import time
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
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
from ..policy import (
    check_policy,
    has_hook,
    load_policy,
    policy_identity,
    policy_name,
    run_copy,
)
from ..typing import GoodputPolicy, SweepEngine
from .config import Cluster, Config
from .metrics import SUMMARY_KEYS
from .provenance import (
    aryl_version,
    code_fingerprint,
    fingerprint_frame,
    fingerprint_jobs,
    machine,
    source_commit,
)
from .result import Result
from .runs import run_arguments, scenario_settings, trace_jobs
from .scenarios import ELASTIC_SELECTIONS, SCENARIOS
from .simulation import _config, simulate
from .storage import (
    ResultFileError,
    read_regular,
    same_value,
    saved_summary,
    write_folder,
    write_result,
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
    "reclaim": ("aryl", "reclaim policy: aryl, scf or random"),
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
_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(Config))
ENGINES = get_args(SweepEngine)
Trace = Tuple[Any, Any]  # (job frame or list of Jobs, load frame / pairs / None)


def default_cache_dir() -> Path:
    """``$ARYL_CACHE_DIR``, else ``$XDG_CACHE_HOME/aryl/sweeps``, else ``~/.cache/aryl/sweeps``."""
    if os.environ.get("ARYL_CACHE_DIR"):
        return Path(os.environ["ARYL_CACHE_DIR"])
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return Path(root) / "aryl" / "sweeps"


def grid_points(
    base: Optional[Mapping[str, Any]], grid: Optional[Mapping[str, Sequence[Any]]]
) -> List[Dict[str, Any]]:
    """The runs of a sweep: ``base`` updated with each combination of ``grid``'s values.

    The first grid key varies slowest (``itertools.product`` order). Unknown names and
    empty value lists are a ``ValueError``.
    """
    base, grid = dict(base or {}), dict(grid or {})
    _check_names([base, grid])
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


def _check_names(points: Sequence[Mapping[str, Any]]) -> None:
    """A ``ValueError`` naming any parameter that is neither in ``PARAMETERS`` nor a
    ``Config`` field."""
    given = {name for point in points for name in point}
    unknown = sorted(given - set(PARAMETERS) - set(_CONFIG_FIELDS))
    if unknown:
        raise ValueError(
            f"unknown sweep parameter(s) {unknown}; expected some of "
            f"{sorted(PARAMETERS) + sorted(_CONFIG_FIELDS)}"
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
        goodput = POLICIES + get_args(GoodputPolicy) if p["goodput_jobs"] else POLICIES
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
    Cluster(p["training_servers"], p["inference_servers"])  # its size limit, up front
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
            k: _as_default_type(v, getattr(defaults, k))
            for k, v in point.items()
            if k in _CONFIG_FIELDS
        },
    }
    checked = _config(config)
    validation.check_config(checked, PLACEMENTS)  # every field, before any run
    p["config"] = dataclasses.asdict(checked)
    return p


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


def _fingerprint(resolved: Mapping[str, Any], trace_fingerprint: str) -> str:
    """SHA-256 of the trace's contents, the resolved run (trace name aside) and the code.

    The code is ``code_fingerprint()`` (the compiled module and the Python sources), not
    the version string, so a changed aryl never serves the old code's results.
    """
    run = {k: v for k, v in resolved.items() if k != "trace"}
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


def _embedded_fingerprint() -> str:
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
        ", ".join(f"{k}={_shown(v)}" for k, v in point.items() if k != "trace")
        or "sweep run"
    )
    # A policy object is copied per run (as a process or Ray worker unpickles
    # its own), so runs on threads never share a policy's state.
    policy = p["policy"]
    if not is_policy_name(policy):
        policy = run_copy(own_policy(policy))
    cluster = Cluster(p["training_servers"], p["inference_servers"])
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
            cluster.training_servers * cluster.gpus_per_server
            if math.isinf(p["elastic_range"])
            else None
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
    shown = {k: _shown(v) for k, v in point.items()}
    jsonable: Dict[str, Any] = json.loads(json.dumps(shown, default=repr))
    return jsonable


def _shown(value: Any) -> Any:
    """A parameter's value as tables show it: a policy object by its name."""
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


def check_shippable(points: Sequence[Mapping[str, Any]], engine: str) -> None:
    """A ``ValueError`` when a point's policy object cannot reach ``engine``'s workers.

    Processes unpickle it (its class imported by name), Ray cloudpickles it;
    threads and serial runs copy it. A ``module:Class`` spec is imported by each
    worker, so it always ships.
    """
    if engine not in ("processes", "ray"):
        return
    for point in points:
        policy = point.get("policy")
        if is_policy_name(policy) or isinstance(policy, str):
            continue
        name, cls = policy_name(policy), type(policy)
        main = sys.modules.get("__main__")
        if (
            engine == "processes"
            and cls.__module__ == "__main__"
            and not getattr(main, "__file__", None)
        ):
            raise ValueError(
                f"engine 'processes' ships policy {name!r} to worker processes by "
                f"pickle, and they cannot import its class {cls.__qualname__}: it is "
                "defined in an interactive session; define it in a module and pass "
                "it as an object or as 'module:Class', or use engine='threads'"
            )
        try:
            _pickler(engine)(policy)
        except Exception as error:
            raise ValueError(
                f"engine {engine!r} ships policy {name!r} to its workers by pickle, "
                f"which fails: {type(error).__name__}: {error}; define its class at "
                "the top level of a module (and pass it as 'module:Class' if its "
                "state cannot be pickled), or use engine='threads'"
            ) from None


def _pickler(engine: str) -> Any:
    if engine == "ray":
        try:
            from ray import cloudpickle
        except ImportError:  # _ray names the missing install
            return pickle.dumps
        return cloudpickle.dumps
    return pickle.dumps


# ---- engines -------------------------------------------------------------------------------

_WORKER_TRACES: Dict[str, Trace] = {}


def _init_worker(traces: Dict[str, Trace]) -> None:
    _WORKER_TRACES.update(traces)


#: A finished run: its result, wall seconds and CPU seconds.
Timed = Tuple[Result, float, float]


def _timed(point: Mapping[str, Any], trace: Trace, check: bool) -> Timed:
    """One run with its wall time and its process's CPU time (all its threads: exact
    with one run per process, as the process and Ray engines run them)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = run_point(point, trace, check)
    return result, time.perf_counter() - start, time.process_time() - cpu


def _timed_in_worker(point: Mapping[str, Any], name: str, check: bool) -> Timed:
    return _timed(point, _WORKER_TRACES[name], check)


Todo = Tuple[int, Dict[str, Any]]  # (row number, point)
Finished = Tuple[int, Result, float, float]  # (row number, result, wall s, CPU s)


def _run_local(
    todo: List[Todo], traces: Dict[str, Trace], engine: str, workers: int, check: bool
) -> Iterator[Finished]:
    if engine == "serial":
        for i, point in todo:
            yield (i, *_timed(point, traces[point.get("trace", "embedded")], check))
        return
    import concurrent.futures as cf
    import multiprocessing

    if engine == "threads":
        pool: cf.Executor = cf.ThreadPoolExecutor(workers)

        def submit(point: Mapping[str, Any]) -> Future[Timed]:
            return pool.submit(_timed, point, traces[_trace(point)], check)
    else:
        pool = cf.ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(traces,),
        )

        def submit(point: Mapping[str, Any]) -> Future[Timed]:
            return pool.submit(_timed_in_worker, point, _trace(point), check)

    with pool:
        futures = {submit(point): i for i, point in todo}
        try:
            for future in cf.as_completed(futures):
                yield (futures[future], *future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _ray(address: Optional[str], workers: int) -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "sweeping on Ray needs Ray: pip install 'aryl[ray]' (or pass "
            "engine='processes' for a local process pool)"
        ) from exc
    attempts = CLIENT_ATTEMPTS if (address or "").startswith("ray://") else 1
    for attempt in range(1, attempts + 1):
        if ray.is_initialized():
            break
        try:
            with _ctrl_c_held():
                if address:
                    ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(
                        num_cpus=workers, include_dashboard=False, log_to_driver=False
                    )
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # Ray's own types; its gist, not its traceback
            if attempt < attempts and _client_server_failed(exc):
                print(
                    f"aryl: Ray's client server at {address} could not start the "
                    f"server for this client ({_gist(exc)}); trying again "
                    f"({attempt + 1} of {attempts})",
                    file=sys.stderr,
                )
                continue
            where = f"the Ray cluster at {address}" if address else "a local Ray"
            raise ConnectionError(
                f"could not start {where}: {type(exc).__name__}: {_gist(exc)} "
                "(engine='processes' runs the sweep without Ray)"
            ) from None
    return ray


#: Connections tried through Ray's client (``ray://``). Its server starts one server
#: per client, which on a loaded head node now and then dies at once or is not up in
#: time (Ray's own client tests flake so); each attempt starts another.
CLIENT_ATTEMPTS = 3


def _client_server_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is Ray's client server failing to start this client's server
    (worth another attempt), not a refusal (a version mismatch, bad credentials)."""
    text = str(exc)
    return isinstance(exc, ConnectionAbortedError) and (
        "Starting Ray client server failed" in text
        or "Proxy failed to Connect to backend" in text
    )


def _gist(exc: BaseException) -> str:
    """An exception's message in one line: its first line, and its last where they
    differ (Ray's client passes the server's whole traceback, whose last line says
    what failed)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C (and SIGTERM) while Ray starts, and deliver it once Ray has
    started (or failed to).

    Ray cut short half-way through ``ray.init`` is left half-started: its exit handler
    can then crash the process (a segfault) and leave its processes running. A second
    signal is not held: it interrupts at once. Only the main thread handles signals.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: List[int] = []

    def hold(signum: int, frame: Any) -> None:
        if held:
            raise KeyboardInterrupt
        held.append(signum)

    signals = (signal.SIGINT, signal.SIGTERM)
    previous: Dict[int, Any] = {
        signum: signal.signal(signum, hold) for signum in signals
    }
    try:
        yield
    except SystemExit as stop:
        # ray.init puts its own SIGTERM handler first thing (documented: it exits
        # with the signal's number); a SIGTERM then ends init this way: held too
        if stop.code != signal.SIGTERM:
            raise
        held.append(signal.SIGTERM)
    finally:
        for signum in signals:
            signal.signal(signum, previous[signum] or signal.SIG_DFL)
        if held:  # as the handler before would have
            before = previous[held[0]]
            if callable(before):
                before(held[0], None)
            elif before == signal.SIG_DFL and held[0] == signal.SIGTERM:
                signal.raise_signal(signal.SIGTERM)  # Python's default: ends it
            elif before != signal.SIG_IGN:
                raise KeyboardInterrupt


def _run_ray(
    todo: List[Todo],
    traces: Dict[str, Trace],
    address: Optional[str],
    workers: int,
    check: bool,
) -> Iterator[Finished]:
    ray = _ray(address, workers)
    remote = ray.remote(num_cpus=1)(_timed)
    refs = {name: ray.put(trace) for name, trace in traces.items()}
    pending = {remote.remote(point, refs[_trace(point)], check): i for i, point in todo}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                try:
                    result, seconds, cpu = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    # The run's own error, as a local run raises it (Ray's wraps it
                    # in the remote traceback, coloured).
                    if isinstance(exc.cause, Exception):
                        raise exc.cause from None
                    raise
                yield pending.pop(ref), result, seconds, cpu
    except BaseException:
        for ref in pending:
            try:
                ray.cancel(ref)
            except Exception:  # best effort: Ray may be going down (Ctrl-C) already
                pass
        # Drop the references now: freed after a ray.shutdown, Ray complains of them.
        pending.clear()
        refs.clear()
        raise


def _trace(point: Mapping[str, Any]) -> str:
    name: str = point.get("trace", PARAMETERS["trace"][0])
    return name


def _engine(engine: str, address: Optional[str]) -> str:
    if engine not in ENGINES:
        raise ValueError(
            f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}"
        )
    if engine != "auto":
        return engine
    try:
        import ray  # noqa: F401
    except ImportError:
        if address:
            raise ImportError("address= needs Ray: pip install 'aryl[ray]'") from None
        # Threads, not a process pool: a spawned pool re-runs the caller's script, so
        # a script without an `if __name__ == "__main__":` guard would fail in it.
        warnings.warn(
            "Ray is not installed (pip install 'aryl[ray]'); running the sweep on "
            "local threads (engine='processes' for a process pool)",
            stacklevel=3,
        )
        return "threads"
    return "ray"


# ---- progress ------------------------------------------------------------------------------


class SweepProgress:
    """One line on stderr across a sweep's runs: done/total, cached, elapsed, ETA."""

    def __init__(self, total: int, cached: int, enabled: bool, stream: Any = None):
        self.total, self.cached, self.done = total, cached, cached
        self.enabled, self.stream = enabled, stream or sys.stderr
        self.start = time.perf_counter()
        self.first: Optional[float] = None
        self.show()

    def step(self) -> None:
        """One more run finished."""
        self.done += 1
        if self.first is None:
            self.first = time.perf_counter()
        self.show()

    def stop(self) -> None:
        """The sweep stopped early: end the bar's line, so what follows starts on its own."""
        if self.enabled and self.total and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()

    def eta(self) -> Optional[float]:
        """Seconds left, None before the first run finished.

        From the pace since the first run finished (so starting the engine, e.g. Ray, does
        not count), or from the elapsed time while only one has.
        """
        computed = self.done - self.cached
        if computed == 0 or self.first is None:
            return None
        now = time.perf_counter()
        pace = (now - self.first) / (computed - 1) if computed > 1 else now - self.start
        return pace * (self.total - self.done)

    def show(self) -> None:
        """Redraw the line."""
        if not self.enabled or not self.total:
            return
        filled = int(30 * self.done / self.total)
        eta = self.eta()
        elapsed = time.perf_counter() - self.start
        self.stream.write(
            f"\rsweep {self.done:>4}/{self.total} runs [{'#' * filled}{'.' * (30 - filled)}] "
            f"{self.done / self.total:4.0%}  {self.cached} cached  {_clock(elapsed)} elapsed"
            f"  ETA {'?' if eta is None else _clock(eta)}  "
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def _default_progress() -> bool:
    return sys.stderr.isatty() or "ipykernel" in sys.modules


# ---- the sweep -------------------------------------------------------------------------------


def sweep(
    base: Optional[Mapping[str, Any]] = None,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    *,
    traces: Optional[Mapping[str, Trace]] = None,
    engine: SweepEngine = "auto",
    address: Optional[str] = None,
    workers: Optional[int] = None,
    cache: Union[bool, str, os.PathLike[str]] = True,
    progress: Optional[bool] = None,
    check: bool = True,
) -> pd.DataFrame:
    """Run every combination of ``grid`` on top of ``base``; one row per run.

    Parameters
    ----------
    base
        Parameters shared by every run: names of ``PARAMETERS`` (``trace``,
        ``first_jobs``, ``training_servers``, ``inference_servers``, ``scenario``,
        ``elastic_gpu_share``, ``hetero_share``, ``policy``, ``reclaim``, ``seed``,
        ``any_type_share``) or ``aryl.sim.Config`` fields (``headroom``, ``lend_hold``,
        ``loaning``, ...). Missing ones take their defaults.
    grid
        Parameter name -> list of values; every combination is one run (the first
        name varies slowest). E.g. ``{"inference_servers": [0, 16, 32], "headroom":
        [0.0, 0.2]}`` is 6 runs.
    traces
        Trace name -> ``(jobs, load)``: ``jobs`` a job frame (``aryl.traces.read_jobs``)
        or a list of ``aryl.Job``, ``load`` a load frame, ``(time_s, load)`` pairs or
        ``None`` (no loaning). ``"embedded"`` is ``aryl.traces.load_default()`` unless
        given here. Sweep over traces with ``grid={"trace": [...]}``.
    engine
        ``"auto"`` (Ray if installed, else local threads, with a warning),
        ``"ray"``, ``"processes"``, ``"threads"`` or ``"serial"``.
    address
        An existing Ray cluster (``"ray://host:10001"``, ``"auto"``); default: a
        local Ray started with ``workers`` CPUs (it stays up for the next sweep of this
        process; ``ray.shutdown()`` stops it). Ray workers must have aryl installed.
    workers
        Runs at once on a local engine (default: the CPU count).
    cache
        ``True``: ``default_cache_dir()``; a folder; or ``False`` for none. A
        read-only cache is read; when a run is not in it, the sweep raises
        ``PermissionError`` before anything runs.
    progress
        Show a progress bar on stderr (default: in a terminal or a notebook).
    check
        Check every run's invariants (``Result.check``).

    Returns
    -------
    pandas.DataFrame
        One row per run, in grid order: the grid's parameters, then every other
        parameter (resolved: the policy the scenario implies, ``Config`` fields given),
        the summary's keys (``aryl.sim.SUMMARY_KEYS``), and ``label``, ``jobs``
        (simulated), ``trace_fingerprint``, ``fingerprint`` (the cache key),
        ``aryl_version``, ``cached`` (read from the cache), ``seconds`` (the run's wall
        time when it ran), ``cpu_seconds`` (its CPU time: NaN on several threads, which
        share one process's clock) and ``saved`` (the cached ``Result``'s folder, or
        ``None``). A cache entry's ``row.json`` also keeps ``run_by``: the commit of
        aryl's source (``+dirty`` if changed), the command, the machine, the engine and
        when the run finished.
    """
    return sweep_points(
        grid_points(base, grid),
        varied=list(grid or {}),
        traces=traces,
        engine=engine,
        address=address,
        workers=workers,
        cache=cache,
        progress=progress,
        check=check,
    )


#: ``sweep_points``' progress callback: (runs done, of which found in the cache, runs in all).
SweepReport = Callable[[int, int, int], None]


def run_keys(
    points: Sequence[Mapping[str, Any]], traces: Optional[Mapping[str, Trace]] = None
) -> List[str]:
    """The cache keys of ``points`` (their entries' folder names in the cache), as
    ``sweep_points`` computes them: the trace's contents, the resolved run and the code.

    Bad parameters are a ``ValueError``, as in ``sweep``.
    """
    return _keys(points, traces)[0]


def _keys(
    points: Sequence[Mapping[str, Any]], traces: Optional[Mapping[str, Trace]]
) -> Tuple[List[str], List[str]]:
    """(each run's cache key, each run's trace fingerprint)."""
    _check_names(points)
    traces = dict(traces or {})
    needed = {_trace(p) for p in points}
    embedded = "embedded" in needed and "embedded" not in traces
    missing = sorted(needed - set(traces) - ({"embedded"} if embedded else set()))
    if missing:
        raise ValueError(
            f"unknown trace(s) {missing}; give them in traces= (known: {sorted(traces)})"
        )
    resolved = [resolve(p) for p in points]
    _check_gpu_names(points, resolved, traces)
    fps = {name: trace_fingerprint(traces[name]) for name in needed if name in traces}
    if embedded:
        fps["embedded"] = _embedded_fingerprint()
    trace_fps = [fps[_trace(p)] for p in points]
    return [_fingerprint(r, t) for r, t in zip(resolved, trace_fps)], trace_fps


def sweep_points(
    points: Sequence[Mapping[str, Any]],
    *,
    varied: Sequence[str] = (),
    traces: Optional[Mapping[str, Trace]] = None,
    engine: SweepEngine = "auto",
    address: Optional[str] = None,
    workers: Optional[int] = None,
    cache: Union[bool, str, os.PathLike[str]] = True,
    progress: Union[None, bool, SweepReport] = None,
    check: bool = True,
) -> pd.DataFrame:
    """Run the given runs (each a mapping of ``sweep``'s parameters); one row per run.

    ``sweep`` for a list of runs that need not form a grid (e.g. the rows of a
    comparison, each with its own settings): every run not in the cache runs on the
    engine, all at once, and is saved as soon as it finishes. ``varied``: parameter
    names to put first in the table. ``progress``: as ``sweep``'s, or a function
    called with (runs done, of which found in the cache, runs in all) once before
    anything runs and after every run. The rest as ``sweep``.
    """
    given: List[Dict[str, Any]] = [dict(p) for p in points]
    resolved = [resolve(p) for p in given]
    traces = dict(traces or {})
    keys, trace_fps = _keys(given, traces)
    folder = (
        None
        if cache is False
        else (default_cache_dir() if cache is True else Path(cache))
    )
    rows: List[Optional[Dict[str, Any]]] = [None] * len(points)
    for i, key in enumerate(keys):
        summary = _cached(folder, key)
        if summary is not None:
            rows[i] = {
                **summary,
                "cached": True,
                "seconds": summary.get("seconds", np.nan),
                "cpu_seconds": summary.get("cpu_seconds", np.nan),
            }
    todo = [(i, given[i]) for i in range(len(points)) if rows[i] is None]
    found = len(points) - len(todo)
    if callable(progress):
        report, bar = progress, None
    else:
        enabled = _default_progress() if progress is None else progress
        report, bar = None, SweepProgress(len(points), found, enabled)
    if report is not None:
        report(found, found, len(points))
    if todo and folder is not None:
        _check_writable(folder, len(todo), len(points))
    try:
        if todo:
            names = {_trace(p) for _, p in todo}
            if "embedded" in names and "embedded" not in traces:
                from ..traces import load_default

                traces["embedded"] = load_default()
            traces = {name: traces[name] for name in names}
            which = _engine(engine, address)
            check_shippable([p for _, p in todo], which)
            n = int(workers or os.cpu_count() or 1)
            runs = (
                _run_ray(todo, traces, address, n, check)
                if which == "ray"
                else _run_local(todo, traces, which, n, check)
            )
            shared = which == "threads" and n > 1  # one process's CPU for several runs
            for done, (i, result, seconds, cpu) in enumerate(runs, found + 1):
                fresh = {
                    **_row(result, keys[i], trace_fps[i]),
                    "cached": False,
                    "seconds": seconds,
                    "cpu_seconds": math.nan if shared else cpu,
                    "run_by": _run_by(which, n),
                }
                rows[i] = fresh
                if folder is not None:
                    _store(folder / keys[i], result, fresh)
                if report is not None:
                    report(done, found, len(points))
                else:
                    bar.step()  # type: ignore[union-attr]  # set when report is None
    except BaseException:  # Ctrl-C, a run's error: end the bar's line first
        if bar is not None:
            bar.stop()
        raise
    for i, row in enumerate(rows):
        row["saved"] = None if folder is None else str(folder / keys[i])  # type: ignore[index]
    return _frame(given, resolved, rows, list(varied))


def _check_writable(folder: Path, missing: int, total: int) -> None:
    """A ``PermissionError`` before anything runs when runs must be saved in a cache
    that cannot be written (a read-only cache that holds every run is only read)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the folder is made when the first run is saved
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(
            f"{folder}: the sweep cache is not writable, and {missing} of {total} "
            "runs are not in it; give a writable cache folder (or run without one: "
            "cache=False, --no-cache)"
        )


def _run_by(engine: str, workers: int) -> Dict[str, Any]:
    """Where and how a run ran: the commit of aryl's source, the command, the machine,
    the engine and when it finished (a sweep cache entry's ``row.json`` keeps it)."""
    return {
        "commit": source_commit(),
        "command": " ".join(sys.argv),
        "machine": machine(),
        "engine": engine,
        "workers": workers,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _check_gpu_names(
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
        speeds, name = run["config"]["gpu_speed"], _trace(point)
        key = (name, json.dumps(speeds, sort_keys=True))
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
        cluster = Cluster(run["training_servers"], run["inference_servers"])
        types = {cluster.training_gpu} if cluster.training_servers else set()
        types |= {cluster.inference_gpu} if cluster.inference_servers else set()
        validation.run_gpu_speeds(speeds, types | (required - unknown))


def _row(result: Result, key: str, trace_fp: str) -> Dict[str, Any]:
    p = result.provenance
    return {
        **result.summary(),
        "label": result.label,
        "jobs": len(result.jobs),
        "trace_fingerprint": trace_fp,
        "fingerprint": key,
        "aryl_version": p.aryl_version if p else aryl_version(),
    }


#: What a cache entry's ``row.json`` holds besides the summary.
_ROW_KEYS = {
    "label": str,
    "jobs": int,
    "trace_fingerprint": str,
    "fingerprint": str,
    "aryl_version": str,
}


def _store(entry: Path, result: Result, row: Dict[str, Any]) -> None:
    """Save ``result`` and its row as the cache entry ``entry``, whole and at once.

    The entry is the cache's own (named by its key): a damaged one is replaced.
    """

    def fill(tmp: Path) -> None:
        write_result(result, tmp)
        text = json.dumps({**row, "cached": None}, default=repr) + "\n"
        (tmp / "row.json").write_text(text)

    if entry.is_symlink():  # the cache's own name: replace the link, not its target
        entry.unlink()
    write_folder(entry, fill, overwrite=True)


def _cached(folder: Optional[Path], key: str) -> Optional[Dict[str, Any]]:
    """The row cached under ``key``; ``None`` (recompute) if absent or damaged, with a warning."""
    if folder is None or not (folder / key).exists():
        return None
    try:
        return _read_entry(folder / key, key)
    except (ResultFileError, FileNotFoundError) as exc:
        warnings.warn(f"{exc}; recomputing this sweep run", stacklevel=3)
        return None


def _read_entry(entry: Path, key: str) -> Dict[str, Any]:
    def damaged(why: str) -> ResultFileError:
        return ResultFileError(
            f"{entry / 'row.json'}: damaged sweep cache entry: {why}"
        )

    summary = saved_summary(entry)
    try:
        row: Any = json.loads(read_regular(entry / "row.json"))
    except (OSError, ValueError, RecursionError) as exc:
        raise damaged(f"unreadable ({exc})") from None
    if not isinstance(row, dict):
        raise damaged("not a JSON object")
    for name, kind in _ROW_KEYS.items():
        if not isinstance(row.get(name), kind) or isinstance(row.get(name), bool):
            raise damaged(f"{name!r} missing or not a {kind.__name__}")
    if row["fingerprint"] != key:
        raise damaged(f"its fingerprint {row['fingerprint']!r} is not its name")
    for name in SUMMARY_KEYS:
        if name not in row or not same_value(row[name], summary.get(name)):
            raise damaged(f"{name!r} differs from the saved result's summary (edited?)")
    return row


def _frame(
    points: List[Dict[str, Any]],
    resolved: List[Dict[str, Any]],
    rows: List[Any],
    varied: List[str],
) -> pd.DataFrame:
    given = [
        k for k in dict.fromkeys(k for p in points for k in p) if k in _CONFIG_FIELDS
    ]
    params = (
        varied
        + [k for k in PARAMETERS if k not in varied]
        + [k for k in given if k not in varied]
    )
    records = []
    for r, row in zip(resolved, rows):
        values = {
            k: _shown(r["config"][k] if k in _CONFIG_FIELDS else r[k]) for k in params
        }
        records.append(
            {
                **values,
                **{k: row[k] for k in SUMMARY_KEYS},
                **{
                    k: row[k]
                    for k in (
                        "label",
                        "jobs",
                        "trace_fingerprint",
                        "fingerprint",
                        "aryl_version",
                        "cached",
                        "seconds",
                        "cpu_seconds",
                        "saved",
                    )
                },
            }
        )
    return pd.DataFrame.from_records(records)
