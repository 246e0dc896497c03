"""Where a sweep's runs run: serial, threads, processes, or Ray (local or a cluster).

``choose_engine`` picks one (``"auto"``: Ray if installed, else threads);
``run_local`` and ``run_ray`` run a list of runs and yield each as it finishes, with
its wall and CPU seconds. ``connect_ray`` starts or joins Ray, holding Ctrl-C while it
starts and trying a ``ray://`` connection again when Ray's client server fails to
start this client's server.
"""

from __future__ import annotations

import contextlib
import math
import pickle
import signal
import sys
import threading
import time
import warnings
from concurrent.futures import Future
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    get_args,
)

from ..engine.result import Result
from ..loopback import LOOPBACK, QUIET_RAY, is_loopback, on_loopback
from ..policy import policy_name
from ..typing import SweepEngine
from .sweep_runs import Trace, is_policy_name, run_point, trace_name

ENGINES = get_args(SweepEngine)


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
        except ImportError:  # connect_ray names the missing install
            return pickle.dumps
        return cloudpickle.dumps
    return pickle.dumps


_WORKER_TRACES: Dict[str, Trace] = {}


def _init_worker(traces: Dict[str, Trace]) -> None:
    _WORKER_TRACES.update(traces)


#: A finished run: its result, wall seconds, CPU seconds and peak memory (bytes).
Timed = Tuple[Result, float, float, float]

#: Linux's per-process files: writing ``5`` to the first resets the second's
#: ``VmHWM`` (peak resident memory) to the memory resident now.
_CLEAR_REFS, _STATUS = "/proc/self/clear_refs", "/proc/self/status"


def _timed(point: Mapping[str, Any], trace: Trace, check: bool) -> Timed:
    """One run with its wall time, its process's CPU time and its process's peak
    resident memory during the run (all its threads: exact with one run per
    process, as the process and Ray engines run them; the peak is NaN where Linux's
    ``/proc`` cannot reset it)."""
    reset = _reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    result = run_point(point, trace, check)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return result, wall, cpu, _peak_bytes() if reset else math.nan


def _reset_peak() -> bool:
    """Reset this process's peak resident memory to what it holds now; whether it
    could (Linux 4.0 on: not elsewhere, nor where ``/proc`` is read-only)."""
    try:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_bytes() -> float:
    """This process's peak resident memory since it was last reset (bytes), NaN
    when ``/proc`` does not say."""
    try:
        with open(_STATUS) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return math.nan


def _timed_in_worker(point: Mapping[str, Any], name: str, check: bool) -> Timed:
    return _timed(point, _WORKER_TRACES[name], check)


Todo = Tuple[int, Dict[str, Any]]  # (row number, point)


#: (row number, result, wall s, CPU s, peak memory bytes)
Finished = Tuple[int, Result, float, float, float]


def run_local(
    todo: List[Todo], traces: Dict[str, Trace], engine: str, workers: int, check: bool
) -> Iterator[Finished]:
    """Run ``todo`` (row number, point) on ``engine`` ("serial", "threads" or
    "processes") with ``workers`` at once; yield each run as it finishes. Ctrl-C or a
    run's error cancels the runs not started.

    A process pool gets one trace once per worker; several traces (a trace cut into
    windows) go each with its own runs, so that a worker never holds a trace it
    does not replay (a window's worker holds its window, not the whole trace)."""
    if engine == "serial":
        for i, point in todo:
            yield (i, *_timed(point, traces[trace_name(point)], check))
        return
    import concurrent.futures as cf
    import multiprocessing

    if engine == "threads":
        pool: cf.Executor = cf.ThreadPoolExecutor(workers)

        def submit(point: Mapping[str, Any]) -> Future[Timed]:
            return pool.submit(_timed, point, traces[trace_name(point)], check)
    elif len(traces) > 1:
        pool = cf.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn")
        )

        def submit(point: Mapping[str, Any]) -> Future[Timed]:
            return pool.submit(_timed, point, traces[trace_name(point)], check)
    else:
        pool = cf.ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(traces,),
        )

        def submit(point: Mapping[str, Any]) -> Future[Timed]:
            return pool.submit(_timed_in_worker, point, trace_name(point), check)

    with pool:
        futures = {submit(point): i for i, point in todo}
        try:
            for future in cf.as_completed(futures):
                yield (futures[future], *future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def start_local_ray(workers: int, **options: Any) -> Any:
    """Start a Ray on this machine with ``workers`` CPUs; the ``ray`` module.

    A new one (``address="local"``), not the cluster the machine's last `ray start`
    left as its "current" one; every process of it binds ``LOOPBACK`` only, with no
    dashboard and no metrics port. ``options`` go to ``ray.init`` (``_temp_dir=``)."""
    import ray

    with on_loopback():
        ray.init(
            address="local",
            num_cpus=workers,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address=LOOPBACK,
            _system_config=QUIET_RAY,
            **options,
        )
    return ray


def connect_ray(address: Optional[str], workers: int) -> Any:
    """The ``ray`` module, connected: to the cluster at ``address``, else to a local
    Ray started with ``workers`` CPUs on the loopback (``start_local_ray``; kept up
    for the next sweep), unless Ray is up already. Ctrl-C waits for Ray's start
    (``_ctrl_c_held``); a ``ray://`` connection whose per-client server failed to
    start is tried ``CLIENT_ATTEMPTS`` times; a failure is a one-line
    ``ConnectionError``."""
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
                if not address:
                    start_local_ray(workers)
                elif is_loopback(address):  # a cluster on this machine, as given
                    with on_loopback():
                        ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(address=address, log_to_driver=False)
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


def run_ray(
    todo: List[Todo],
    traces: Dict[str, Trace],
    address: Optional[str],
    workers: int,
    check: bool,
) -> Iterator[Finished]:
    """Run ``todo`` on Ray (``connect_ray``), one CPU per run, each trace sent once
    (put in Ray's object store: a run fetches only the trace it replays, a window's
    run its window); yield each run as it finishes. A run's own error is raised as itself; Ctrl-C or an
    error cancels the runs in flight."""
    ray = connect_ray(address, workers)
    remote = ray.remote(num_cpus=1)(_timed)
    refs = {name: ray.put(trace) for name, trace in traces.items()}
    pending = {
        remote.remote(point, refs[trace_name(point)], check): i for i, point in todo
    }
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                try:
                    result, seconds, cpu, peak = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    # The run's own error, as a local run raises it (Ray's wraps it
                    # in the remote traceback, coloured).
                    if isinstance(exc.cause, Exception):
                        raise exc.cause from None
                    raise
                yield pending.pop(ref), result, seconds, cpu, peak
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


def choose_engine(engine: str, address: Optional[str]) -> str:
    """The engine a sweep runs on: ``engine`` checked; ``"auto"`` is Ray if installed,
    else local threads (with a warning; ``address`` then needs Ray)."""
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
