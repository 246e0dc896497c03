"""What the compiled engine's epochs touch (``Result.engine_counters``, issue 46): an
epoch with nothing to do (no free capacity, no arrival, finish, loan or reclaim)
touches no job, and the kernel pulls a queued job only when the placer has room
for it, so a long queue behind a full cluster costs its epochs nothing."""

import aryl
from aryl import sim

HOUR = 3600.0


def full_cluster_run(queued: int):
    """One 8-GPU server held by a 10-hour job while `queued` others of 8 GPUs wait
    (submitted in its first minutes), each 10 hours too: ~60 quiet epochs an hour."""
    jobs = [aryl.Job("run", 8, 1, 1, 10 * HOUR)] + [
        aryl.Job(f"q{k}", 8, 1, 1, 10 * HOUR, submit_time=1.0 + k)
        for k in range(queued)
    ]
    return sim.simulate(jobs, sim.Cluster(1, 0), config={"audit": True}).check()


def test_an_epoch_with_nothing_to_do_touches_no_job():
    result = full_cluster_run(queued=3)
    counters = result.engine_counters
    planned = int(result.totals["epochs_run"])
    assert counters["epochs"] > 2000  # 40 hours of 60 s epochs
    # Planned (the kernel ran): the first two epochs (arrivals) and one per finish
    # but the last. The first and each after a finish touch the one job they start;
    # the second touches none: the job running is left out (the kernel could not
    # change it) and the arrivals find no room. Every other epoch is quiet.
    assert planned == 2 + 3
    assert counters["epochs_quiet"] == counters["epochs"] - (planned - 1)
    assert counters["jobs_touched"] == planned - 1
    assert counters["most_touched"] == 1  # one job runs at a time, none pulled idly


def test_a_full_cluster_pulls_no_queued_job():
    queued = 40
    result = full_cluster_run(queued)
    counters = result.engine_counters
    # Each job is pulled once, at the epoch that starts it: never while the
    # server is full, whatever the queue's length.
    assert counters["jobs_pulled"] == queued + 1
    assert result.summary()["jobs_finished"] == queued + 1


def test_an_epoch_leaves_out_the_running_jobs_the_kernel_cannot_change():
    """Jobs of a fixed size (min = max workers) keep their workers until they finish:
    an epoch hands the kernel only what it may change (elastic jobs, and the queued
    jobs it pulls), so six jobs started a minute apart cost one job each."""
    jobs = [
        aryl.Job(f"r{k}", 8, 1, 1, (10 + k) * HOUR, submit_time=60.0 * k)
        for k in range(6)
    ]
    result = sim.simulate(jobs, sim.Cluster(6, 0), config={"audit": True}).check()
    assert result.summary()["jobs_finished"] == 6
    assert result.engine_counters["jobs_touched"] == 6  # each pulled once
    assert result.engine_counters["most_touched"] == 1  # the others running: none


def test_counters_are_a_measurement_not_a_result():
    a, b = full_cluster_run(2), full_cluster_run(2)
    assert a.engine_counters == b.engine_counters
    b.engine_counters = {}
    assert a == b  # equality ignores them (not saved either)
