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
