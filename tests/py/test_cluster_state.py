"""aryl.ClusterState: the reusable state of a live scheduler.

Oracles: the record API (``aryl.schedule`` / ``aryl.reclaim`` on the same
records, rebuilt from scratch), and the state's own records after a rebuild.
"""

import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import ClusterState, _core
from instances import random_cluster, random_loaned_cluster

SCHEDULE_POLICIES = aryl.defaults.SCHEDULE_POLICIES
RECLAIM_POLICIES = aryl.defaults.RECLAIM_POLICIES


def records(state):
    """The state's content as comparable multisets of records."""
    return (state.servers(), state.jobs(), Counter(state.workers()))


def snapshot(state):
    return state.version, records(state)


def same_records(state, servers, jobs, workers):
    """The state holds exactly these records (workers as a multiset, gpus filled in)."""
    gpus = {j.id: j.gpus_per_worker for j in jobs}
    full = Counter(
        aryl.Worker(w.job, w.server, gpus[w.job], w.flexible) for w in workers
    )
    assert state.servers() == list(servers)
    assert state.jobs() == list(jobs)
    assert Counter(state.workers()) == full


# ------------------------------------------------------------------ building


def test_every_constructor_builds_the_same_state():
    servers, jobs, workers = random_loaned_cluster(3)
    from_objects = ClusterState.from_records(servers, jobs, workers)
    as_dicts = [[vars(r) for r in rs] for rs in (servers, jobs, workers)]
    from_dicts = ClusterState.from_records(*as_dicts)
    frames = [pd.DataFrame(d) for d in as_dicts]
    from_frames = ClusterState.from_frames(*frames)
    columns = [{c: f[c].to_numpy() for c in f.columns} for f in frames]
    from_columns = ClusterState.from_columns(*columns)
    for state in (from_dicts, from_frames, from_columns):
        assert records(state) == records(from_objects)
    same_records(from_objects, servers, jobs, workers)
    assert from_objects.n_workers == len(workers)
    assert "ClusterState(10 servers (8 on loan)" in repr(from_objects)


def test_frames_may_leave_out_optional_columns():
    state = ClusterState.from_frames(
        pd.DataFrame(
            {
                "id": ["t0", "i0"],
                "pool": ["training", "inference"],
                "on_loan": [False, True],
            }
        ),
        pd.DataFrame(
            {
                "id": [1, 2],
                "gpus_per_worker": [8, 4],
                "min_workers": [1, 1],
                "max_workers": [2, 1],
                "duration": [60.0, 30.0],
                "gpu_type": [None, "T4"],
            }
        ),
        pd.DataFrame({"job": [2], "server": ["i0"]}),
    )
    assert state.servers() == [
        aryl.Server("t0"),
        aryl.Server("i0", "inference", on_loan=True),
    ]
    assert state.jobs() == [
        aryl.Job(1, 8, 1, 2, 60.0),
        aryl.Job(2, 4, 1, 1, 30.0, gpu_type="T4"),
    ]
    assert state.workers() == [aryl.Worker(2, "i0", 4)]
    frames = state.frames()
    assert list(frames["workers"]["job"]) == [2]
    assert frames["jobs"]["gpu_type"].isna().tolist() == [True, False]  # any type


def test_state_round_trips_through_its_frames():
    state = ClusterState.from_records(*random_loaned_cluster(5))
    frames = state.frames()
    again = ClusterState.from_frames(
        frames["servers"], frames["jobs"], frames["workers"]
    )
    assert records(again) == records(state)


# --------------------------------------------------- equivalence: scheduling


@pytest.mark.parametrize("policy", SCHEDULE_POLICIES)
def test_schedule_equals_the_record_api_over_epochs(policy):
    for seed in range(12):
        jobs, servers = random_cluster(seed)
        workers = []
        state = ClusterState.from_records(servers, jobs)
        now = None if seed % 3 else 12.5  # some jobs not yet submitted
        for _ in range(3):
            expected = aryl.schedule(jobs, servers, workers, policy=policy, now=now)
            result = state.schedule(policy=policy, now=now)
            assert result.decision == expected
            assert list(result.allocation) == [expected.allocation[j.id] for j in jobs]
            assert [jobs[i].id for i in result.pending] == expected.pending
            workers = expected.apply(workers)
            result.apply(state)
            same_records(state, servers, jobs, workers)


def test_schedule_with_options_equals_the_record_api():
    jobs, servers = random_cluster(7)
    rng = random.Random(7)
    remaining = {j.id: rng.uniform(0.1, 1.0) for j in jobs[::2]}
    throughput = {
        j.id: [k**0.9 for k in range(1, j.max_workers + 1)] for j in jobs[1::3]
    }
    options = dict(
        remaining=remaining,
        throughput=throughput,
        gpu_speed={"T4": 0.5},
        placement="bfd",
        hetero_efficiency=0.8,
    )
    expected = aryl.schedule(jobs, servers, **options)
    assert (
        ClusterState.from_records(servers, jobs).schedule(**options).decision
        == expected
    )


def test_unplaceable_jobs_are_reported_as_by_the_record_api():
    servers = [
        aryl.Server("t", "training", gpus=4),
        aryl.Server("i", "inference", on_loan=True),
    ]
    jobs = [
        aryl.Job("ok", 4, 1, 1, 60),
        aryl.Job("many", 4, 3, 3, 60),
        aryl.Job("typed", 8, 1, 1, 60, gpu_type="V100"),
        aryl.Job("late", 1, 1, 1, 60, 99),
    ]
    expected = aryl.schedule(jobs, servers, now=10)
    result = ClusterState.from_records(servers, jobs).schedule(now=10)
    assert set(result.unplaceable) == {"many", "typed"}
    assert result.decision == expected


def test_repeated_epochs_on_one_state_equal_the_record_api():
    # The state caches what depends only on it (unplaceable jobs, the kernel's
    # sub-state) per policy and per set of jobs still to come: epochs at other
    # times, with other policies and speeds, and after an update, must not reuse
    # a stale entry; a caller's edit of one result must not leak into the next.
    jobs, servers = random_cluster(11)
    servers = servers[:2] + servers[4:6]  # some jobs can never be placed
    state = ClusterState.from_records(servers, jobs)
    for now, policy, speeds in [
        (None, "aryl", None),
        (5.0, "aryl", None),
        (5.0, "fifo", {"T4": 0.5}),
        (12.0, "aryl", {"T4": 0.5}),
        (None, "aryl", None),
    ]:
        result = state.schedule(policy=policy, now=now, gpu_speed=speeds)
        expected = aryl.schedule(
            jobs, servers, policy=policy, now=now, gpu_speed=speeds
        )
        assert result.decision == expected
        result.unplaceable.clear()
    more = aryl.Job("late", 1, 1, 1, 60.0, submit_time=1.0)
    state.add_jobs([more])
    expected = aryl.schedule([*jobs, more], servers, now=5.0)
    assert state.schedule(now=5.0).decision == expected


def test_a_job_wider_than_every_server_is_unplaceable_through_both_doors():
    # Decided once: a live scheduler's queue may hold such a job; it is reported
    # unplaceable (the others are scheduled), never a refused state.
    servers = [aryl.Server("s")]
    jobs = [aryl.Job("A", 16, 1, 1, 60), aryl.Job("B", 8, 1, 1, 60)]
    reason = "a worker needs 16 GPUs, more than any server has (8)"
    by_records = aryl.schedule(jobs, servers)
    state = ClusterState.from_records(servers, jobs)
    by_state = state.schedule().decision
    assert by_records == by_state
    assert by_state.unplaceable == {"A": reason}
    assert by_state.allocation == {"A": 0, "B": 1}
    state.add_jobs([aryl.Job("W", 9, 1, 1, 60)])  # an update may add one too
    assert "W" in state.schedule().unplaceable
    # A simulation still refuses it: it could never run.
    with pytest.raises(ValueError, match="job 'A' can never run"):
        aryl.sim.simulate(jobs, servers)


# ----------------------------------------------------- equivalence: reclaim


@pytest.mark.parametrize("policy", RECLAIM_POLICIES)
def test_reclaim_equals_the_record_api(policy):
    for seed in range(25):
        servers, jobs, workers = random_loaned_cluster(seed)
        n = random.Random(seed).randint(1, 6)
        expected = aryl.reclaim(servers, jobs, workers, n, policy, seed=seed)
        result = ClusterState.from_records(servers, jobs, workers).reclaim(
            n, policy, seed
        )
        assert result.plan == expected
        assert [servers[i].id for i in result.servers] == expected.servers
        assert [jobs[j].id for j in result.preempted] == expected.preempted
        assert result.demand_gpus == expected.demand_gpus


def expected_after_reclaim(servers, workers, plan):
    """The records after returning plan's servers, by hand."""
    returned = set(plan.servers)
    servers = [
        aryl.Server(
            s.id, s.pool, s.gpus, s.gpu_type, s.on_loan and s.id not in returned
        )
        for s in servers
    ]
    workers = [
        w for w in workers if w.job not in plan.preempted and w.server not in returned
    ]
    return servers, workers


@pytest.mark.parametrize("seed", range(15))
def test_reclaim_plans_apply_both_ways(seed):
    servers, jobs, workers = random_loaned_cluster(seed)
    n = random.Random(seed).randint(1, 6)
    by_index = ClusterState.from_records(servers, jobs, workers)
    by_id = ClusterState.from_records(servers, jobs, workers)
    result = by_index.reclaim(n)
    result.apply(by_index)
    result.plan.apply(by_id)
    assert records(by_index) == records(by_id)
    after_servers, after_workers = expected_after_reclaim(servers, workers, result.plan)
    same_records(by_index, after_servers, jobs, after_workers)
    lost = Counter(w.job for w in workers) - Counter(w.job for w in after_workers)
    assert dict(lost) == {
        **{j: c for j, c in lost.items() if j in result.plan.preempted},
        **result.plan.scaled_in,
    }


# -------------------------------------------------- incremental = rebuild


def test_incremental_updates_equal_a_rebuild_from_scratch():
    rng = random.Random(11)
    jobs, servers = random_cluster(11, jobs=40)
    arrived, workers = jobs[:10], []
    state = ClusterState.from_records(servers, arrived)
    for epoch in range(8):
        expected = aryl.schedule(arrived, servers, workers)
        result = state.schedule()
        assert result.decision == expected
        (result.decision if epoch % 2 else result).apply(state)
        workers = expected.apply(workers)
        running = sorted({w.job for w in workers})
        done = rng.sample(running, min(2, len(running)))
        state.remove_jobs(done)
        arrived = [j for j in arrived if j.id not in done]
        workers = [w for w in workers if w.job not in done]
        new = jobs[10 + 4 * epoch : 14 + 4 * epoch]
        state.add_jobs(pd.DataFrame([vars(j) for j in new]) if epoch % 2 else new)
        arrived += new
        if epoch == 3:
            extra = [
                aryl.Server("x0", "inference"),
                aryl.Server("x1", "training", gpus=4),
            ]
            state.add_servers(extra)
            state.set_on_loan(["x0"])
            servers = servers + [aryl.Server("x0", "inference", on_loan=True), extra[1]]
        if epoch == 5:
            plan = state.reclaim(2).plan
            assert plan == aryl.reclaim(servers, arrived, workers, 2)
            plan.apply(state)
            servers, workers = expected_after_reclaim(servers, workers, plan)
        same_records(state, servers, arrived, workers)
        rebuilt = ClusterState.from_records(servers, arrived, workers)
        assert records(rebuilt) == records(state)
        assert state.schedule().decision == rebuilt.schedule().decision


def test_remove_servers_and_jobs_reindex_the_workers():
    servers, jobs, workers = random_loaned_cluster(2)
    state = ClusterState.from_records(servers, jobs, workers)
    idle = [s.id for s in servers if s.id not in {w.server for w in workers}]
    gone = [jobs[0].id, jobs[3].id]
    state.remove_jobs(gone)
    state.remove_servers(idle)
    left = [w for w in workers if w.job not in gone]
    same_records(
        state,
        [s for s in servers if s.id not in idle],
        [j for j in jobs if j.id not in gone],
        left,
    )


# ------------------------------------------------------------- bad input


def small_state():
    servers = [
        aryl.Server("t", "training"),
        aryl.Server("i", "inference", on_loan=True),
        aryl.Server("k", "inference"),
        aryl.Server("t2", "training"),
    ]
    jobs = [aryl.Job("A", 4, 1, 2, 60), aryl.Job("B", 8, 1, 1, 60)]
    workers = [aryl.Worker("A", "t"), aryl.Worker("B", "i")]
    return ClusterState.from_records(servers, jobs, workers)


def job_frame(**changes):
    row = dict(id="C", gpus_per_worker=2, min_workers=1, max_workers=2, duration=60.0)
    row.update(changes)
    return pd.DataFrame([row])


BAD_UPDATES = [
    ("wrong column", lambda s: s.add_jobs(job_frame(colour="red")), "unknown field"),
    (
        "missing column",
        lambda s: s.add_jobs(job_frame().drop(columns="duration")),
        r"missing field\(s\) \['duration'\]",
    ),
    (
        "duplicate id",
        lambda s: s.add_jobs([aryl.Job("A", 1, 1, 1, 60)]),
        "duplicate job id 'A'",
    ),
    (
        "duplicate new ids",
        lambda s: s.add_jobs(pd.concat([job_frame(), job_frame()])),
        "duplicate job id 'C'",
    ),
    (
        "same printed id",
        lambda s: s.add_servers([aryl.Server(7), aryl.Server("7")]),
        "duplicate server id '7'",
    ),
    (
        "NaN duration",
        lambda s: s.add_jobs(job_frame(duration=np.nan)),
        "job 'C': duration must be a finite number >= 0, got nan",
    ),
    (
        "NaN count",
        lambda s: s.add_jobs(job_frame(min_workers=np.nan)),
        "job 'C': min_workers must be an integer, got nan",
    ),
    (
        "negative count",
        lambda s: s.add_jobs(job_frame(min_workers=-1)),
        "job 'C': min_workers must be >= 1, got -1",
    ),
    (
        "min above max",
        lambda s: s.add_jobs(job_frame(min_workers=3)),
        "job 'C': min_workers 3 > max_workers 2",
    ),
    (
        "negative gpus",
        lambda s: s.add_servers([{"id": "z", "gpus": -8}]),
        "server 'z': gpus must be >= 1, got -8",
    ),
    (
        "bad pool",
        lambda s: s.add_servers(pd.DataFrame({"id": ["z"], "pool": ["gpu"]})),
        "server 'z': pool must be 'training' or 'inference'",
    ),
    (
        "bad flag",
        lambda s: s.add_jobs(job_frame(hetero=2)),
        "hetero must be True or False",
    ),
    (
        "unknown server in a worker",
        lambda s: aryl.Decision("aryl", start=[aryl.Worker("A", "nowhere")]).apply(s),
        "worker 0: unknown server 'nowhere'",
    ),
    (
        "unknown job in a worker",
        lambda s: aryl.Decision("aryl", start=[aryl.Worker("ghost", "t")]).apply(s),
        "worker 0: unknown job 'ghost'",
    ),
    (
        "over-committed server",
        lambda s: aryl.Decision("aryl", start=[aryl.Worker("A", "t")] * 2).apply(s),
        "server 't' is over-committed: its workers use 12 GPUs, it has 8",
    ),
    (
        "worker on a server not on loan",
        lambda s: aryl.Decision("aryl", start=[aryl.Worker("A", "k")]).apply(s),
        "not on loan",
    ),
    (
        "stop a worker that is not there",
        lambda s: aryl.Decision("aryl", stop=[aryl.Worker("A", "i")]).apply(s),
        "no worker",
    ),
    (
        "worker count above max",
        lambda s: aryl.Decision("aryl", start=[aryl.Worker("A", "t2")] * 2).apply(s),
        "job 'A' runs 3 workers, outside",
    ),
    (
        "wrong worker gpus",
        lambda s: aryl.Decision("aryl", start=[aryl.Worker("A", "t", gpus=2)]).apply(s),
        "has 2 GPUs but the job's gpus_per_worker is 4",
    ),
    ("remove an unknown job", lambda s: s.remove_jobs(["Z"]), "unknown job 'Z'"),
    ("remove a job twice", lambda s: s.remove_jobs(["A", "A"]), "must not repeat"),
    (
        "remove a busy server",
        lambda s: s.remove_servers(["i"]),
        "still hosts a worker of job 'B'",
    ),
    ("take back a busy server", lambda s: s.set_on_loan(["i"], False), "not on loan"),
    (
        "lend a training server",
        lambda s: s.set_on_loan(["t"]),
        "only inference servers",
    ),
    (
        "plan for another state",
        lambda s: aryl.ReclaimPlan("aryl", ["i"], preempted=[]).apply(s),
        "job 'B' has 1 workers on the returned servers, the plan scales it in by 0",
    ),
    (
        "plan naming an unknown server",
        lambda s: aryl.ReclaimPlan("aryl", ["q"], preempted=[]).apply(s),
        "unknown server 'q'",
    ),
    ("reclaim more than on loan", lambda s: s.reclaim(2), "on loan"),
]


@pytest.mark.parametrize(
    "update, message", [b[1:] for b in BAD_UPDATES], ids=[b[0] for b in BAD_UPDATES]
)
def test_bad_updates_raise_and_leave_the_state_unchanged(update, message):
    state = small_state()
    before = snapshot(state)
    with pytest.raises(ValueError, match=message):
        update(state)
    assert snapshot(state) == before
    state.schedule().apply(state)  # and it still works


BAD_FRAMES = [
    (
        "duplicate ids",
        dict(
            jobs=pd.DataFrame(
                {
                    "id": ["A", "A"],
                    "gpus_per_worker": [1, 1],
                    "min_workers": [1, 1],
                    "max_workers": [1, 1],
                    "duration": [1.0, 1.0],
                }
            )
        ),
        "duplicate job id 'A'",
    ),
    (
        "unknown server",
        dict(workers=pd.DataFrame({"job": ["A"], "server": ["q"]})),
        "worker 0: unknown server 'q'",
    ),
    (
        "0/1 flag",  # as records and JobTable refuse them
        dict(
            jobs=pd.DataFrame(
                {
                    "id": ["A"],
                    "gpus_per_worker": [1],
                    "min_workers": [1],
                    "max_workers": [1],
                    "duration": [1.0],
                    "checkpoint": [1],
                }
            )
        ),
        "job 'A': checkpoint must be True or False, got 1",
    ),
    (
        "0/1 server flag",
        dict(servers=pd.DataFrame({"id": ["s"], "on_loan": [0]})),
        "server 's': on_loan must be True or False",
    ),
    ("not a frame", dict(jobs=[aryl.Job("A", 1, 1, 1, 1)]), "jobs must be a DataFrame"),
    ("2-d column", dict(servers={"id": np.zeros((2, 2))}), "one-dimensional"),
]


@pytest.mark.parametrize(
    "frames, message", [b[1:] for b in BAD_FRAMES], ids=[b[0] for b in BAD_FRAMES]
)
def test_bad_frames_are_refused(frames, message):
    base = dict(
        servers=pd.DataFrame({"id": ["s"]}),
        jobs=pd.DataFrame(
            {
                "id": ["A"],
                "gpus_per_worker": [1],
                "min_workers": [1],
                "max_workers": [1],
                "duration": [1.0],
            }
        ),
        workers=None,
    )
    base.update(frames)
    build = (
        ClusterState.from_columns
        if isinstance(base["servers"], dict)
        else ClusterState.from_frames
    )
    with pytest.raises(ValueError, match=message):
        build(**base)


@pytest.mark.parametrize("bad", [dict(min_workers=5), dict(checkpoint=1)])
def test_frames_fail_with_the_record_api_message(bad):
    frame = job_frame(**bad)
    with pytest.raises(ValueError) as by_records:
        aryl.schedule(frame, [aryl.Server("s")])
    with pytest.raises(ValueError) as by_state:
        ClusterState.from_frames(pd.DataFrame({"id": ["s"]}), frame)
    assert str(by_state.value) == str(by_records.value)


def test_stale_results_are_refused():
    state = small_state()
    result, plan = state.schedule(), state.reclaim(1)
    state.add_jobs([aryl.Job("D", 1, 1, 1, 60)])
    before = snapshot(state)
    with pytest.raises(ValueError, match="state changed"):
        result.apply(state)
    with pytest.raises(ValueError, match="state changed"):
        plan.apply(state)
    with pytest.raises(ValueError, match="state changed"):
        small_state().schedule().apply(state)
    assert snapshot(state) == before


def test_bad_arguments_to_the_kernels():
    state = small_state()
    with pytest.raises(ValueError, match="unknown policy 'lottery'"):
        state.schedule(policy="lottery")
    with pytest.raises(ValueError, match="remaining: unknown job 'x'"):
        state.schedule(remaining={"x": 0.5})
    with pytest.raises(ValueError, match="throughput: unknown job 'x'"):
        state.schedule(throughput={"x": [1.0]})
    with pytest.raises(ValueError, match="unknown reclaim policy"):
        state.reclaim(1, policy="lifo")
    with pytest.raises(TypeError):
        state.reclaim("1")


# ---------------------------------------------------------------- round trips


def test_decision_apply_on_a_state_equals_apply_on_records():
    jobs, servers = random_cluster(4)
    state = ClusterState.from_records(servers, jobs)
    workers = []
    for _ in range(3):
        decision = state.schedule(policy="gandiva").decision
        assert decision.apply(state) is None
        workers = decision.apply(workers)
        same_records(state, servers, jobs, workers)


def test_results_expose_indices_and_build_friendly_objects_lazily():
    state = small_state()
    result = state.schedule()
    assert result._decision is None
    assert result.decision is result.decision
    assert result.start_job.dtype.kind == "i" and len(result.allocation) == state.n_jobs
    assert "ScheduleResult" in repr(result)
    plan = state.reclaim(1)
    assert plan._plan is None
    assert plan.plan.servers == ["i"] and plan.plan.preempted == ["B"]
    assert list(plan.servers) == [1] and list(plan.preempted) == [1]
    assert "ReclaimResult" in repr(plan)


# ---------------------------------------------------------------- records in bulk


def test_records_are_read_in_one_pass_and_odd_values_take_the_checked_path():
    jobs = [aryl.Job("a", 4, 1, 2, 60.0), aryl.Job("b", 8, 1, 1, 30)]
    read = _core.record_columns(
        jobs, ["id", "gpus_per_worker", "duration", "hetero", "user"], "OifbO"
    )
    assert [column.tolist() for column, _ in read] == [
        ["a", "b"],
        [4, 8],
        [60.0, 30.0],
        [False, False],
        [None, None],
    ]
    assert read[0][0].dtype == object  # ids stay values
    assert read[1][0].dtype == np.int64 and read[2][0].dtype == np.float64
    assert read[3][0].dtype == bool
    assert [all_none for _, all_none in read] == [False] * 4 + [True]
    # a value that is not exactly of the field's kind: its values, the caller checks
    odd = [aryl.Job("c", 4, 1, 2**70, 60.0)]  # beyond 64 bits
    ((column, _),) = _core.record_columns(odd, ["max_workers"], "i")
    assert column.dtype == object and column.tolist() == [2**70]
    with pytest.raises(ValueError, match=r"job 'c': max_workers must be in"):
        ClusterState.from_records([aryl.Server("t")], odd)
    with pytest.raises(ValueError, match="unknown kind 'x'"):
        _core.record_columns(jobs, ["id"], "x")


def test_the_first_worker_with_an_unknown_id_is_named_whatever_its_ids_type():
    """Workers' ids are looked up in one compiled pass (``_core.id_rows``): the first
    worker with an unknown job or server is named, its job before its server, for
    string ids of records and integer ids of a column alike."""
    servers = [aryl.Server("s", "training"), aryl.Server("t", "training")]
    jobs = [aryl.Job("a", 1, 1, 1, 60.0), aryl.Job("b", 1, 1, 1, 60.0)]
    workers = [aryl.Worker("a", "s"), aryl.Worker("b", "u"), aryl.Worker("c", "v")]
    with pytest.raises(ValueError, match=r"^worker 1: unknown server 'u'$"):
        aryl.ClusterState.from_records(servers, jobs, workers)
    workers[1] = aryl.Worker("x", "u")  # both unknown: the job is named
    with pytest.raises(ValueError, match=r"^worker 1: unknown job 'x'$"):
        aryl.ClusterState.from_records(servers, jobs, workers)
    columns = dict(
        servers={"id": np.array([10, 11])},
        jobs={
            "id": np.array([1, 2]),
            **{f: np.ones(2, int) for f in ("gpus_per_worker", "min_workers")},
            "max_workers": np.ones(2, int),
            "duration": np.full(2, 60.0),
        },
    )
    good = {"job": np.array([2, 1]), "server": np.array([11, 10])}
    state = aryl.ClusterState.from_columns(**columns, workers=good)
    assert [(w.job, w.server) for w in state.workers()] == [(2, 11), (1, 10)]
    bad = {"job": np.array([2, 1]), "server": np.array([11, 12])}
    with pytest.raises(ValueError, match=r"^worker 1: unknown server 12$"):
        aryl.ClusterState.from_columns(**columns, workers=bad)


def test_unhashable_pools_and_worker_ids_are_named_as_bad_values():
    """A list where a pool or a worker's job belongs (a DataFrame's cell) is a bad
    value named as such, not Python's ``TypeError: unhashable type``."""
    servers = pd.DataFrame({"id": ["a", "b"], "pool": ["training", ["x"]]})
    with pytest.raises(ValueError, match=r"server 'b': pool must be .* got \['x'\]"):
        aryl.ClusterState.from_frames(servers)
    jobs = pd.DataFrame(
        {"id": ["j"], "gpus_per_worker": [1], "min_workers": [1], "max_workers": [1]}
    ).assign(duration=60.0)
    workers = pd.DataFrame({"job": [["j"]], "server": ["a"]})
    with pytest.raises(ValueError, match=r"^worker 0: unknown job \['j'\]$"):
        aryl.ClusterState.from_frames(servers.iloc[:1], jobs, workers)
