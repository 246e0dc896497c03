"""Aryl+TunedJobs: aryl's kernel driving goodput-driven jobs with Pollux agents, and
the seeded mapping of aryl's traces onto Pollux applications."""

import math

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import _core, sim, studies, traces
from aryl.agents import PolluxAgent
from aryl.cli import main

# alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma
PERF = (0.1, 0.001, 0.05, 0.01, 0.01, 0.001, 1.0)
LIMITS = (32.0, 1024.0, 16, 256)  # M0, M_max, min and max local batch


def model(grad_sqr, grad_var):
    return _core.GoodputModel(PERF, grad_sqr, grad_var, *LIMITS)


def t_net(nodes, replicas):
    """The model's network time, by hand."""
    if replicas == 1:
        return 1e-8 + 1e-8 * 1e-8
    a, b = (PERF[2], PERF[3]) if nodes > 1 else (PERF[4], PERF[5])
    return a + b * max(replicas - 2, 1e-8)


# ---- the agent's batch choice ---------------------------------------------------------


def test_without_gradient_noise_the_smallest_batch_wins():
    # var = 0: efficiency M0 / M, goodput M0 / ((s + 1) T_accum(m) + T_net): the smallest
    # batch (M0 = 32 on one replica, no accumulation) is best.
    goodput, atomic, accum, _, efficiency = model(1.0, 0.0).optimize(1, 1)
    assert (atomic, accum) == (32, 0)
    assert efficiency == pytest.approx(1.0)
    assert goodput == pytest.approx(32 / (0.1 + 0.001 * 32 + t_net(1, 1)))


def test_with_pure_noise_the_largest_batch_wins_with_accumulation():
    # sqr = 0: efficiency 1 everywhere, goodput = throughput m (s+1) / ((s+1) T_accum + T_net),
    # largest at the biggest local batch 256; on one replica M_max = 1024 takes 3
    # accumulation steps of 256 (which also amortise T_net best).
    goodput, atomic, accum, _, efficiency = model(0.0, 1.0).optimize(1, 1)
    assert (atomic, accum) == (256, 3)
    assert efficiency == pytest.approx(1.0)
    assert goodput == pytest.approx(1024 / (4 * (0.1 + 0.256) + t_net(1, 1)))
    # Four replicas on one node: local 256 each, no accumulation.
    goodput, atomic, accum, _, _ = model(0.0, 1.0).optimize(1, 4)
    assert (atomic, accum) == (256, 0)
    assert goodput == pytest.approx(1024 / (0.1 + 0.256 + t_net(1, 4)))


def test_the_agent_rechooses_what_the_model_says():
    agent = PolluxAgent(*LIMITS)
    before = agent.batch(1, 2)  # no model yet: max(M0, m_min K) = 32 over 2 replicas
    assert (before.atomic_bsz, before.accum_steps) == (16, 0)
    for k, m in ((1, 32), (2, 64), (4, 128)):
        agent.observe(
            1,
            k,
            m,
            step_time=0.1 + 0.001 * m + t_net(1, k),
            sync_time=t_net(1, k),
            grad_sqr=0.0,
            grad_var=1.0,
        )
    choice = agent.batch(1, 4)
    assert (choice.atomic_bsz, choice.accum_steps) == (256, 0)


# ---- the mapping ---------------------------------------------------------------------


def test_app_choice_follows_the_gpu_time_buckets():
    hours = [0.5, 0.99, 1.0, 9.9, 10.0, 99.0, 100.0, 5000.0]
    apps = traces.pollux_app_choice(hours, seed=3)
    assert apps[0] in ("cifar10", "ncf") and apps[1] in ("cifar10", "ncf")
    assert apps[2] in ("deepspeech2", "bert") and apps[3] in ("deepspeech2", "bert")
    assert list(apps[4:6]) == ["yolov3", "yolov3"]
    assert list(apps[6:]) == ["imagenet", "imagenet"]
    assert list(traces.pollux_app_choice(hours, seed=3)) == list(apps)


def test_app_choice_splits_each_bucket_evenly_on_a_large_sample():
    rng = np.random.default_rng(0)
    hours = 10 ** rng.uniform(-2, 3, 40_000)
    apps = pd.Series(traces.pollux_app_choice(hours, seed=1))
    low = apps[hours < 1].value_counts(normalize=True)
    mid = apps[(hours >= 1) & (hours < 10)].value_counts(normalize=True)
    assert low["cifar10"] == pytest.approx(0.5, abs=0.02)
    assert low["ncf"] == pytest.approx(0.5, abs=0.02)
    assert mid["bert"] == pytest.approx(0.5, abs=0.02)
    assert mid["deepspeech2"] == pytest.approx(0.5, abs=0.02)
    # GPU-time shares per application follow from the buckets.
    share = pd.Series(hours).groupby(apps.values).sum() / hours.sum()
    big = hours[hours >= 100].sum() / hours.sum()
    assert share["imagenet"] == pytest.approx(big)


def test_app_choice_rejects_bad_hours():
    for bad in ([-1.0], [math.nan], [[1.0]]):
        with pytest.raises(ValueError, match="gpu_hours"):
            traces.pollux_app_choice(bad)


def small_jobs():
    return [
        aryl.Job("a", 1, 1, 4, 600.0, 0.0, reference_workers=2),
        aryl.Job("b", 2, 1, 1, 3 * 3600.0, 30.0),
        aryl.Job("c", 4, 1, 2, 5 * 3600.0, 90.0, reference_workers=1),
        aryl.Job("d", 1, 1, 1, 200.0, 100.0),
    ]


def test_mapping_is_seeded_and_keeps_durations():
    jobs = small_jobs()
    w = traces.pollux_profiles(jobs, seed=7, node_gpus=4)
    pd.testing.assert_frame_equal(w, traces.pollux_profiles(jobs, seed=7, node_gpus=4))
    assert list(w["name"]) == ["a", "b", "c", "d"]
    assert list(w["application"][2:3]) == ["yolov3"]  # 4 GPUs x 5 h = 20 GPU-hours
    assert w.loc[1, "application"] in ("deepspeech2", "bert")  # 2 GPUs x 3 h
    assert list(w["min_replicas"]) == [1, 2, 4, 1]
    assert list(w["max_replicas"]) == [4, 2, 8, 1]
    assert list(w["num_replicas"]) == [2, 2, 4, 1]
    # Alone on its compact placement at the user's batch, each job runs its duration.
    for _, row in w.iterrows():
        app = traces.pollux_application(row["application"])
        solo = traces.pollux_mapping.solo_time(
            app, row["num_replicas"], row["batch_size"], 4
        )
        assert row["work_scale"] * solo == pytest.approx(row["duration"])


def test_mapping_rejects_bad_input():
    with pytest.raises(ValueError, match="node_gpus"):
        traces.pollux_profiles(small_jobs(), node_gpus=0)
    with pytest.raises(ValueError, match="no profiles"):
        traces.pollux_profiles(small_jobs(), profiles={})


# ---- end to end -------------------------------------------------------------------------

CLUSTER = sim.Cluster(4, 0, gpus_per_server=4)


def mapped(n=16, seed=0):
    """n seeded jobs of 1-2 replicas (elastic up to 3 more), mapped onto Pollux apps."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        d = float(rng.uniform(300, 4 * 3600))
        lo = int(rng.integers(1, 3))
        records.append(
            aryl.Job(
                f"j{i}",
                1,
                lo,
                lo + int(rng.integers(0, 4)),
                d,
                float(60 * i),
                reference_workers=lo,
            )
        )
    return traces.pollux_profiles(records, seed=seed, node_gpus=4)


def run(workload, agent=None, **config):
    return sim.simulate(
        workload,
        CLUSTER,
        policy="aryl",
        config={"audit": True, "agent": agent, **config},
    )


@pytest.mark.parametrize("agent", [None, "pollux"])
def test_every_job_finishes_once_and_the_invariants_hold(agent):
    w = mapped()
    result = run(w, agent).check()
    jobs = result.jobs
    assert result.summary()["jobs_unfinished"] == 0
    assert list(jobs["id"]) == list(w["name"])
    assert jobs["finish_time"].notna().all()
    assert (jobs["start_time"] >= jobs["submit_time"]).all()
    assert (result.timeline["training_gpus_used"] <= 16).all()
    total = sum(
        s
        * traces.pollux_application(a).core.epoch_progress(
            traces.pollux_application(a).max_epochs
        )
        for a, s in zip(w["application"], w["work_scale"])
    )
    assert result.totals["work_completed"] == pytest.approx(total)


def test_tuned_runs_are_deterministic_and_differ_from_plain():
    w = mapped()
    a, b = run(w, "pollux"), run(w, "pollux")
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    plain = run(w)
    assert not a.jobs["finish_time"].equals(plain.jobs["finish_time"])


def alone(agent):
    """One cifar10 job (batch 128, at least 32 per replica) allowed 1..16 replicas
    on 16 free GPUs: the GPUs it holds over its run."""
    w = pd.DataFrame(
        {
            "name": ["x"],
            "time": [0.0],
            "application": ["cifar10"],
            "num_replicas": [1],
            "batch_size": [128],
            "min_replicas": [1],
            "max_replicas": [16],
            "work_scale": [0.05],
        }
    )
    result = run(w, agent).check()
    used = result.timeline["training_gpus_used"]
    return used[used > 0]


def test_an_untuned_job_never_outgrows_its_batch():
    # 128 / 32 = 4 replicas at most: more would leave a replica below 32 samples.
    assert 1 < alone(None).max() <= 4


def test_a_tuned_job_grows_its_batch_with_its_replicas():
    # Its agent may raise the batch (up to 4096), so more replicas are worth having.
    assert alone("pollux").max() > 4


def test_rigid_jobs_under_plain_aryl_never_scale():
    w = mapped()
    w["min_replicas"] = w["max_replicas"] = w["num_replicas"]
    result = run(w)
    assert result.jobs["scaling_ops"].sum() == 0


def test_bad_agent_or_policy_is_refused():
    w = mapped(4)
    with pytest.raises(ValueError, match="unknown agent"):
        run(w, "optimus")
    with pytest.raises(ValueError, match="needs policy 'aryl'"):
        sim.simulate(
            w.assign(min_replicas=w["num_replicas"], max_replicas=w["num_replicas"]),
            CLUSTER,
            policy="tiresias",
            config={"agent": "pollux"},
        )
    with pytest.raises(ValueError, match="Pollux workload"):
        sim.simulate(
            [aryl.Job("x", 1, 1, 1, 10.0)], CLUSTER, config={"agent": "pollux"}
        )
    with pytest.raises(ValueError, match="work_scale"):
        run(w.assign(work_scale=[1.0, 0.0, 1.0, 1.0]))


def test_paper_runs_add_the_pollux_rows_only_when_asked():
    jobs = [
        aryl.Job(f"j{i}", 1, w, w, 600.0 + 60 * i, 30.0 * i)
        for i, w in enumerate([8, 1, 1, 2] * 3)
    ]
    assert not set(sim.POLLUX_ROWS) & set(sim.paper_runs(jobs))
    runs = sim.paper_runs(jobs, pollux_rows=True, node_gpus=4)
    assert list(runs)[-2:] == list(sim.POLLUX_ROWS)
    tuned, pollux = runs["Aryl+TunedJobs"], runs["Pollux"]
    assert tuned["policy"] == "aryl" and tuned["config"]["agent"] == "pollux"
    assert pollux["policy"] == "pollux" and "agent" not in pollux["config"]
    assert tuned["jobs"] is pollux["jobs"]
    for row in (tuned, pollux):
        assert row["config"]["loaning"] is False
        result = sim.simulate(cluster=CLUSTER, **row).check()
        assert result.summary()["jobs_unfinished"] == 0


def test_pollux_nodes_split_the_training_servers():
    nodes = sim.pollux_nodes(sim.Cluster(85, 100))
    assert (nodes.training_servers, nodes.inference_servers) == (170, 0)
    assert nodes.gpus_per_server == 4
    with pytest.raises(ValueError, match="do not split"):
        sim.pollux_nodes(sim.Cluster(2, 0, gpus_per_server=6))
    with pytest.raises(ValueError, match="needs a Cluster"):
        sim.pollux_nodes([])


def test_compare_adds_the_pollux_rows(tmp_path, capsys):
    jobs, _ = traces.load_default()
    path = tmp_path / "jobs.csv"
    jobs[jobs["num_gpus"] <= 8].iloc[:12].to_csv(path, index=False)
    argv = [
        "compare",
        str(path),
        "--training-servers",
        "2",
        "--inference-servers",
        "0",
        "--pollux-rows",
        "--pollux-generations",
        "5",
        "--out",
        str(tmp_path / "o"),
        "--plot-format",
        "png",
        "--quiet",
    ]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "o" / "compare.csv", index_col="run")
    assert {"Pollux", "Aryl+TunedJobs"} <= set(table.index)
    assert (table.loc[["Pollux", "Aryl+TunedJobs"], "jobs_unfinished"] == 0).all()
    # the table beside the paper: the runs' own figures, the paper's, the ratios
    beside = pd.read_csv(tmp_path / "o" / "pollux_paper.csv", index_col="metric")
    assert list(beside.index) == list(studies.paper.POLLUX_METRICS)
    for run in sim.POLLUX_COMPARISON:
        assert list(beside[run]) == pytest.approx(
            list(table.loc[run, list(beside.index)])
        )
    assert beside.loc["jct_mean", "Aryl+TunedJobs, paper"] == 10229
    ratio = beside["Pollux / Aryl+TunedJobs"]
    assert ratio["scaling_ops"] == pytest.approx(
        table.loc["Pollux", "scaling_ops"] / table.loc["Aryl+TunedJobs", "scaling_ops"]
    )
    printed = capsys.readouterr().out  # --quiet still prints the tables
    assert "beside the paper" not in printed  # a --quiet message
    assert "Aryl+TunedJobs," in printed and "scaling ops" in printed  # headers wrap
    assert "1.42x" in printed and "1.76x" in printed  # the paper's ratios


def test_pollux_beside_paper_by_hand():
    runs = {
        "Baseline (FIFO)": _summary(1),  # not in the comparison: left out
        "Pollux": _summary(3, scaling_ops=30),
        "Aryl+TunedJobs": _summary(2, scaling_ops=0),
    }
    beside = sim.pollux_beside_paper(runs)
    assert list(beside.columns) == [
        "Pollux",
        "Pollux, paper",
        "Aryl+TunedJobs",
        "Aryl+TunedJobs, paper",
        "Pollux / Aryl+TunedJobs",
        "Pollux / Aryl+TunedJobs, paper",
    ]
    assert beside.loc["jct_p95", "Pollux"] == 3 * 600
    assert beside.loc["jct_p95", "Pollux, paper"] == 72123
    assert beside.loc["queuing_median", "Aryl+TunedJobs, paper"] == 43
    assert beside.loc["jct_mean", "Pollux / Aryl+TunedJobs"] == 1.5
    assert math.isnan(beside.loc["scaling_ops", "Pollux / Aryl+TunedJobs"])  # / 0
    assert math.isnan(beside.loc["scaling_ops", "Pollux, paper"])  # no counts
    paper = beside["Pollux / Aryl+TunedJobs, paper"]
    assert paper["jct_mean"] == 14534 / 10229
    assert paper["scaling_ops"] == sim.PAPER_POLLUX_SCALING == 1.76
    # without Pollux (--generations 0): no ratio columns
    alone = sim.pollux_beside_paper({"Elastic only, aryl": _summary(1)})
    assert list(alone.columns) == ["Elastic only, aryl", "Elastic only, aryl, paper"]
    assert alone.loc["jct_mean", "Elastic only, aryl, paper"] == 12048
    with pytest.raises(ValueError, match="needs a run named one of"):
        sim.pollux_beside_paper({"Baseline (FIFO)": _summary(1)})
    with pytest.raises(ValueError, match=r"run 'Pollux' has no \['scaling_ops'\]"):
        sim.pollux_beside_paper({"Pollux": _without(_summary(1), "scaling_ops")})


def _without(summary, key):
    return {k: v for k, v in summary.items() if k != key}


def _summary(scale, scaling_ops=0):
    """A summary whose times are ``scale`` times 10, 20, ... 600 s."""
    times = dict(zip(studies.paper.TABLE3_KEYS[:6], (10, 20, 30, 100, 200, 600)))
    return {**{k: scale * v for k, v in times.items()}, "scaling_ops": scaling_ops}


def test_the_papers_pollux_ratios_as_the_docs_quote_them():
    # aryl.studies.paper's docstring and the issue quote these; Table 3 is the source.
    t = sim.PAPER_TABLE3
    pollux, tuned, elastic = t["Pollux"], t["Aryl+TunedJobs"], t["Elastic only, aryl"]

    def ratio(top, bottom, key):
        return round(top[key] / bottom[key], 2)

    assert ratio(pollux, tuned, "jct_mean") == 1.42  # the 14,534 / 10,229
    assert ratio(pollux, tuned, "jct_p95") == 1.37
    assert ratio(pollux, tuned, "jct_median") == 1.28  # the text says 1.32
    # the text's queuing 1.23x and 1.69x are Pollux over row 11, not row 12
    assert ratio(pollux, elastic, "queuing_median") == 1.23
    assert ratio(pollux, elastic, "queuing_p95") == 1.69
    assert ratio(pollux, tuned, "queuing_median") == 1.35
    # §7.4's "250 iterations ... 1.20x and 1.25x in median and 95%ile JCT"
    assert ratio(pollux, elastic, "jct_median") == 1.20
    assert ratio(pollux, elastic, "jct_p95") == 1.25
    assert len(t) == 12 and all(len(row) == 9 for row in t.values())
