"""The answer first: the loaning ledger, the verdict lines, honest intervals, groups
and Tiresias on fixed-duration jobs, each against a hand-computed case."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aryl import Server, sim, studies, traces
from aryl.studies.confidence import MIN_REPLICATIONS
from aryl.studies.replications import replications_over
from aryl.studies.verdict import NO_LOAD, answer, verdict_lines

HOUR = 3600.0


def job(id_, gpus, duration, submit, **more):
    """A one-worker job record (``more``: other fields)."""
    return {
        "id": id_,
        "gpus_per_worker": gpus,
        "min_workers": 1,
        "max_workers": 1,
        "duration": duration,
        "submit_time": submit,
        **more,
    }


def loan_cluster():
    """One 8-GPU training server and one 8-GPU inference server to lend."""
    return [
        Server("train", "training", 8, "V100"),
        Server("loan", "inference", 8, "T4"),
    ]


def loan_run(load, checkpoint=True):
    """Y holds the training server 5000 s; X (arriving at 10) runs on the loaned one
    from the epoch at 60 until the load takes it back. Loaned T4s at full speed."""
    jobs = [job("Y", 8, 5000.0, 0.0), job("X", 8, 1000.0, 10.0, checkpoint=checkpoint)]
    config = sim.Config(gpu_speed={"V100": 1.0, "T4": 1.0})
    return sim.simulate(jobs, loan_cluster(), inference_load=load, config=config)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_the_ledger_of_one_reclaim(checkpoint):
    # Lent at 0, taken back at 300 s when the load needs the server: 8 GPUs x 300 s
    # lent, X used them 60-300 s; one reclaim, one preemption of X.
    s = loan_run([(0.0, 0.0), (300.0, 1.0)], checkpoint).check().summary()
    assert s["lent_gpu_hours"] == pytest.approx(8 * 300 / HOUR)
    assert s["lent_used_gpu_hours"] == pytest.approx(8 * 240 / HOUR)
    assert s["lent_used_share"] == pytest.approx(240 / 300)
    assert (s["reclaims"], s["servers_reclaimed"], s["preemptions"]) == (1, 1, 1)
    if checkpoint:  # progress kept; 8 GPUs held for the 63 s restart overhead
        assert s["work_lost_gpu_hours"] == 0.0
        assert s["restart_gpu_hours"] == pytest.approx(8 * 63 / HOUR)
    else:  # 240 s of progress on 8 GPUs thrown away
        assert s["work_lost_gpu_hours"] == pytest.approx(8 * 240 / HOUR)
        assert s["restart_gpu_hours"] == 0.0
    assert s["inference_short_server_hours"] == 0.0  # the decision met the rise


def test_a_load_rising_between_decisions_gets_its_server_back_late():
    # The load needs the server from 100 s; the next loan decision is at 300 s.
    s = loan_run([(0.0, 0.0), (100.0, 1.0)]).summary()
    assert s["inference_short_server_hours"] == pytest.approx(200 / HOUR)
    assert s["lent_gpu_hours"] == pytest.approx(8 * 300 / HOUR)


def test_no_load_lends_nothing():
    jobs = [job(1, 8, 100.0, 0.0)]
    s = sim.simulate(jobs, loan_cluster()).summary()
    assert s["lent_gpu_hours"] == s["lent_used_gpu_hours"] == 0.0
    assert s["lent_used_share"] == 0.0 and s["reclaims"] == 0


# ---- the verdict lines ----------------------------------------------------------


class Replicated:
    """A stand-in for a replicated ``Comparison``: only ``samples`` is read."""

    def __init__(self, jct, windows=1):
        rows = []
        for name, values in jct.items():
            for i, v in enumerate(values):
                seeds = len(values) // windows
                rows.append(
                    {
                        "run": name,
                        "seed": i % seeds,
                        "window": i // seeds,
                        "jct_mean": v,
                    }
                )
        self.samples = pd.DataFrame(rows)


def test_no_detectable_gain_reads_as_the_audit_asked():
    same = [100.0, 102.0, 98.0, 101.0, 99.0]
    noise = [100.1, 101.9, 98.0, 101.05, 98.95]
    lines = verdict_lines(
        Replicated(
            {
                "Aryl Basic": same,
                "Elastic only, aryl": noise,
                "Loaning only, aryl reclaim": [v * 1.11 for v in same],
            }
        )
    )
    assert lines[0].startswith("Loaning: no detectable gain on this trace (1.000x [")
    assert lines[0].endswith(", 5 seeds)")
    # without / with = 1.11 exactly in every seed: 1 - 1/1.11 = 9.9% shorter
    assert lines[1] == (
        "Elastic scaling: 9.9% shorter mean JCT, the same in every replication "
        "(deterministic: no random draw differs between them) (1.110x (no spread), "
        "5 seeds)"
    )
    # seeds alone: the last line says what the intervals leave out
    assert lines[2].startswith("(Intervals over 5 seeds cover the runs' random draws")


def test_one_run_gives_the_change_and_says_there_is_no_interval():
    summaries = {
        "Aryl Basic": {"jct_mean": 90.0},
        "Elastic only, aryl": {"jct_mean": 90.0},
        "Loaning only, aryl reclaim": {"jct_mean": 100.0},
    }
    lines = verdict_lines(summaries=summaries)
    assert lines[0] == (
        "Loaning: no change in one run, no interval (--seeds 5 gives one) "
        "(1.00x, one run)"
    )
    assert lines[1].startswith("Elastic scaling: 10.0% shorter mean JCT in one run")


def test_a_missing_row_is_named_and_elasticity_falls_back_to_the_control():
    summaries = {
        "Elastic only, aryl": {"jct_mean": 80.0},
        "Control: SJF, no loaning": {"jct_mean": 100.0},
    }
    loaning, elastic = verdict_lines(summaries=summaries, missing=NO_LOAD)
    assert loaning == (
        "Loaning: cannot tell, the row(s) 'Aryl Basic' did not run (the loaning rows "
        "run only with an inference load series, --load)"
    )
    # with a load series the row was left out of the rows chosen: how to add it
    chosen, _ = verdict_lines(summaries=summaries)
    assert chosen == (
        "Loaning: cannot tell, it needs the row(s) 'Aryl Basic', left out of the rows "
        "run: add them (--rows 'Aryl Basic') or leave --rows out"
    )
    assert "--load" not in chosen
    assert elastic.startswith("Elastic scaling: 20.0% shorter mean JCT in one run")
    assert elastic.endswith("; Elastic only, aryl over Control: SJF, no loaning)")


def test_a_change_too_small_to_matter_is_not_read_as_a_finding():
    # 1.00001x [1.000005, 1.00002]: the interval excludes 1, the change is ~0.001%
    text = answer(studies.confidence.Estimate(0.99999, 0.999985, 0.999995, 5))
    assert text.startswith("no gain that matters") and "longer" not in text
    assert "longer" in answer(studies.confidence.Estimate(0.99, 0.985, 0.995, 5))


def test_a_loss_reads_as_longer_and_the_interval_is_over_the_windows():
    assert "longer mean JCT" in answer(studies.confidence.Estimate(0.8, 0.7, 0.9, 5))
    samples = Replicated({"a": [1.0] * 6}, windows=2).samples
    assert replications_over(samples) == "2 windows, each the mean of 3 seeds"
    assert replications_over(Replicated({"a": [1.0]}).samples) == "one run"


# ---- honest intervals -----------------------------------------------------------


def small_trace():
    rng = np.random.default_rng(0)
    return [
        job(i, int(rng.choice([1, 2, 4, 8])), float(rng.uniform(300, 3000)), 120.0 * i)
        for i in range(30)
    ]


def test_fewer_replications_than_the_minimum_warn_naming_n():
    runs = {"fifo": {"policy": "fifo"}, "sjf": {"policy": "sjf"}}
    with pytest.warns(UserWarning, match=r"n = 2 only.*\(2 seeds\).*use 5 or more"):
        sim.compare(small_trace(), sim.Cluster(2, 0), runs, seeds=2)
    with pytest.warns(UserWarning, match=r"no intervals at all \(one run\)"):
        sim.compare(small_trace(), sim.Cluster(2, 0), runs, windows=1)
    assert MIN_REPLICATIONS == 5  # docs/confidence.md says five


# ---- per-user and per-group metrics ----------------------------------------------


def grouped_result():
    """Four one-GPU jobs on one GPU, started at epochs (every 60 s) in FIFO order:
    ann 0-100, bob 120-320, ann 360-460, no user 480-580."""
    jobs = [job(i, 1, d, 0.0) for i, d in enumerate([100.0, 200.0, 100.0, 100.0])]
    result = sim.simulate(jobs, [Server("s", "training", 1, "V100")], policy="fifo")
    result.jobs["user"] = ["ann", "bob", "ann", None]
    result.jobs["vc"] = ["x", "x", "x", "y"]
    return result


def test_groups_have_jct_queuing_and_slowdown_per_user():
    result = grouped_result()
    assert list(result.jobs["jct"]) == [100.0, 320.0, 460.0, 580.0]
    g = result.groups("user")
    assert list(g.index) == ["ann", "bob"]  # largest first; no user: left out
    assert list(g["jobs"]) == [2, 1] and list(g["finished"]) == [2, 1]
    assert g.loc["ann", "jct_mean"] == 280.0 and g.loc["bob", "queuing_mean"] == 120.0
    # slowdown = JCT / (finish - start): ann (100/100 + 460/100) / 2, bob 320/200
    assert g.loc["ann", "slowdown_mean"] == pytest.approx(2.8)
    assert g.loc["bob", "slowdown_mean"] == pytest.approx(1.6)
    assert result.summary()["user_slowdown_spread"] == pytest.approx(2.8 / 1.6)
    assert result.groups("vc").loc["y", "jct_mean"] == 580.0


def test_groups_without_the_column_say_so_and_the_spread_is_left_out():
    result = grouped_result()
    result.jobs["user"] = None
    with pytest.raises(ValueError, match="no 'user' values"):
        result.groups("user")
    assert "user_slowdown_spread" not in result.summary()


# ---- Tiresias on fixed-duration jobs --------------------------------------------


def test_tiresias_demotes_a_long_job_for_a_new_one_by_hand():
    # One 8-GPU server, epochs every 60 s, demotion at 8 GPUs x 600 s.
    # A (8 GPUs, 10,000 s) arrives at 10 and starts at the epoch at 60. B (8 GPUs,
    # 590 s) arrives at 100 and waits in queue 0 behind A until A has run 600 s: at
    # 660 A is demoted and preempted (checkpoint), B runs 660-1250; A restarts at
    # the epoch at 1260, pays the 63 s overhead and finishes its 9,400 s at 10,723.
    jobs = [job("A", 8, 10000.0, 10.0), job("B", 8, 590.0, 100.0)]
    config = sim.Config(tiresias_threshold=8 * 600.0)
    r = sim.simulate(jobs, sim.Cluster(1, 0), policy="tiresias", config=config)
    j = r.check().jobs.set_index("id")
    assert j.loc["A", "start_time"] == 60.0 and j.loc["B", "start_time"] == 660.0
    assert j.loc["B", "finish_time"] == pytest.approx(1250.0)
    assert j.loc["A", "finish_time"] == pytest.approx(1260.0 + 63.0 + 9400.0)
    assert list(j["preemptions"]) == [1, 0]
    assert r.summary()["restart_gpu_hours"] == pytest.approx(8 * 63 / HOUR)


def test_tiresias_runs_jobs_at_their_trace_size_and_refuses_to_lend():
    jobs = [job(1, 2, 600.0, 0.0, max_workers=4)]
    r = sim.simulate(jobs, sim.Cluster(1, 0), policy="tiresias")
    ran = r.jobs.loc[0, "finish_time"] - r.jobs.loc[0, "start_time"]
    assert ran == pytest.approx(600.0)  # 4 workers at once: its trace's time
    with pytest.raises(ValueError, match="tiresias.*lends nothing"):
        sim.simulate(
            jobs, sim.Cluster(1, 1), policy="tiresias", inference_load=[(0, 0.5)]
        )
    off = sim.Config(loaning=False)
    sim.simulate(
        jobs,
        sim.Cluster(1, 1),
        policy="tiresias",
        inference_load=[(0, 0.5)],
        config=off,
    ).check()


# ---- the README's loaning sentence ----------------------------------------------


def readme_ledger():
    """The README's main-job ledger rows: row name -> its cells."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("loaning ledger  ")[1].split("\n\n")[0].splitlines()[2:]
    return {line[:30].strip(): line[30:].split() for line in block}


def test_the_readme_sentence_is_the_ledger_of_the_main_job():
    ledger = readme_ledger()
    lent, used, share = (ledger["Aryl Basic"][i] for i in (0, 2, 4))
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    sentence = (
        f"of the {lent.split('.')[0]} GPU-hours lent in Aryl Basic, training used "
        f"{round(float(used.replace(',', '')))}, {share}; {ledger['Aryl Ideal'][4]} "
        "in Aryl Ideal"
    )
    assert sentence in " ".join(text.split())


def test_the_readme_ledger_is_what_the_main_job_computes():
    # Aryl Basic over the main job's five seeds, on its cluster (85 + 100 servers).
    frame, load = traces.load_default()

    def basic(seed):
        jobs = traces.to_jobs(frame, seed=seed)
        return {"Aryl Basic": sim.paper_runs(jobs, load, seed=seed)["Aryl Basic"]}

    out = sim.compare(
        traces.to_jobs(frame), sim.Cluster(85, 100), basic, load, seeds=5, threads=2
    )
    row, shown = out.loc["Aryl Basic"], readme_ledger()["Aryl Basic"]
    assert f"{row['lent_gpu_hours']:,.1f}" == shown[0]
    assert f"{row['lent_used_gpu_hours']:,.1f}" == shown[2]
    assert f"{row['lent_used_share']:.2%}" == shown[4]


def test_figures_of_one_run_per_row_carry_the_note_naming_the_seed(tmp_path):
    from aryl import plot

    note = "seed 3, the first of 5 seeds; means and intervals: speedups and compare.csv"
    written = plot.save_all(grouped_result(), tmp_path, formats=("svg",), note=note)
    for path in written:  # matplotlib keeps each text as a comment beside its glyphs
        assert note in path.read_text(), path.name
