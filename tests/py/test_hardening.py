"""Every reproducer of the reliability audit (issue 14): now a clear error or a correct
answer in bounded time. Grouped as in the issue: memory safety, hangs, unbounded
memory, error types and silent acceptance, correctness."""

import gzip
import itertools
import math
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pandas as pd
import pytest

import aryl
import aryl.sim as sim
from aryl import _core, traces
from aryl.model import job_columns, server_columns
from instances import random_loaned_cluster

HEADER = "job_id,submit_time_s,num_gpus,duration_s,gpu_type\n"


def servers_dict(n=2, **override):
    columns = server_columns([aryl.Server(f"s{i}") for i in range(n)])
    columns.update(override)
    return columns


def jobs_dict(n=2, **override):
    columns = job_columns([aryl.Job(f"j{i}", 1, 1, 1, 10.0) for i in range(n)])
    columns.update(override)
    return columns


def core_config(**override):
    """The dict aryl.sim.simulate hands the core, with ``override`` applied."""
    from aryl.engine.config import Config
    from aryl.engine.core_io import _core_config

    config = _core_config(Config(), "aryl", "aryl", 0)
    config.update(override)
    return config


def run_cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "aryl", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line_error(process):
    assert process.returncode == 2, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aryl: error: "), process.stderr
    return lines[0]


# ---- memory safety: raw _core entry points check shapes ----------------------------


@pytest.mark.parametrize(
    "column, value",
    [("pool", [0]), ("gpus", [8]), ("gpu_type", ["V100"]), ("on_loan", [False])],
)
def test_cluster_state_short_server_column(column, value):
    with pytest.raises(
        ValueError, match=f"servers: column '{column}' has 1 values, expected 2"
    ):
        _core.ClusterState(
            servers_dict(**{column: value}),
            jobs_dict(),
            {"job": [], "server": [], "flexible": []},
        )


def test_cluster_state_short_worker_column():
    workers = {"job": [0, 1], "server": [0], "flexible": [False, False]}
    with pytest.raises(
        ValueError, match="workers: column 'server' has 1 values, expected 2"
    ):
        _core.ClusterState(servers_dict(), jobs_dict(), workers)


@pytest.mark.parametrize(
    "columns, error, message",
    [
        (dict(id=[1, 2]), TypeError, r"servers: column 'id', row 0 must be a str"),
        (dict(id=["\ud800", "b"]), ValueError, "not encodable as UTF-8"),
        (dict(gpus=[8.5, 8]), TypeError, "column 'gpus' must hold integers"),
        (dict(gpus=[2**40, 8]), ValueError, r"column 'gpus', row 0: must be in"),
        (dict(gpus=[2**70, 8]), ValueError, r"column 'gpus' value must be in"),
        (dict(pool=[2, 0]), ValueError, r"column 'pool', row 0: must be in \[0, 1\]"),
        (dict(on_loan="no"), TypeError, "must be a sequence of values, got a string"),
        (dict(gpus=[[1, 2], [3, 4]]), ValueError, "must be one-dimensional"),
    ],
)
def test_cluster_state_bad_column_types(columns, error, message):
    with pytest.raises(error, match=message):
        _core.ClusterState(
            servers_dict(**columns),
            jobs_dict(),
            {"job": [], "server": [], "flexible": []},
        )


def test_cluster_state_missing_column():
    columns = servers_dict()
    del columns["gpus"]
    with pytest.raises(ValueError, match="servers: missing 'gpus'"):
        _core.ClusterState(
            columns, jobs_dict(), {"job": [], "server": [], "flexible": []}
        )


def test_simulate_fewer_curves_than_jobs():
    with pytest.raises(ValueError, match="throughput has 1 curves for 2 jobs"):
        _core.simulate(servers_dict(), jobs_dict(), [[1.0]], [], [], core_config())


def test_simulate_load_shorter_than_load_time():
    with pytest.raises(ValueError, match="load has 1 values but load_time has 2"):
        _core.simulate(
            servers_dict(), jobs_dict(), [], [0.0, 10.0], [0.5], core_config()
        )


@pytest.mark.parametrize(
    "override, error, message",
    [
        (dict(seed=-1), ValueError, r"config 'seed' must be in \[0, 2\*\*64\)"),
        (dict(seed=2**64), ValueError, r"config 'seed' must be in \[0, 2\*\*64\)"),
        (dict(seed=1.5), TypeError, "config 'seed' must be an integer"),
        (dict(scaling=0), TypeError, "config 'scaling' must be a str"),
        (dict(backfill="no"), TypeError, "config 'backfill' must be True or False"),
        (dict(gpu_speed=None), TypeError, "gpu_speed' must be a dict"),
        (dict(gpu_speed={"V100": 0.0}), ValueError, "must be finite and > 0"),
        (
            dict(schedule_interval=math.inf),
            ValueError,
            "config 'schedule_interval' must be finite",
        ),
        (dict(horizon=math.nan), ValueError, "horizon"),
    ],
)
def test_simulate_bad_core_config(override, error, message):
    with pytest.raises(error, match=message):
        _core.simulate(servers_dict(), jobs_dict(), [], [], [], core_config(**override))


def test_core_reclaim_and_knapsack_arguments():
    state = _core.ClusterState(
        servers_dict(), jobs_dict(), {"job": [], "server": [], "flexible": []}
    )
    with pytest.raises(ValueError, match="n must be in"):
        _core.reclaim(state, 2**70)
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\)"):
        _core.reclaim(state, 0, "aryl", -1)
    with pytest.raises(TypeError, match="n must be an integer"):
        _core.reclaim(state, 1.5)
    with pytest.raises(TypeError, match="group 0, item 0: expected a"):
        _core.knapsack([[5]], 3)
    with pytest.raises(TypeError, match="remaining"):
        _core.schedule(state, "aryl", "aryl", False, ["x"])


@pytest.mark.parametrize("answer", ["no", [], 1.5, object()])
def test_progress_returning_a_non_bool_is_a_type_error(answer):
    with pytest.raises(
        TypeError, match="the value returned by progress must be True or False"
    ):
        sim.simulate(
            [aryl.Job("a", 1, 1, 1, 600.0)], sim.Cluster(1), progress=lambda f: answer
        )


def test_progress_may_return_numpy_bool_and_none():
    jobs = [aryl.Job("a", 1, 1, 1, 600.0)]
    assert (
        sim.simulate(jobs, sim.Cluster(1), progress=lambda f: np.True_).summary()[
            "jobs_finished"
        ]
        == 1
    )
    assert (
        sim.simulate(jobs, sim.Cluster(1), progress=lambda f: None).summary()[
            "jobs_finished"
        ]
        == 1
    )


def test_keyboard_interrupt_while_converting_is_not_an_input_error():
    class Interrupting:
        def __index__(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _core.ClusterState(
            servers_dict(gpus=np.array([Interrupting(), 8], dtype=object)),
            jobs_dict(),
            {"job": [], "server": [], "flexible": []},
        )


# ---- hangs: refused up front ---------------------------------------------------------


def test_job_that_fits_only_on_servers_never_lent_waits_unfinished():
    # it would run were they lent: warned up front and at the end, not refused
    with pytest.warns(RuntimeWarning) as caught:
        result = sim.simulate(
            [aryl.Job("b", 8, 2, 2, 100.0, gpu_type="T4")],
            sim.Cluster(1, 2),
            inference_load=[(0, 1.0)],
        )
    said = " ".join(str(w.message) for w in caught)
    assert "('b') fit only with inference servers lent" in said
    assert "1 job(s) never finished ('b')" in said
    assert result.summary()["jobs_unfinished"] == 1


def test_job_that_fits_on_servers_lent_runs():
    result = sim.simulate(
        [aryl.Job("b", 8, 2, 2, 100.0, gpu_type="T4")],
        sim.Cluster(1, 2),
        inference_load=[(0, 0.0)],
    )
    assert result.check().summary()["jobs_finished"] == 1


@pytest.mark.parametrize(
    "config, message",
    [
        ({"schedule_interval": math.inf}, "schedule_interval must be a finite number"),
        ({"loan_interval": 1e-300}, "loan_interval must be a finite number in"),
        ({"schedule_interval": 1e-300}, "schedule_interval must be a finite number in"),
        ({"gpu_speed": {"V100": 0}}, r"gpu_speed\['V100'\] must be"),
        ({"gpu_speed": {"V100": 1e-12}}, r"gpu_speed\['V100'\] must be"),
        ({"gpu_speed": {"V100": -1}}, r"gpu_speed\['V100'\] must be"),
        ({"gpu_speed": {"V100": math.nan}}, r"gpu_speed\['V100'\] must be"),
    ],
)
def test_configs_that_make_unbounded_work(config, message):
    with pytest.raises(ValueError, match=message):
        sim.simulate(
            [aryl.Job("a", 1, 1, 1, 60.0)],
            sim.Cluster(1, 1),
            config=config,
            inference_load=[(0, 0.5)],
        )


@pytest.mark.parametrize(
    "job", [aryl.Job("a", 1, 1, 1, 1e12), aryl.Job("a", 1, 1, 1, 10, submit_time=1e12)]
)
def test_huge_times_are_refused_before_running(job):
    with pytest.raises(
        ValueError, match="the simulation would span at least 1e\\+12 s"
    ):
        sim.simulate([job], sim.Cluster(1))


def test_huge_times_run_with_a_horizon():
    result = sim.simulate(
        [aryl.Job("a", 1, 1, 1, 1e12)], sim.Cluster(1), config={"horizon": 86400.0}
    )
    assert result.summary()["jobs_finished"] == 0


def test_knapsack_capacity_near_int_max():
    with pytest.raises(ValueError, match="tracks total weights up to"):
        aryl.knapsack([[(2**31 - 3, 1.0)]], 2**31 - 2)
    assert aryl.knapsack([[(2, 1.0)]], 2**31 - 2) == [
        0
    ]  # large capacity, small items: fine


def test_extend_load_with_a_tiny_step():
    load = pd.DataFrame({"time_s": [0.0, 1e-9], "load": [0.5, 0.5]})
    with pytest.raises(ValueError, match="copies, more than"):
        traces.extend_load(load, 86400.0)
    with pytest.raises(ValueError, match="until_s must be a finite number"):
        traces.extend_load(load, math.inf)


def test_cli_load_with_a_tiny_step(tmp_path):
    """Repeating a 1-ns series up to a job an hour later would take 3.6e12 copies: refused."""
    (tmp_path / "jobs.csv").write_text(
        HEADER + "a,0,8,3600,unknown\nb,3600,8,60,unknown\n"
    )
    (tmp_path / "load.csv").write_text("time_s,load\n0,0.5\n1e-9,0.5\n")
    line = one_line_error(
        run_cli(
            "simulate",
            str(tmp_path / "jobs.csv"),
            "--load",
            str(tmp_path / "load.csv"),
            "--training-servers",
            "1",
            "--out",
            str(tmp_path / "out"),
        )
    )
    assert "copies" in line


def test_cli_short_loads_that_cover_the_jobs_are_used_as_given(tmp_path):
    """A tiny step or a single row needs no repeating when it already covers the jobs."""
    (tmp_path / "jobs.csv").write_text(HEADER + "a,0,8,3600,unknown\n")
    for rows in ("0,0.5\n1e-9,0.5\n", "0,0.5\n"):
        (tmp_path / "load.csv").write_text("time_s,load\n" + rows)
        done = run_cli(
            "simulate",
            str(tmp_path / "jobs.csv"),
            "--load",
            str(tmp_path / "load.csv"),
            "--out",
            str(tmp_path / "out"),
        )
        assert done.returncode == 0, done.stderr


# ---- unbounded memory / overflow ---------------------------------------------------------


def test_cli_huge_duration_is_one_line(tmp_path):
    (tmp_path / "t.csv").write_text(HEADER + "j1,0,8,1e12,unknown\n")
    line = one_line_error(
        run_cli("simulate", str(tmp_path / "t.csv"), "--out", str(tmp_path / "o"))
    )
    assert "would span at least" in line
    assert not (tmp_path / "o" / "jobs.csv").exists()


def test_elastic_job_with_two_billion_workers():
    with pytest.raises(ValueError, match="more than the limit of 1048576 GPUs per job"):
        aryl.schedule([aryl.Job("a", 1, 1, 2**31 - 1, 10)], [aryl.Server("s")])


def test_over_committed_huge_server_is_refused():
    server = aryl.Server("s", "inference", gpus=2**31 - 1, on_loan=True)
    with pytest.raises(ValueError, match="gpus must be at most 65536"):
        aryl.reclaim(
            [server], [aryl.Job("a", 2**30, 3, 3, 10)], [aryl.Worker("a", "s")] * 3, 1
        )


def test_knapsack_value_overflow():
    with pytest.raises(ValueError, match="values add up to more than a double"):
        aryl.knapsack([[(1, 1e308)], [(1, 1e308)]], 2)


@pytest.mark.parametrize("estimate", [1e308, 1e16])
def test_huge_estimates_are_refused(estimate):
    jobs = [aryl.Job(x, 1, 1, 3, 10, estimated_duration=estimate) for x in "ab"]
    with pytest.raises(
        ValueError, match="estimated_duration must be at most 1e\\+15 s"
    ):
        aryl.schedule(jobs, [aryl.Server("s")])


# ---- error types and silent acceptance -------------------------------------------------


@pytest.mark.parametrize(
    "seed, error",
    [
        (-1, ValueError),
        (2**64, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        ("1", TypeError),
    ],
)
def test_simulate_seed(seed, error):
    with pytest.raises(error, match="seed"):
        sim.simulate([aryl.Job("a", 1, 1, 1, 60.0)], sim.Cluster(1), seed=seed)


def test_simulate_seed_at_the_top_of_the_range():
    sim.simulate(
        [aryl.Job("a", 1, 1, 1, 60.0)],
        sim.Cluster(1, 1),
        reclaim="random",
        seed=2**64 - 1,
        inference_load=[(0, 0.5)],
    )


def test_cli_seed_out_of_range():
    line = one_line_error(run_cli("simulate", "--seed", "18446744073709551616"))
    assert "--seed must be in" in line


@pytest.mark.parametrize("args", [["--training-servers", "-1"], ["--out", ""]])
def test_cli_bad_numbers_and_out(args):
    one_line_error(run_cli("simulate", *args))


def test_cli_demo_negative_servers():
    one_line_error(run_cli("demo", "--loaned-servers", "-5"))


@pytest.mark.parametrize(
    "config, error",
    [
        ({"scaling": 0}, TypeError),
        ({"scaling": "cubic"}, ValueError),
        ({"backfill": "no"}, ValueError),
        ({"audit": 1}, ValueError),
        ({"gpu_speed": None}, TypeError),
        ({"gpu_speed": {5: 1.0}}, TypeError),
        ({"horizon": math.nan}, ValueError),
        ({"headroom": -0.1}, ValueError),
        ({"prediction_error": (2.0, 0.1)}, ValueError),
        ({"prediction_error": "x"}, TypeError),
    ],
)
def test_config_values(config, error):
    with pytest.raises(error):
        sim.simulate([aryl.Job("a", 1, 1, 1, 60.0)], sim.Cluster(1), config=config)


def test_compare_without_runs():
    with pytest.raises(ValueError, match="runs is empty"):
        sim.compare([aryl.Job("a", 1, 1, 1, 60.0)], sim.Cluster(1), {})


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: aryl.Job("a", 1, 1, 1, 10, gpu_type=5),
            "gpu_type must be a str or None",
        ),
        (lambda: aryl.Server("s", gpu_type=["V100"]), "gpu_type must be a str or None"),
        (
            lambda: aryl.Worker("a", "s", flexible="False"),
            "flexible must be True or False",
        ),
        (
            lambda: aryl.Worker("a", "s", flexible=math.nan),
            "flexible must be True or False",
        ),
    ],
)
def test_records_refuse_odd_values(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_missing_gpu_type_in_a_frame_means_any_type():
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "gpus_per_worker": [1, 1],
            "min_workers": [1, 1],
            "max_workers": [1, 1],
            "duration": [10.0, 10.0],
            "gpu_type": ["V100", None],
        }
    )
    decision = aryl.schedule(frame, [aryl.Server("s")])
    assert decision.allocation == {"a": 1, "b": 1}


@pytest.mark.parametrize(
    "n, error",
    [(2**70, ValueError), (math.inf, TypeError), (2.7, TypeError), ("2", TypeError)],
)
def test_reclaim_n(paper_example, n, error):
    with pytest.raises(error, match="n must be"):
        aryl.reclaim(*paper_example, n=n)


def test_reclaim_seed(paper_example):
    with pytest.raises(ValueError, match="seed must be in"):
        aryl.reclaim(*paper_example, n=1, policy="random", seed=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        aryl.reclaim(*paper_example, n=1, policy="random", seed=math.inf)


def test_id_with_a_lone_surrogate():
    with pytest.raises(ValueError, match="not encodable as UTF-8"):
        aryl.schedule([aryl.Job("\ud800", 1, 1, 1, 10)], [aryl.Server("s")])


def test_zero_duration_row_names_file_row_and_column(tmp_path):
    path = tmp_path / "z.csv"
    path.write_text(HEADER + "j1,0,8,3600,unknown\nj2,10,4,0,unknown\n")
    with pytest.raises(
        traces.TraceError,
        match=r"z.csv: row 2 \(line 3\), column 'duration_s': zero duration",
    ):
        traces.read_jobs(path)
    with pytest.warns(UserWarning, match="dropped 1 invalid row"):
        assert traces.read_jobs(path, drop_invalid=True)["job_id"].tolist() == ["j1"]


def test_zero_duration_job_is_refused_by_simulate():
    with pytest.raises(ValueError, match="job 'z': duration must be > 0 to simulate"):
        sim.simulate(
            [aryl.Job("a", 1, 1, 1, 60.0), aryl.Job("z", 1, 1, 1, 0.0)], sim.Cluster(1)
        )


def test_num_gpus_beyond_int64(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text(HEADER + "j1,0,1e19,3600,unknown\n")
    with pytest.raises(
        traces.TraceError, match=r"column 'num_gpus': above 1.04858e\+06"
    ):
        traces.read_jobs(path)


def test_gzip_with_a_junk_body(tmp_path):
    path = tmp_path / "junk.csv.gz"
    good = gzip.compress((HEADER + "a,0,1,5,unknown\n").encode())
    path.write_bytes(good[:10] + b"\xff" * 40 + good[50:])
    with pytest.raises(traces.TraceError, match="junk.csv.gz: corrupt gzip data"):
        traces.read_jobs(path)
    line = one_line_error(run_cli("simulate", str(path)))
    assert "corrupt gzip" in line


def test_schedule_reports_unplaceable_jobs_and_schedules_the_rest():
    jobs = [
        aryl.Job("wide", 16, 1, 1, 10),
        aryl.Job("ok", 8, 1, 1, 10),
        aryl.Job("many", 8, 3, 3, 10),
        aryl.Job("t4", 1, 1, 1, 10, gpu_type="T4"),
    ]
    servers = [
        aryl.Server("s1"),
        aryl.Server("s2"),
        aryl.Server("i", "inference"),
    ]  # i not on loan
    for policy in ("aryl", "fifo", "sjf", "gandiva", "afs"):
        decision = aryl.schedule(jobs, servers, policy=policy)
        assert set(decision.unplaceable) == {"wide", "many", "t4"}, policy
        assert decision.allocation["ok"] == 1 and decision.pending == []
        assert "16 GPUs" in decision.unplaceable["wide"]


def test_schedule_remaining_for_a_job_not_yet_submitted():
    decision = aryl.schedule(
        [aryl.Job("a", 1, 1, 2, 100, submit_time=100)],
        [aryl.Server("s")],
        now=0,
        remaining={"a": 0.5},
    )
    assert decision.pending == ["a"]
    with pytest.raises(ValueError, match="remaining: unknown job 'b'"):
        aryl.schedule(
            [aryl.Job("a", 1, 1, 2, 100)], [aryl.Server("s")], remaining={"b": 0.5}
        )


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(remaining=[0.5]), TypeError),
        (dict(now=math.nan), ValueError),
        (dict(now="0"), TypeError),
        (dict(backfill="yes"), ValueError),
    ],
)
def test_schedule_arguments(kwargs, error):
    with pytest.raises(error):
        aryl.schedule([aryl.Job("a", 1, 1, 2, 100)], [aryl.Server("s")], **kwargs)


# ---- correctness: exact is the oracle ---------------------------------------------------


def test_exact_takes_a_job_whole_rather_than_an_idle_server():
    servers = [aryl.Server(x, "inference", on_loan=True) for x in ("idle", "i2", "i3")]
    plan = aryl.reclaim(
        servers,
        [aryl.Job("a", 8, 2, 2, 3600)],
        [aryl.Worker("a", "i2"), aryl.Worker("a", "i3")],
        2,
        "exact",
    )
    assert (
        plan.servers == ["i2", "i3"]
        and plan.preempted == ["a"]
        and plan.collateral_gpus == 0
    )


def brute_force(servers, jobs, workers, n):
    """Independent solver: every n-subset of the on-loan servers, scored from scratch."""
    on_loan = [s.id for s in servers if s.on_loan]
    job = {j.id: j for j in jobs}
    count = {j.id: 0 for j in jobs}
    for w in workers:
        count[w.job] += 1
    best = None
    for subset in itertools.combinations(on_loan, n):
        chosen = set(subset)
        removed = {j: 0 for j in job}
        for w in workers:
            removed[w.job] += w.server in chosen
        preempted = [
            j for j in job if count[j] and count[j] - removed[j] < job[j].min_workers
        ]
        collateral = sum(
            job[w.job].gpus_per_worker
            for w in workers
            if w.job in preempted and w.server not in chosen
        )
        scaled = sum(removed[j] for j in job if j not in preempted)
        score = (len(preempted), collateral, scaled)
        if best is None or score < best[0]:
            best = (score, sorted(subset, key=on_loan.index))
    return best


def mixed_cluster(seed):
    """random_loaned_cluster with servers of 4, 8 and 16 GPUs and some idle ones."""
    rng = np.random.default_rng(seed)
    servers, jobs, workers = random_loaned_cluster(seed, loaned=7, jobs=10)
    sizes = {s.id: int(rng.choice([8, 16])) if s.on_loan else s.gpus for s in servers}
    servers = [
        aryl.Server(s.id, s.pool, sizes[s.id], on_loan=s.on_loan) for s in servers
    ]
    servers += [aryl.Server("idle", "inference", 4, on_loan=True)]
    return servers, jobs, workers


@pytest.mark.parametrize("seed", range(40))
def test_exact_matches_an_independent_brute_force(seed):
    servers, jobs, workers = mixed_cluster(seed)
    loaned = sum(s.on_loan for s in servers)
    for n in range(loaned + 1):
        exact = aryl.reclaim(servers, jobs, workers, n, "exact")
        score, subset = brute_force(servers, jobs, workers, n)
        scaled = sum(exact.scaled_in.values())
        assert (len(exact.preempted), exact.collateral_gpus, scaled) == score, (seed, n)
        assert sorted(exact.servers, key=[s.id for s in servers].index) == subset, (
            seed,
            n,
        )
        for policy in ("aryl", "scf", "random"):
            other = aryl.reclaim(servers, jobs, workers, n, policy, seed=seed)
            assert (len(exact.preempted), exact.collateral_gpus) <= (
                len(other.preempted),
                other.collateral_gpus,
            )


# ---- concurrency, leaks, Ctrl-C ----------------------------------------------------------


def small_trace():
    frame, load = traces.synthetic(days=1, jobs=300, seed=3)
    return traces.to_jobs(frame, seed=3), load


def test_concurrent_simulations_equal_sequential():
    jobs, load = small_trace()
    cluster = sim.Cluster(8, 8)
    configs = [
        dict(policy=p, reclaim=r) for p in ("aryl", "fifo") for r in ("aryl", "random")
    ]

    def run(kwargs):
        return sim.simulate(jobs, cluster, inference_load=load, seed=5, **kwargs).jobs

    sequential = [run(c) for c in configs]
    results = [None] * len(configs)

    def worker(i):
        results[i] = run(configs[i])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(configs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(sequential, results):
        pd.testing.assert_frame_equal(a, b)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_memory_does_not_grow_over_repeated_calls():
    servers, jobs, workers = random_loaned_cluster(1)
    sim_jobs = [
        aryl.Job(f"j{i}", 1, 1, 2, 600.0, submit_time=60.0 * i) for i in range(5)
    ]

    def calls():
        aryl.reclaim(servers, jobs, workers, 3)
        aryl.schedule(jobs, servers, workers)
        aryl.knapsack([[(1, 2.0), (2, 3.0)], [(1, 1.0)]], 2)
        sim.simulate(sim_jobs, sim.Cluster(1))
        with pytest.raises(ValueError):
            sim.simulate(sim_jobs, sim.Cluster(1), seed=-1)
        with pytest.raises(ValueError):
            _core.ClusterState(
                servers_dict(pool=[0]),
                jobs_dict(),
                {"job": [], "server": [], "flexible": []},
            )

    for _ in range(200):  # warm up allocators and caches
        calls()
    before = rss_mb()
    for _ in range(1000):
        calls()
    assert rss_mb() - before < 20, (before, rss_mb())


@pytest.mark.serial
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_compare_exits_130_without_partial_files(tmp_path):
    out = tmp_path / "out"
    process = subprocess.Popen(
        # five seeds, uncached: 70 runs on the whole embedded trace, so the signal lands
        # while they are under way even where one run takes a fraction of a second
        # (14 runs once finished between the flushed line and the signal under load)
        [sys.executable, "-m", "aryl", "compare", "--out", str(out)]
        + ["--seeds", "5", "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # "Cluster: ..." is flushed once the cluster is sized, just before the runs.
    lines = iter(process.stdout.readline, "")
    assert any(line.startswith("Cluster:") for line in lines)
    assert process.poll() is None, "the compare ended before it was signalled"
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "aryl: interrupted"
    assert "Traceback" not in stderr
    assert sorted(p.name for p in out.iterdir()) == [
        ".aryl-output"
    ]  # nothing half-written, no temp folder; only the mark that the folder is aryl's


def test_engine_schedules_after_a_late_loan():
    """Epochs stop once nothing runs; a loan decision after that wakes one."""
    jobs = [
        aryl.Job("early", 1, 1, 1, 100.0),
        aryl.Job("t4", 2, 3, 4, 2534.0, submit_time=10.0, gpu_type="T4"),
    ]
    load = [
        (0.0, 0.9),
        (4072.3, 1e-9),
    ]  # T4 servers lent once spare for the 1-hour hold
    result = sim.simulate(jobs, sim.Cluster(3, 2), inference_load=load)
    assert result.summary()["jobs_finished"] == 2


def test_progress_keeps_being_asked_after_the_last_arrival():
    """A long job after the last arrival: the callback can still stop the run."""
    calls = []

    def stop_late(fraction):
        calls.append(fraction)
        return len(calls) < 3 or fraction < 0.5  # 0.5: arrived, not yet finished

    jobs = [aryl.Job("long", 1, 1, 1, 1e7)]
    result = sim.simulate(jobs, sim.Cluster(1, 0), progress=stop_late)
    assert calls[-1] == 0.5 and result.summary()["jobs_unfinished"] == 1
    assert calls == sorted(calls)  # progress never goes back


def test_progress_with_two_parameters_gets_the_simulated_time():
    jobs = [
        aryl.Job("a", 1, 1, 1, 600.0),
        aryl.Job("b", 1, 1, 1, 900.0, submit_time=2 * 86400.0),
    ]
    one, two = [], []
    first = sim.simulate(jobs, sim.Cluster(1, 0), progress=lambda f: one.append(f))
    second = sim.simulate(
        jobs, sim.Cluster(1, 0), progress=lambda f, now: two.append((f, now))
    )
    assert [f for f, _ in two] == one  # the same calls, the time beside
    assert first.summary() == second.summary()
    times = [now for _, now in two]
    assert times == sorted(times) and times[0] == 0.0
    # the last call comes with the last job finished, at its finish time
    assert two[-1] == (1.0, second.jobs["finish_time"].max())
    assert two[-1][1] == 2 * 86400.0 + 900.0


class _Watcher:
    def __init__(self):
        self.calls = []

    def two(self, fraction, now):
        self.calls.append((fraction, now))

    def one_with_default(self, fraction, verbose=False):
        self.calls.append((fraction, verbose))

    def any_number(self, *args):
        self.calls.append(args)


@pytest.mark.parametrize(
    "method, arguments", [("two", 2), ("one_with_default", 1), ("any_number", 1)]
)
def test_progress_gets_the_time_only_when_it_requires_two_arguments(method, arguments):
    watcher = _Watcher()
    sim.simulate(
        [aryl.Job("a", 1, 1, 1, 600.0)],
        sim.Cluster(1, 0),
        progress=getattr(watcher, method),
    )
    assert watcher.calls
    if arguments == 2:
        assert all(isinstance(now, float) for _, now in watcher.calls)
    elif method == "one_with_default":
        assert {verbose for _, verbose in watcher.calls} == {False}
    else:
        assert {len(args) for args in watcher.calls} == {1}


def test_job_submitted_after_the_load_takes_the_servers_back_for_good():
    jobs = [aryl.Job("late", 8, 2, 2, 100.0, submit_time=600.0, gpu_type="T4")]
    with pytest.warns(RuntimeWarning) as caught:
        result = sim.simulate(
            jobs, sim.Cluster(1, 2), inference_load=[(0, 0.0), (300, 1.0), (600, 1.0)]
        )
    assert "1 job(s) ('late') fit only" in " ".join(str(w.message) for w in caught)
    assert result.summary()["jobs_unfinished"] == 1
