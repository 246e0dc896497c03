"""``RayBackend.lend`` on a stub Ray (issue 44): a resumed controller asks again for the
servers it lent, and a server whose labelled node is up or joining gets no second node."""

import sys
import types

import pytest

from aryl import Server
from aryl.live.ray_backend import LocalCluster, RayBackend

SERVERS = [
    Server("t0", "training", 8, "V100"),
    Server("i0", "inference", 8, "V100"),
    Server("i1", "inference", 8, "V100"),
]


class StubRay(types.ModuleType):
    """The few parts of Ray the backend's construction and lending call: a connected
    driver in namespace ``aryl`` and a node listing the test edits."""

    def __init__(self):
        super().__init__("ray")
        self.listing = [self.node("t0")]

    @staticmethod
    def node(server, alive=True):
        return {
            "NodeID": f"node-{server}",
            "Alive": alive,
            "Labels": {"aryl.server": server},
        }

    def is_initialized(self):
        return True

    def get_runtime_context(self):
        return types.SimpleNamespace(namespace="aryl", get_node_id=lambda: "head")

    def remote(self, *args, **kwargs):
        return lambda cls: cls

    def nodes(self):
        return list(self.listing)


class Provider:
    """A node provider that only counts the nodes it is asked to start."""

    def __init__(self):
        self.added = []

    def add(self, server):
        self.added.append(server.id)

    def remove(self, server):
        pass


@pytest.fixture
def ray(monkeypatch):
    stub = StubRay()
    strategies = types.ModuleType("ray.util.scheduling_strategies")
    strategies.NodeAffinitySchedulingStrategy = lambda node, soft: (node, soft)
    monkeypatch.setitem(sys.modules, "ray", stub)
    monkeypatch.setitem(sys.modules, "ray.util.scheduling_strategies", strategies)
    return stub


def backend(tmp_path, provider):
    made = RayBackend(str(tmp_path), provider=provider)
    made.servers = {s.id: s for s in SERVERS}  # as register() knows them
    return made


def test_a_lend_under_way_asked_again_starts_no_second_node(ray, tmp_path):
    provider = Provider()
    first = backend(tmp_path, provider)
    assert first.lend(["i0"]) == []  # its node starts, joins later
    assert first.lend(["i0", "i1"]) == []  # i0 still joining: not started again
    assert provider.added == ["i0", "i1"]


def test_a_resumed_controller_re_asking_for_a_joined_server_gets_it_ready(
    ray, tmp_path
):
    provider = Provider()
    backend(tmp_path, provider).lend(["i0"])
    ray.listing.append(StubRay.node("i0"))  # the node joined; the controller died
    resumed = backend(tmp_path, provider)  # a new controller's backend asks again
    assert resumed.lend(["i0"]) == ["i0"]
    assert provider.added == ["i0"]


def test_a_dead_labelled_node_is_started_again(ray, tmp_path):
    provider = Provider()
    ray.listing.append(StubRay.node("i0", alive=False))
    assert backend(tmp_path, provider).lend(["i0"]) == []
    assert provider.added == ["i0"]


def test_a_local_cluster_starts_a_servers_node_once(monkeypatch):
    class Nodes:
        def __init__(self):
            self.started = []

        def add_node(self, **kwargs):
            self.started.append(kwargs["labels"]["aryl.server"])
            return object()

    local = LocalCluster.__new__(LocalCluster)  # no Ray: only add() is tried
    local.log, local.nodes, local.cluster = None, {}, Nodes()
    local.add(SERVERS[1])
    local.add(SERVERS[1])
    assert local.cluster.started == ["i0"]
