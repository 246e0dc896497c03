"""``Config.start_on_loan`` (issue 43, item 4): a job that would wait for its fast GPU
type starts on a free loaned (slower) server and moves to its type once that frees, if
the move pays; off, the results are today's."""

import pandas as pd
import pytest

import aryl
from aryl import engine, sim
from aryl.cli import main

#: One V100 training server, one T4 inference server lent from 0 s (load 0).
SERVERS = [
    aryl.Server("train", "training", 8, "V100"),
    aryl.Server("loan", "inference", 8, "T4"),
]
LOAD = [(0.0, 0.0)]
#: Y holds the V100 until 1,000 s; X (1,000 s on a V100) arrives at 10 s.
JOBS = [
    aryl.Job("Y", 8, 1, 1, 1000.0),
    aryl.Job("X", 8, 1, 1, 1000.0, submit_time=10.0),
]


def _run(jobs=JOBS, **config):
    fields = {"lend_hold": 0.0, "audit": True, **config}
    result = sim.simulate(jobs, SERVERS, inference_load=LOAD, config=fields)
    result.check()
    return result.jobs.set_index("id")


def test_off_the_job_waits_for_its_type():
    """940 s of wait + 1,000 s beat 4,000 s on the T4: X starts at the epoch after Y."""
    jobs = _run()
    assert jobs.loc["X", "start_time"] == 1020.0
    assert jobs.loc["X", "finish_time"] == 2020.0


def test_on_the_job_starts_on_loan_and_moves_at_the_speed_ratio():
    """X runs on the T4 from 60 s: 960 s there do 240 s of V100 work, so at 1,020 s it
    moves with 760 s left, pays the 63-s restart overhead and runs them at V100 speed."""
    jobs = _run(start_on_loan=True)
    assert jobs.loc["X", "start_time"] == 60.0
    assert jobs.loc["X", "finish_time"] == pytest.approx(1020 + 63 + 760)
    assert jobs.loc["X", "preemptions"] == 0
    at_half = _run(start_on_loan=True, gpu_speed={"V100": 1.0, "T4": 0.5})
    # at half speed 960 s do 480 s: 520 s left after the move
    assert at_half.loc["X", "finish_time"] == pytest.approx(1020 + 63 + 520)


def test_the_history_shows_the_move():
    result = sim.simulate(
        JOBS,
        SERVERS,
        inference_load=LOAD,
        config={"lend_hold": 0.0, "start_on_loan": True},
        history=True,
    )
    rows = result.history().query("job == 'X'")
    assert list(rows["server"]) == ["loan", "train"]
    assert list(rows["closed"])[0] == "move"
    assert list(rows["opened"])[1] == "move"


def test_a_move_that_does_not_pay_is_not_made():
    jobs = _run(start_on_loan=True, restart_overhead=5000.0)
    assert jobs.loc["X", "finish_time"] == pytest.approx(60 + 4000)


def test_off_is_todays_run_and_on_keeps_the_invariants():
    """On a seeded synthetic trace with loaning: the option off decides as a Config
    without it (the golden tests pin those numbers); on, every job finishes, the
    audit finds nothing, and some job started on loan moves."""
    frame, load = aryl.traces.synthetic(days=1, jobs=150, seed=3)
    jobs = engine.runs.trace_jobs(frame, any_type_share=1.0, seed=3)
    cluster = sim.Cluster(training_servers=6, inference_servers=6)
    config = {"audit": True, "lend_hold": 0.0}

    def run(**extra):
        result = sim.simulate(
            jobs, cluster, inference_load=load, config={**config, **extra}, history=True
        )
        result.check()
        return result

    base, off, on = run(), run(start_on_loan=False), run(start_on_loan=True)
    assert base.jobs["finish_time"].equals(off.jobs["finish_time"])
    assert on.summary()["jobs_unfinished"] == 0
    moves = (on.history()["opened"] == "move").sum()
    assert moves > 0
    assert (base.history()["opened"] == "move").sum() == 0


def test_bad_values_are_refused():
    # a flag that is not a bool is a ValueError at every door (test_flag_doors.py)
    with pytest.raises(ValueError, match="start_on_loan"):
        sim.Config(start_on_loan="yes")
    config = sim.Config()
    config.start_on_loan = 1
    with pytest.raises(ValueError, match="start_on_loan"):
        sim.simulate(JOBS, SERVERS, config=config)


def test_live_refuses_it(tmp_path):
    """aryl live does not move running jobs: it says so rather than run without."""
    from aryl.live.backend import FakeBackend
    from aryl.live.controller import Controller

    backend = FakeBackend(str(tmp_path / "ckpt"))
    with pytest.raises(ValueError, match="start_on_loan"):
        Controller(JOBS, SERVERS, backend, config=sim.Config(start_on_loan=True))


def _trace_files(tmp_path):
    """JOBS (Y typed V100; X of no type, any type with --any-type-share 1) and a load."""
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,submit_time_s,num_gpus,duration_s,gpu_type\n"
        "Y,0,8,1000,V100\nX,10,8,1000,\n"
    )
    load = tmp_path / "load.csv"
    load.write_text("time_s,load\n0,0\n")
    return trace, load


def test_the_cli_flag_sets_it(tmp_path):
    trace, load = _trace_files(tmp_path)
    servers = tmp_path / "servers.csv"
    servers.write_text(
        "id,pool,gpus,gpu_type\ntrain,training,8,V100\nloan,inference,8,T4\n"
    )
    out = tmp_path / "out"
    args = [
        "simulate",
        str(trace),
        "--load",
        str(load),
        "--servers",
        str(servers),
        "--lend-hold",
        "0",
        "--any-type-share",
        "1",
        "--start-on-loan",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    result = sim.load(out)
    assert result.provenance.config["start_on_loan"] is True
    finish = result.jobs.set_index("id")["finish_time"]
    assert finish["X"] == pytest.approx(1020 + 63 + 760)


def test_a_sweep_takes_it_as_a_grid_axis(tmp_path):
    """Off, X finishes at 2,020 s; on, at 1,843 s: mean JCT (1,000 + 2,010) / 2 and
    (1,000 + 1,833) / 2."""
    trace, load = _trace_files(tmp_path)
    out = tmp_path / "sweep"
    args = [
        "sweep",
        str(trace),
        "--load",
        str(load),
        "--training-servers",
        "1",
        "--inference-servers",
        "1",
        "--lend-hold",
        "0",
        "--any-type-share",
        "1",
        "--grid",
        "start_on_loan=false,true",
        "--engine",
        "serial",
        "--no-cache",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(args) == 0
    table = pd.read_csv(out / "sweep.csv")
    assert list(table["start_on_loan"]) == [False, True]
    assert list(table["jct_mean"]) == pytest.approx([1505.0, 1416.5])


def test_aryl_live_refuses_the_flag_before_anything_starts(tmp_path, capsys):
    trace, _ = _trace_files(tmp_path)
    out = tmp_path / "out"
    args = ["live", str(trace), "--local-cluster", "1+1", "--start-on-loan"]
    assert main([*args, "--out", str(out)]) == 2
    assert "aryl live does not do yet" in capsys.readouterr().err
    assert not out.exists()
