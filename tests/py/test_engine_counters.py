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
    # Planned: the first two epochs (arrivals) and one per finish but the last;
    # each touches the one job running or the one it starts. Every other is quiet.
    assert planned == 2 + 3
    assert counters["epochs_quiet"] == counters["epochs"] - planned
    assert counters["jobs_touched"] == planned
    assert counters["most_touched"] == 1  # one job runs at a time, none pulled idly


def test_a_full_cluster_pulls_no_queued_job():
    queued = 40
    result = full_cluster_run(queued)
    counters = result.engine_counters
    # Each job is pulled once, at the epoch that starts it: never while the
    # server is full, whatever the queue's length.
    assert counters["jobs_pulled"] == queued + 1
    assert result.summary()["jobs_finished"] == queued + 1


def test_counters_are_a_measurement_not_a_result():
    a, b = full_cluster_run(2), full_cluster_run(2)
    assert a.engine_counters == b.engine_counters
    b.engine_counters = {}
    assert a == b  # equality ignores them (not saved either)
