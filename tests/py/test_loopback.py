"""Every Ray that aryl starts listens on the loopback only (issue 48): the cluster of
`aryl live --local-cluster` (``LocalCluster``, a node lent to it included) and the
local Ray of `aryl sweep --engine ray` (``connect_ray``). With work running on every
node (a worker process has servers of its own), every socket their processes listen
on (psutil: this process, its descendants and whatever names the session's folder)
must be on 127.0.0.0/8 or ::1, and every node's address 127.0.0.1. The machine's
"current" Ray cluster (``ray.init()`` with no address joins it) is left as it was.
`test_ray_cluster.py` checks the same of a cluster that `ray start` starts."""

import os
import shutil
import tempfile

import pytest

pytest.importorskip("ray")
pytest.importorskip("psutil")
pytestmark = [pytest.mark.ray, pytest.mark.serial]

import ray  # noqa: E402
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

from aryl import sim  # noqa: E402
from aryl.live.ray_backend import LocalCluster, labelled_nodes, wait_joined  # noqa: E402
from aryl.sim import Cluster  # noqa: E402

#: What the machine's "current" Ray cluster file names before the test: the user's own.
USERS_CLUSTER = "192.0.2.9:6379"


@pytest.fixture
def ray_folder(monkeypatch):
    """Ray's folder for the test (RAY_TMPDIR; short, as Ray's socket paths must fit in
    107 bytes), whose "current cluster" file names the user's own cluster."""
    assert not ray.is_initialized()
    folder = tempfile.mkdtemp(prefix="aryl-ray-")
    monkeypatch.setenv("RAY_TMPDIR", folder)
    os.makedirs(os.path.join(folder, "ray"))
    with open(current_cluster_file(folder), "w") as f:
        f.write(USERS_CLUSTER)
    yield folder
    if ray.is_initialized():
        ray.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


def current_cluster_file(folder):
    return os.path.join(folder, "ray", "ray_current_cluster")


def current_cluster(folder):
    with open(current_cluster_file(folder)) as f:
        return f.read()


@ray.remote(num_cpus=0)
def where():
    return ray.get_runtime_context().get_node_id()


def check_loopback(folder, off_loopback):
    """Every listening socket on the loopback and every node on 127.0.0.1; the nodes."""
    off, seen = off_loopback(folder)
    assert {"gcs_server", "raylet"} <= seen, seen  # the processes were found
    assert not off, f"listening beyond the loopback: {off}"
    alive = [node for node in ray.nodes() if node["Alive"]]
    assert {node["NodeManagerAddress"] for node in alive} == {"127.0.0.1"}, alive
    return alive


def test_a_local_cluster_listens_on_the_loopback_only(ray_folder, off_loopback):
    servers = Cluster(2, 1).servers()
    with LocalCluster(servers) as nodes:
        lent = servers[-1]
        nodes.add(lent)  # as the controller lends an inference server
        wait_joined([lent.id])
        ids = [node for node, _ in labelled_nodes().values()]
        placed = [
            where.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote()
            for node in ids
        ]
        assert sorted(ray.get(placed, timeout=120)) == sorted(ids)
        assert len(check_loopback(ray_folder, off_loopback)) == len(servers) + 1
        assert nodes.address.startswith("127.0.0.1:")
        assert current_cluster(ray_folder) == USERS_CLUSTER
    assert current_cluster(ray_folder) == USERS_CLUSTER


def test_a_sweeps_local_ray_listens_on_the_loopback_only(ray_folder, off_loopback):
    table = sim.sweep(
        {"first_jobs": 100, "training_servers": 4, "inference_servers": 4},
        {"seed": [0, 1]},
        engine="ray",
        workers=2,
        cache=False,
        progress=False,
    )
    assert len(table) == 2 and ray.is_initialized()  # kept up for the next sweep
    assert len(check_loopback(ray_folder, off_loopback)) == 1
    assert current_cluster(ray_folder) == USERS_CLUSTER
