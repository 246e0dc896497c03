"""aryl.agents: the JobAgent interface and PolluxAgent."""

import pytest

import aryl.sim as sim
from aryl import Job
from aryl.agents import BatchChoice, JobAgent, PolluxAgent, packed_nodes
from aryl.traces import pollux_application


def profiled_agent(name="cifar10", batch_size=None):
    app = pollux_application(name)
    agent = PolluxAgent.for_application(app, batch_size=batch_size)
    sqr, var = app.core.grad_stats(app.init_batch_size, 0)
    for placement in ([1], [2], [4], [2, 2], [4, 4]):
        for bsz in (app.min_local_bsz, 2 * app.min_local_bsz):
            step, sync = app.core.step_time(placement, bsz)
            agent.observe(
                len(placement),
                sum(placement),
                bsz,
                step,
                sync,
                grad_sqr=sqr,
                grad_var=var,
            )
    return agent


def test_before_any_profile_pollux_is_optimistic():
    agent = PolluxAgent(128, 4096, 32, 1024)
    assert agent.speedup(2, 8) == 8.0
    assert agent.speedup(0, 0) == 0.0
    assert agent.throughput_curve(3) == [1.0, 2.0, 3.0]
    assert agent.max_replicas == 1
    # An adaptive job starts at max(M0, min_local_bsz * K).
    assert agent.batch(1, 8).batch_size == 256
    with pytest.raises(ValueError, match="no model yet"):
        agent.goodput(1, 1)


def test_observe_keeps_the_first_measurement_and_refits():
    agent = PolluxAgent(128, 4096, 32, 1024)
    assert agent.observe(1, 1, 128, 0.1, 0.001, grad_sqr=1.0, grad_var=50.0)
    assert not agent.observe(1, 1, 128, 0.5, 0.001)
    assert agent.profile["step_time"].tolist() == [0.1]
    assert agent.perf_params["alpha_c"] == pytest.approx(0.099 / 2)  # one batch: pinned
    assert agent.speedup(1, 1) == pytest.approx(1.0)
    assert agent.max_replicas == 2


def test_goodput_speedup_and_curve_agree():
    agent = profiled_agent()
    one = agent.goodput(1, 1)
    assert isinstance(one, BatchChoice)
    for n, k in ((1, 2), (1, 4), (2, 8)):
        choice = agent.goodput(n, k)
        assert choice.batch_size == k * choice.atomic_bsz * (choice.accum_steps + 1)
        assert choice.goodput == pytest.approx(choice.throughput * choice.efficiency)
        assert agent.speedup(n, k) == pytest.approx(choice.goodput / one.goodput)
    curve = agent.throughput_curve(4, gpus_per_worker=2)
    assert curve[0] == 1.0
    assert curve[1] == pytest.approx(agent.speedup(1, 4) / agent.speedup(1, 2))
    assert curve[2] == pytest.approx(agent.speedup(2, 6) / agent.speedup(1, 2))
    assert agent.max_replicas == 16


def test_fixed_batch_is_kept():
    agent = profiled_agent(batch_size=2048)
    for n, k in ((1, 1), (1, 4), (2, 8)):
        choice = agent.batch(n, k)
        assert choice.batch_size <= 2048 and choice.atomic_bsz <= 1024
    assert agent.batch(1, 4).atomic_bsz == 512
    assert agent.batch(1, 1)[1:3] == (1024, 1)  # one replica above M0 accumulates


def test_curve_drives_the_simulator():
    agent = profiled_agent()
    curve = agent.throughput_curve(4)
    jobs = [Job("a", 1, 1, 4, duration=600)]
    result = sim.simulate(
        jobs,
        sim.Cluster(training_servers=1, inference_servers=0),
        throughput={"a": curve},
    )
    result.check()
    assert result.jobs["finish_time"].notna().all()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="max_batch_size"):
        PolluxAgent(128, 64, 1, 8)
    with pytest.raises(ValueError, match="max_local_bsz must be an integer >= 8"):
        PolluxAgent(128, 256, 8, 4)
    agent = PolluxAgent(128, 4096, 32, 1024)
    with pytest.raises(ValueError, match="sync_time must be in"):
        agent.observe(1, 1, 128, 0.1, 0.2)
    with pytest.raises(ValueError, match="num_replicas must be an integer >= 2"):
        agent.observe(2, 1, 128, 0.1, 0.0)
    with pytest.raises(ValueError, match="together"):
        agent.observe(1, 1, 128, 0.1, 0.0, grad_sqr=1.0)
    with pytest.raises(ValueError, match="max_workers"):
        agent.throughput_curve(0)
    with pytest.raises(ValueError, match="unknown Pollux application"):
        PolluxAgent.for_application("gpt")


def test_a_custom_agent_gets_the_curve_for_free():
    class Linear(JobAgent):
        def observe(self, *args, **kwargs):
            return False

        def goodput(self, num_nodes, num_replicas):
            return BatchChoice(
                float(num_replicas), 1, 0, num_replicas, float(num_replicas), 1.0
            )

        def speedup(self, num_nodes, num_replicas):
            return num_replicas / (1 + 0.1 * (num_nodes - 1))

    assert Linear().throughput_curve(
        3, gpus_per_worker=4, gpus_per_node=8
    ) == pytest.approx([1.0, 2.0, 3 / 1.1])
    assert packed_nodes(9, 4) == 3 and packed_nodes(0, 4) == 0
