"""A policy of your own in the compiled simulator (``simulate(..., policy=obj)``).

The kernels asked through the hooks give the built-in runs bit for bit; the docs'
examples run as written; every bad answer is refused with the epoch and the job named;
a policy may preempt, reclaim and reject.
"""

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import Decision, Worker, sim, traces
from aryl.engine.hooks import PolicyError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "policies.md"
COLUMNS = ["start_time", "finish_time", "preemptions", "scaling_ops", "work_lost"]


def docs_blocks():
    """The ```python blocks of docs/policies.md, in order."""
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def docs_policies():
    """The two policies of the docs page, defined as written there."""
    aryl_block, new_block = docs_blocks()[:2]
    namespace = {}
    exec(compile(aryl_block + new_block, str(DOCS), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def week():
    jobs, load = traces.load_default()
    return traces.to_jobs(jobs[jobs["submit_time_s"] < 7 * 86400]), load


class Kernel:
    """A built-in policy and reclaim asked through the hooks."""

    def __init__(self, policy, reclaim=None):
        self.policy = policy
        if reclaim is not None:
            self.reclaim = lambda state, n, epoch: state.reclaim(n, reclaim)

    def allocate(self, state, epoch):
        return state.schedule(self.policy, **epoch.schedule_options)


def assert_same_run(built_in, asked):
    pd.testing.assert_frame_equal(built_in.jobs[COLUMNS], asked.jobs[COLUMNS])
    pd.testing.assert_frame_equal(built_in.timeline, asked.timeline)
    assert built_in.totals == asked.totals
    if built_in.provenance.config.get("audit"):
        assert not built_in.violations and not asked.violations


@pytest.mark.parametrize(
    "row", ["Aryl Basic", "Ablation: Basic, imperfect", "Loaning only, aryl reclaim"]
)
def test_the_docs_aryl_policy_is_the_built_in_one_on_the_embedded_week(
    docs_policies, week, row
):
    jobs, load = week
    run = dict(sim.paper_runs(jobs, load)[row])
    assert run["policy"] == "aryl" and run["reclaim"] == "aryl"
    cluster = sim.Cluster(85, 100)
    built_in = sim.simulate(cluster=cluster, history=True, **run)
    run["policy"] = docs_policies["Aryl"]()
    asked = sim.simulate(cluster=cluster, history=True, **run).check()
    assert_same_run(built_in, asked)
    pd.testing.assert_frame_equal(built_in.history(), asked.history())
    assert built_in.totals["reclaims"] > 0 or row != "Loaning only, aryl reclaim"
    assert asked.label == "aryl via hooks" == asked.provenance.policy


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("policy", ["aryl", "fifo", "sjf", "gandiva", "afs"])
def test_every_built_in_policy_through_the_hooks_on_random_instances(policy, seed):
    raw, load = traces.synthetic(1, 150, seed=seed)
    jobs = sim.scenario(traces.to_jobs(raw), ("basic", "advanced", "ideal")[seed], seed)
    config = {
        "lend_hold": 0,
        "audit": True,
        "backfill": policy == "fifo" and seed == 1,
        "scaling": "imperfect" if seed == 2 else "linear",
    }
    reclaim = ("aryl", "scf", "aryl")[seed]
    run = dict(
        jobs=jobs,
        cluster=sim.Cluster(12, 8),
        reclaim=reclaim,
        inference_load=load,
        config=config,
        seed=seed,
    )
    built_in = sim.simulate(policy=policy, **run)
    asked = sim.simulate(policy=Kernel(policy, reclaim), **run).check()
    assert_same_run(built_in, asked)
    assert asked.summary()["jobs_rejected"] == 0


def test_the_docs_new_policy_runs_and_its_live_loop_as_written(docs_policies, week):
    blocks = docs_blocks()
    new_policy = blocks[1]
    body = new_policy[new_policy.index("class SmallestGpuTimeFirst") :]
    assert len(body.strip().splitlines()) + 1 < 40  # the class and its import
    jobs, load = week
    policy = docs_policies["SmallestGpuTimeFirst"]()
    result = sim.simulate(
        jobs, sim.Cluster(85, 100), policy=policy, inference_load=load
    )
    result.check()
    assert result.summary()["jobs_unfinished"] == 0
    assert result.label == "smallest GPU-time first"
    # The live loop of the page, as written.
    namespace = dict(docs_policies)
    exec(compile(blocks[3], "docs live loop", "exec"), namespace)
    workers = namespace["state"].frames()["workers"]
    assert sorted(workers["job"]) == ["a", "b"]  # b first (less GPU-time), then a


def test_the_docs_comparison_block_runs(docs_policies, week, capsys, monkeypatch):
    jobs, load = traces.load_default()
    monkeypatch.setattr(traces, "load_default", lambda: (jobs[:300], load))
    namespace = dict(docs_policies)
    exec(compile(docs_blocks()[2], "docs comparison", "exec"), namespace)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" mean JCT")[0].strip() for line in lines] == [
        "fifo",
        "aryl",
        "smallest GPU-time first",
        "aryl via hooks",
    ]
    assert lines[1].split()[-2] == lines[3].split()[-2]  # aryl = aryl via hooks


# ---- refused answers -------------------------------------------------------------


def small_run(policy, **config):
    jobs = [
        aryl.Job("a", 4, 2, 2, 600.0),
        aryl.Job("b", 8, 1, 1, 300.0, submit_time=60.0),
    ]
    servers = [aryl.Server("t0", "training", 8), aryl.Server("t1", "training", 8)]
    return sim.simulate(jobs, servers, policy=policy, config=config or None)


class Answer:
    """A policy whose answer is ``answer(state, epoch)``."""

    def __init__(self, answer):
        self.answer = answer

    def allocate(self, state, epoch):
        return self.answer(state, epoch)


@pytest.mark.parametrize(
    "answer, message",
    [
        (
            lambda s, e: Decision("x", start=[Worker("a", "t0", 4)] * 3),
            r"epoch 0 \(t = 0 s\): the policy's decision over-commits server 't0': "
            r"job 'a' starts",
        ),
        (
            lambda s, e: Decision("x", start=[Worker("a", "t0", 4)]),
            r"leaves job 'a' with 1 workers, outside \[min_workers 2, max_workers 2\]",
        ),
        (
            lambda s, e: Decision("x", start=[Worker("zz", "t0", 4)]),
            r"epoch 0 \(t = 0 s\): the policy's decision starts a worker of job 'zz', "
            "which is not queued or running",
        ),
        (
            lambda s, e: Decision("x", start=[Worker("a", "nowhere", 4)] * 2),
            "on unknown server 'nowhere'",
        ),
        (
            lambda s, e: Decision("x", stop=[Worker("a", "t0", 4)]),
            r"epoch 0 \(t = 0 s\): the policy's decision: no worker .* to stop",
        ),
    ],
)
def test_a_bad_decision_is_refused_naming_the_epoch_and_the_job(answer, message):
    with pytest.raises(ValueError, match=message):
        small_run(Answer(answer))


def test_the_view_is_read_only_and_answers_must_be_decisions():
    def applies(state, epoch):
        result = state.schedule("aryl")
        result.apply(state)
        return result

    # the view's refusal is raised in the policy's code: named with the epoch
    with pytest.raises(PolicyError, match="simulator's view of the run: read-only"):
        small_run(Answer(applies))
    with pytest.raises(PolicyError, match=r"epoch 0 \(t = 0 s\).*read-only"):
        small_run(Answer(lambda s, e: s.advance(10.0)))
    with pytest.raises(TypeError, match=r"epoch 0 \(t = 0 s\): allocate must answer"):
        small_run(Answer(lambda s, e: {"a": 2}))
    other = aryl.ClusterState.from_records([aryl.Server("t0", "training", 8)])
    with pytest.raises(ValueError, match="the schedule of another state"):
        small_run(Answer(lambda s, e: other.schedule("aryl")))
    with pytest.raises(TypeError, match="allocate\\(state, epoch\\) method"):
        small_run(object())
    with pytest.raises(TypeError, match="policy.admit must be a method"):
        small_run(type("P", (Kernel,), {"admit": 3})("aryl"))


def test_a_policy_object_runs_fixed_duration_jobs_only():
    workload = traces.pollux_workload(1)
    with pytest.raises(
        ValueError, match="a policy of your own schedules fixed-duration"
    ):
        sim.simulate(
            workload, sim.Cluster(16, 0, gpus_per_server=4), policy=Kernel("aryl")
        )


def lending_run(policy):
    jobs = [aryl.Job(f"j{i}", 8, 1, 2, 4000.0, submit_time=100.0 * i) for i in range(8)]
    servers = [aryl.Server("t0", "training", 8)] + [
        aryl.Server(f"i{k}", "inference", 8) for k in range(4)
    ]
    load = [(0.0, 0.0), (3000.0, 1.0), (9000.0, 0.0)]
    return sim.simulate(
        jobs,
        servers,
        policy=policy,
        inference_load=load,
        config={"lend_hold": 0, "audit": True},
    )


def test_a_reclaim_hook_chooses_the_servers_and_bad_choices_are_refused():
    class LastLentFirst(Kernel):
        def reclaim(self, state, n, epoch):
            lent = [s.id for s in state.servers() if s.on_loan]
            return lent[::-1][:n]

    result = lending_run(LastLentFirst("aryl")).check()
    assert result.totals["reclaims"] > 0 and result.summary()["jobs_unfinished"] == 0

    class TooFew(Kernel):
        def reclaim(self, state, n, epoch):
            return []

    with pytest.raises(
        ValueError,
        match=r"epoch \d+ \(t = 3000 s\): the policy's "
        r"reclaim returns 0 servers; the inference load needs 4 back",
    ):
        lending_run(TooFew("aryl"))

    class Unknown(Kernel):
        def reclaim(self, state, n, epoch):
            return ["nope"] * n

    with pytest.raises(ValueError, match="the policy's reclaim: unknown server 'nope'"):
        lending_run(Unknown("aryl"))

    class NotLent(Kernel):
        def reclaim(self, state, n, epoch):
            return ["t0"] + [s.id for s in state.servers() if s.on_loan][: n - 1]

    with pytest.raises(ValueError, match="reclaim: server 't0' is not on loan"):
        lending_run(NotLent("aryl"))


def test_an_admit_hook_rejects_jobs_for_good():
    class Small(Kernel):
        def __init__(self):
            super().__init__("aryl")
            self.asked = []

        def admit(self, job, epoch):
            self.asked.append((job.id, epoch.now))
            return job.gpus_per_worker < 8

    policy = Small()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "never finished" for a rejected job
        result = small_run(policy).check()
    assert policy.asked == [("a", 0.0), ("b", 60.0)]
    jobs = result.jobs.set_index("id")
    assert list(jobs["rejected"]) == [False, True]
    assert np.isnan(jobs.loc["b", "start_time"]) and np.isfinite(
        jobs.loc["a", "finish_time"]
    )
    summary = result.summary()
    assert (summary["jobs_rejected"], summary["jobs_unfinished"]) == (1, 0)

    class Unsure(Kernel):
        def admit(self, job, epoch):
            return "yes"

    with pytest.raises(TypeError, match=r"epoch 0 \(t = 0 s\): admit must answer True"):
        small_run(Unsure("aryl"))


def test_a_policy_that_stops_a_job_preempts_it():
    class MakeRoom(Kernel):
        """b (8 GPUs) takes t0 from a's first worker: a stops whole, restarts later."""

        def allocate(self, state, epoch):
            queued = set(state.job_ids) - {w.job for w in state.workers()}
            if epoch.now == 60.0 and queued == {"b"}:
                return Decision(
                    "make room", start=[Worker("b", "t0", 8)], stop=state.workers()
                )
            return state.schedule("aryl", **epoch.schedule_options)

    result = small_run(MakeRoom("aryl"), audit=True, restart_overhead=10.0)
    result.check()
    jobs = result.jobs.set_index("id")
    assert jobs.loc["a", "preemptions"] == 1
    assert jobs.loc["b", "start_time"] == 60.0
    assert result.summary()["jobs_unfinished"] == 0


@pytest.mark.parametrize("seed", range(2))
def test_a_saturated_run_passes_over_jobs_refused_for_faster_gpus_as_the_whole_queue_decides(
    seed,
):
    """Saturated with jobs that may run on any GPU type, most queued jobs are refused
    the lent T4s at every epoch (they finish sooner waiting for a V100). The
    built-in engine lets the kernel pull its queue and pass over the later jobs of
    a refused one's shape; asked through the hooks the kernel sees the whole queue.
    Both runs are the same; the built-in one pulls each job a few times, not at
    every epoch it waits (without passing over: 33 and 31 pulls per job)."""
    raw, load = traces.synthetic(1, 600, seed=seed)
    jobs = sim.scenario(
        traces.to_jobs(raw, any_type_share=1.0, seed=seed), "basic", seed
    )
    run = dict(
        jobs=jobs,
        cluster=sim.Cluster(8, 8),
        inference_load=load,
        config={"lend_hold": 0, "audit": True},
        seed=seed,
    )
    built_in = sim.simulate(policy="aryl", **run).check()
    asked = sim.simulate(policy=Kernel("aryl"), **run).check()
    assert_same_run(built_in, asked)
    assert built_in.timeline["queue_length"].mean() > 10  # saturated
    assert built_in.engine_counters["jobs_pulled"] < 5 * len(jobs)
