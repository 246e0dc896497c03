"""What makes the simulator's view of a run cheap keeps it right (issue 33, item 3).

The view (``ClusterState.simulation_view``) shares what depends on the run alone with
the trace state it is cut from (records, speeds, GPU types, which jobs fit without
loans), builds its columns, id index and records when first read, and takes the
engine's work-left column as it is. Each test here checks one of those shortcuts
against the long way round.
"""

import warnings

import numpy as np
import pytest

import aryl
from aryl.state.columns import StateColumns


def trace_state():
    """Two training servers, two inference servers, four jobs: one (``wide``) needs
    three 8-GPU workers of one type, so it fits only with an inference server...
    of the training type: the inference servers here are V100 too."""
    servers = [
        aryl.Server("t0", "training", 8),
        aryl.Server("t1", "training", 8),
        aryl.Server("i0", "inference", 8, gpu_type="V100"),
        aryl.Server("i1", "inference", 8, gpu_type="V100"),
    ]
    jobs = [
        aryl.Job("run", 4, 1, 2, 100.0, user="ann"),
        aryl.Job("wide", 8, 3, 3, 500.0, submit_time=5.0),
        aryl.Job("small", 2, 1, 1, 50.0, submit_time=10.0, gpu_type="V100"),
        aryl.Job(7, 4, 1, 1, 60.0, submit_time=20.0, checkpoint=False),
    ]
    return aryl.ClusterState.from_records(servers, jobs), servers, jobs


def view_of(trace, rows, on_loan, remaining=None, workers=None):
    """The view the engine would show: job ``rows`` of the trace (running first)."""
    rows = np.asarray(rows, dtype=np.int64)
    workers = workers or {"job": [], "server": [], "flexible": []}
    table = {
        "job": np.asarray(workers["job"], dtype=np.int64),
        "server": np.asarray(workers["server"], dtype=np.int64),
        "flexible": np.asarray(workers["flexible"], dtype=bool),
    }
    left = np.ones(len(rows)) if remaining is None else np.asarray(remaining)
    return trace.simulation_view(rows, table, np.asarray(on_loan, dtype=bool), left)


def test_a_views_records_are_the_records_it_holds():
    trace, servers, jobs = trace_state()
    view = view_of(
        trace,
        [0, 2, 1],
        [False, False, True, False],
        workers={"job": [0, 0], "server": [0, 2], "flexible": [False, True]},
    )
    assert view.jobs() == [jobs[0], jobs[2], jobs[1]]
    lent = aryl.Server("i0", "inference", 8, gpu_type="V100", on_loan=True)
    assert view.servers() == [servers[0], servers[1], lent, servers[3]]
    assert view.workers() == [
        aryl.Worker("run", "t0", 4),
        aryl.Worker("run", "i0", 4, flexible=True),
    ]
    # the records are what the checked constructors make, field for field
    for made, record in zip(view.jobs(), [jobs[0], jobs[2], jobs[1]]):
        assert vars(made) == vars(record) and hash(made) == hash(record)
    # each call gives a new list: a policy that edits one does not edit the view
    view.jobs().clear()
    view.workers().clear()
    view.servers().clear()
    assert len(view.jobs()) == 3 and view.n_workers == len(view.workers()) == 2
    assert len(view.servers()) == 4


def test_a_live_states_records_follow_its_updates():
    state, servers, jobs = trace_state()
    assert state.jobs() == jobs and state.servers() == servers
    state.set_on_loan(["i1"])
    assert state.servers()[3].on_loan
    state.remove_jobs(["small"])
    assert [j.id for j in state.jobs()] == ["run", "wide", 7]


def test_a_job_that_needs_a_loan_is_unplaceable_in_a_view_without_one():
    trace, _, _ = trace_state()
    # nothing lent: 'wide' (3 x 8 GPUs) cannot fit the two training servers
    bare = view_of(trace, [1, 2], [False] * 4)
    result = bare.schedule("aryl")
    assert list(result.unplaceable) == ["wide"]
    assert "hold at most 2" in result.unplaceable["wide"]
    # both inference servers lent: it fits (beside 'small'), and starts
    lent = view_of(trace, [1, 2], [False, False, True, True])
    result = lent.schedule("aryl")
    assert result.unplaceable == {}
    assert "wide" in {w.job for w in result.decision.start}
    # the same answer as a state built from records (no shortcut there)
    again = lent.schedule("aryl").decision
    records = aryl.ClusterState.from_records(lent.servers(), lent.jobs())
    assert records.schedule("aryl").decision.start == again.start


def test_a_views_work_left_is_the_engines_column():
    trace, _, _ = trace_state()
    view = view_of(trace, [2, 3], [False] * 4, remaining=[0.25, 1.0])
    assert view.remaining == {"small": 0.25}
    assert view.columns().remaining.tolist() == [0.25, 1.0]
    by_id = aryl.ClusterState.from_records(view.servers(), view.jobs())
    expected = by_id.schedule("sjf", remaining={"small": 0.25}).decision
    assert view.schedule("sjf").decision == expected
    # a value the engine could never give is still refused, by the kernel
    broken = view_of(trace, [2, 3], [False] * 4, remaining=[0.0, 1.0])
    with pytest.raises(ValueError, match=r"remaining must be in \(0, 1\]"):
        broken.schedule("aryl")


def test_columns_are_made_when_read_and_cannot_be_changed():
    state, _, _ = trace_state()
    state.add_jobs([aryl.Job("late", 8, 1, 1, 10.0, submit_time=1.0)])
    c = state.columns()
    assert isinstance(c, StateColumns)
    columns = sorted(StateColumns.__annotations__)
    assert set(columns) <= set(dir(c))
    for name in columns:
        array = getattr(c, name)
        assert isinstance(array, np.ndarray), name
        assert not array.flags.writeable, name
    assert c.queue.tolist() == [0, 4, 1, 2, 3]  # submit order
    assert c.usable.tolist() == [True, True, False, False]
    with pytest.raises(AttributeError, match="read-only"):
        c.queue = np.zeros(0)
    with pytest.raises(AttributeError, match="no column 'queues'"):
        c.queues  # noqa: B018 - the attribute access is the test


def test_gpu_speed_is_checked_on_every_call_though_the_answer_is_kept():
    state, _, _ = trace_state()
    first = state.schedule("aryl", gpu_speed={"V100": 2.0}).decision
    assert state.schedule("aryl", gpu_speed={"V100": 2.0}).decision == first
    with pytest.raises(ValueError, match=r"gpu_speed\['V100'\]"):
        state.schedule("aryl", gpu_speed={"V100": -1.0})
    with pytest.raises(ValueError, match="unknown GPU type 'v100'"):
        state.schedule("aryl", gpu_speed={"v100": 1.0})
    for _ in range(2):  # a type the run lacks warns each time it is given
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            state.schedule("aryl", gpu_speed={"A100": 3.0})
        assert any("has no effect" in str(w.message) for w in caught)


def test_a_views_job_table_is_taken_whole_by_whatever_reads_it_whole():
    trace, _, _ = trace_state()
    built = view_of(trace, [3, 1], [False] * 4)  # its compiled copy reads every column
    view = trace.simulation_view(  # as the engine makes it: with its compiled copy
        np.asarray([3, 1]),
        built._workers,
        np.zeros(4, bool),
        np.ones(2),
        None,
        built._core,
    )
    assert len(dict.keys(view._jobs)) == 0  # nothing taken yet
    assert view.n_jobs == 2 and view.columns().job_id.tolist() == [7, "wide"]
    expected = {name: column[[3, 1]] for name, column in trace._jobs.items()}
    for whole in (dict(view._jobs), {**view._jobs}, view._jobs.copy()):
        assert whole.keys() == expected.keys()
        for name, column in expected.items():
            assert np.array_equal(whole[name], column), name
    assert set(view._jobs) == set(expected) and len(view._jobs) == len(expected)
    assert "submit_time" in view._jobs and "nothing" not in view._jobs
    assert view._jobs.get("nothing", "none") == "none"
    with pytest.raises(KeyError):
        view._jobs["nothing"]  # noqa: B018 - the look-up is the test
    assert view.frames()["jobs"]["id"].tolist() == [7, "wide"]


@pytest.mark.parametrize("now", [None, 15.0])
def test_a_callers_bad_queue_is_named_whether_the_kernel_checks_it_or_not(now):
    # now = 15 s: job 7 (20 s) is still to come and the kernel sees the others only
    state, _, _ = trace_state()
    state.set_on_loan(["i0", "i1"])  # 'wide' fits: with now=None no job is left out
    aryl.Decision("aryl", start=[aryl.Worker("run", "t0", 4)]).apply(state)
    with pytest.raises(ValueError, match="queue: job row 9 out of range for 4 jobs"):
        state.schedule("aryl", now=now, queue=[9])
    with pytest.raises(ValueError, match="queue: job row -1 out of range"):
        state.schedule("aryl", now=now, queue=[-1])
    with pytest.raises(ValueError, match="queue: job 'run' is running"):
        state.schedule("aryl", now=now, queue=[2, 0])
    with pytest.raises(ValueError, match="queue: a job is listed twice"):
        state.schedule("aryl", now=now, queue=[2, 2])
    with pytest.raises(TypeError, match="queue must be a list or array of job rows"):
        state.schedule("aryl", now=now, queue=[2.0])
    started = state.schedule("aryl", now=now, queue=[2], grow=[]).decision.start
    assert [w.job for w in started] == ["small"]


def test_the_engines_columns_are_the_ones_python_would_make_and_read_only():
    """The engine hands the view each job's worker count, the queue (in submit
    order), the work left and the service; they must be what the state's own tables
    give, and no policy may write to them."""
    seen = []

    class Checks:
        def allocate(self, state, epoch):
            c = state.columns()
            workers = np.bincount(state._workers["job"], minlength=state.n_jobs)
            queued = np.flatnonzero(workers == 0)
            by_submit = queued[np.argsort(c.submit_time[queued], kind="stable")]
            seen.append(
                (
                    c.workers.tolist() == workers.tolist(),
                    c.queue.tolist() == by_submit.tolist(),
                    all(
                        not getattr(c, name).flags.writeable
                        for name in (
                            "workers",
                            "queue",
                            "remaining",
                            "attained",
                            "waited",
                            "preemptions",
                            "submit_time",
                            "job_id",
                        )
                    ),
                    len(c.queue),
                )
            )
            with pytest.raises(ValueError, match="read-only"):
                c.queue[:] = 0
            return state.schedule("aryl", **epoch.schedule_options)

    jobs = [
        aryl.Job("a", 4, 2, 2, 600.0),
        aryl.Job("late", 8, 1, 1, 300.0, submit_time=60.0),
        aryl.Job("early", 8, 1, 1, 300.0, submit_time=30.0),
        aryl.Job("tie", 8, 1, 1, 300.0, submit_time=30.0),
    ]
    servers = [aryl.Server("t0", "training", 8), aryl.Server("t1", "training", 8)]
    aryl.sim.simulate(jobs, servers, policy=Checks()).check()
    assert len(seen) >= 3 and any(queue > 1 for *_, queue in seen)
    assert all(w and q and ro for w, q, ro, _ in seen), seen
