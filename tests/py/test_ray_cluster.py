"""docs/ray.md's recipe on one machine playing two nodes: a Ray head and a worker node
started with `ray start` on the loopback (127.0.0.1, nothing listening beyond it), a
sweep connected by address and through Ray's client, equal to a local run."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ray")
RAY = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(RAY is None, reason="the ray command is not installed"),
    pytest.mark.skipif(
        not os.path.isdir("/proc"), reason="finds its processes in /proc"
    ),
]
GRID = ["--first-jobs", "300", "--training-servers", "4", "--inference-servers", "4"]
GRID += ["--grid", "seed=0,1,2"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: `ray start` keeping the loopback address it is given. Ray rewrites 127.0.0.1, as a
#: node's address or the cluster's, to the machine's network address
#: (ray-project/ray#59110), except where its clusters are single-machine
#: (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, as the head is started below), where a
#: second node is refused; this node's `ray start` keeps the address as given.
RAY_START_ON_LOOPBACK = """
import sys
from ray._private import services
from ray.scripts.scripts import main

keep = services.resolve_ip_for_localhost
services.resolve_ip_for_localhost = lambda host: host if host == "127.0.0.1" else keep(host)
sys.argv[0] = "ray"
main()
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # the client server's wait for the server it starts per client (30 s) ran out on a
    # loaded CI machine once; the proxy reads it when `ray start` starts the proxy.
    # 60 s: aryl's three attempts (aryl.studies.sweep_engines.CLIENT_ATTEMPTS) stay within the timeout.
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    env["RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S"] = "60"
    port, client = free_port(), free_port()
    temp = tmp_path_factory.mktemp("ray")
    env["RAY_enable_metrics_collection"] = "0"  # no metrics port (nor dashboard)
    # on the loopback only (issue 48): the head and its services (the client server,
    # which joins the cluster per client, included) see one machine
    head_env = {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    head = [RAY, "start", "--head", "--node-ip-address=127.0.0.1", "--num-cpus", "1"]
    head += ["--port", str(port), "--ray-client-server-port", str(client)]
    head += ["--include-dashboard=false", "--disable-usage-stats"]
    head += ["--temp-dir", str(temp)]
    node = [sys.executable, "-c", RAY_START_ON_LOOPBACK, "start"]
    node += ["--address", f"127.0.0.1:{port}", "--node-ip-address=127.0.0.1"]
    node += ["--num-cpus", "1"]
    try:
        for command, environment in ((head, head_env), (node, env)):
            subprocess.run(
                command, env=environment, check=True, capture_output=True, timeout=120
            )
        yield env, port, client, temp
    finally:
        stop_cluster(temp)


def stop_cluster(temp):
    """Stop this cluster's processes, each of which names its folder ``temp`` (the
    worker node's too: it keeps its files in the head's session); not `ray stop
    --force`, which stops every Ray process on the machine (a developer's own Ray,
    another test run's)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        mine = [pid for pid, line in _commands() if f"{temp}/" in line]
        for pid in mine:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 15
        while mine and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = {pid for pid, _ in _commands()}
            mine = [pid for pid in mine if pid in alive]
        if not mine:
            return


def _commands():
    """(pid, command line) of every process."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                yield int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue


def sweep(out, *extra, env=None, logs=None):
    command = [sys.executable, "-m", "aryl", "sweep", *GRID, "--out", str(out), "-q"]
    done = subprocess.run(
        command + list(extra), env=env, capture_output=True, text=True, timeout=300
    )
    why = done.stderr + (client_server_logs(logs) if logs else "")
    assert done.returncode == 0, why
    return pd.read_parquet(out / "sweep.parquet")


def client_server_logs(temp):
    """The last lines of the cluster's Ray client server logs: why a client failed."""
    tails = []
    for log in sorted(Path(temp).glob("session_2*/logs/ray_client_server*.err")):
        lines = log.read_text(errors="replace").splitlines()[-15:]
        tails.append(f"--- {log.name}\n" + "\n".join(lines))
    return "\n" + "\n".join(tails)


def test_a_sweep_on_a_two_node_cluster_equals_a_local_run(cluster, tmp_path):
    env, port, client, temp = cluster
    local = sweep(tmp_path / "local", "--engine", "processes")
    by_address = sweep(tmp_path / "addr", "--address", f"127.0.0.1:{port}", env=env)
    by_client = sweep(
        tmp_path / "client",
        *("--address", f"ray://127.0.0.1:{client}"),
        env=env,
        logs=temp,
    )
    # how each run went (time, cache), not what it gave
    timing = ("cached", "seconds", "cpu_seconds", "peak_memory_bytes", "saved")
    same = [c for c in local.columns if c not in timing]
    pd.testing.assert_frame_equal(by_address[same], local[same])
    pd.testing.assert_frame_equal(by_client[same], local[same])
    again = sweep(tmp_path / "addr", "--address", f"127.0.0.1:{port}", env=env)
    assert again["cached"].all()  # the cache is the driver's: resumed without Ray work


def test_a_simulation_in_windows_on_the_cluster_equals_a_local_one(
    cluster, tmp_path, trace_slice
):
    """`aryl simulate --windows` (issue 46): each window a run on the two nodes."""
    env, port, client, temp = cluster
    jobs, load = trace_slice

    def windows(out, *extra):
        command = [sys.executable, "-m", "aryl", "simulate", str(jobs)]
        command += ["--load", str(load), "--training-servers", "4"]
        command += ["--inference-servers", "4", "--windows", "3", "--warmup", "6h"]
        done = subprocess.run(
            [*command, "--out", str(out), "-q", *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return pd.read_csv(out / "windows.csv")

    local = windows(tmp_path / "local", "--engine", "serial")
    remote = windows(
        tmp_path / "ray", "--engine", "ray", "--address", f"127.0.0.1:{port}"
    )
    timing = ("wall_seconds", "cpu_seconds", "peak_memory_bytes", "cached", "saved")
    same = [c for c in local.columns if c not in timing]
    pd.testing.assert_frame_equal(remote[same], local[same])
    assert len(remote) == 3 and (remote["peak_memory_bytes"] > 0).all()


def test_the_cluster_listens_on_the_loopback_only(cluster, off_loopback):
    """Every socket its processes (head, node, the client server) listen on."""
    env, port, client, temp = cluster
    off, seen = off_loopback(temp, f"127.0.0.1:{port}")
    assert {"gcs_server", "raylet"} <= seen, seen  # the processes were found
    assert not off, f"listening beyond the loopback: {off}"
