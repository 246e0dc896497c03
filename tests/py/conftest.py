import ipaddress
import sys
from pathlib import Path

import pytest

import aryl

# tests/reference (plain-Python versions of the kernels) is importable as `reference`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that starts Ray is a serial one: scripts/run-tests runs the rest on two
    workers, then the serial tests alone, where a second Ray or a busy core beside
    them cannot slow a start past its timeout."""
    for item in items:
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def paper_example():
    """fig:reclaim_example / table:server_cost: six 8-GPU on-loan servers.

    Job a spans servers 1-2 evenly, b fills server 3, c has 80% of its GPUs on
    server 4 and 20% on 5, d 20% on 5 and 80% on 6. All inelastic.
    """
    servers = [aryl.Server(i, "inference", on_loan=True) for i in range(1, 7)]
    jobs = [
        aryl.Job("a", 8, 2, 2, 3600),
        aryl.Job("b", 8, 1, 1, 3600),
        aryl.Job("c", 2, 5, 5, 3600),
        aryl.Job("d", 2, 5, 5, 3600),
    ]
    placement = {"a": [1, 2], "b": [3], "c": [4, 4, 4, 4, 5], "d": [5, 6, 6, 6, 6]}
    workers = [aryl.Worker(j, s) for j, where in placement.items() for s in where]
    return servers, jobs, workers


@pytest.fixture(scope="module")
def trace_slice(tmp_path_factory):
    """The first 300 jobs of the embedded ITP trace and 3 days of its load, as CSV files."""
    from aryl import traces

    jobs, load = traces.load_default()
    folder = tmp_path_factory.mktemp("trace")
    jobs.iloc[:300].to_csv(folder / "jobs.csv", index=False)
    load[load["time_s"] < 3 * 86400].to_csv(folder / "load.csv", index=False)
    return folder / "jobs.csv", folder / "load.csv"


def listening_sockets(*markers):
    """(process name, address, port, kind) of every socket listening (TCP) or bound
    unconnected (UDP) in this process, its descendants, and the processes whose
    command line names one of ``markers`` (a Ray session's folder, a Ray cluster's
    address: the services of a `ray start`, which leave the starting process) and
    their descendants: a Ray started here or by `ray start`, its workers (children of
    a raylet) included."""
    import psutil

    roots = [psutil.Process()]
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or ())
        if any(str(marker) in line for marker in markers):
            roots.append(process)
    processes = {}
    for root in roots:
        try:
            for process in [root, *root.children(recursive=True)]:
                processes[process.pid] = process
        except psutil.Error:  # gone meanwhile
            continue
    found = []
    for process in processes.values():
        try:
            name = process.name()
            sockets = process.net_connections(kind="inet")
        except psutil.Error:
            continue
        for s in sockets:
            tcp = s.type.name == "SOCK_STREAM"
            if (s.status == psutil.CONN_LISTEN) if tcp else not s.raddr:
                found.append((name, s.laddr.ip, s.laddr.port, "tcp" if tcp else "udp"))
    return found


def is_loopback(ip):
    """Whether ``ip`` is a loopback address (127.0.0.0/8, ::1, or IPv4 as IPv6)."""
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


@pytest.fixture
def off_loopback():
    """``off_loopback(*markers)``: (the sockets ``listening_sockets(*markers)`` finds
    open beyond the loopback, the names of the processes seen with sockets), over a
    few looks (Ray starts some servers late)."""
    pytest.importorskip("psutil")

    def check(*markers, looks=3, every=0.5):
        import time

        seen, off = set(), set()
        for look in range(looks):
            if look:
                time.sleep(every)
            for name, ip, port, kind in listening_sockets(*markers):
                seen.add(name)
                if not is_loopback(ip):
                    off.add((name, ip, port, kind))
        return sorted(off), seen

    return check
