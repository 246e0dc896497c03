"""A policy of your own beyond ``simulate``: its mistakes named, sweeps and specs.

(``test_policy_hooks.py`` checks the hooks' answers inside one run.)
"""

import re
import traceback
import warnings
from pathlib import Path

import pandas as pd
import pytest

import aryl
from aryl import Decision, sim
from aryl.engine.hooks import PolicyError
from aryl.policy import load_policy, policy_identity

DOCS = Path(__file__).resolve().parents[2] / "docs" / "policies.md"


@pytest.fixture(scope="module")
def docs_namespace():
    """Every python block of docs/policies.md, run in order in one namespace (the
    comparison block aside: it runs a week of the trace)."""
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S):
        if "sim.simulate(week" not in block:
            exec(compile(block, str(DOCS), "exec"), namespace)
    return namespace


def small_run(policy):
    jobs = [
        aryl.Job("a", 4, 2, 2, 600.0),
        aryl.Job("b", 8, 1, 1, 300.0, submit_time=60.0),
    ]
    servers = [aryl.Server("t0", "training", 8), aryl.Server("t1", "training", 8)]
    return sim.simulate(jobs, servers, policy=policy)


class Fifo:
    """FIFO through the hooks."""

    def allocate(self, state, epoch):
        return state.schedule("fifo", **epoch.schedule_options)


# ---- mistakes named ----------------------------------------------------------------


def test_the_class_instead_of_an_instance_is_named():
    with pytest.raises(TypeError, match=r"policy is the class Fifo; pass an instance"):
        small_run(Fifo)


def test_a_hook_with_the_wrong_parameters_is_named():
    class NoEpoch:
        def allocate(self, state):
            return state.schedule("fifo")

    with pytest.raises(
        TypeError, match=r"NoEpoch.allocate must take \(state, epoch\), but its"
    ):
        small_run(NoEpoch())

    class AdmitTooMany(Fifo):
        def admit(self, job, epoch, extra):
            return True

    with pytest.raises(TypeError, match=r"admit must take \(job, epoch\)"):
        small_run(AdmitTooMany())

    class Flexible:  # defaults and *args are fine
        def allocate(self, state, epoch=None, *rest):
            return state.schedule("fifo")

    small_run(Flexible()).check()


def test_a_misspelt_hook_is_named():
    class WrongName:
        def alocate(self, state, epoch):
            return state.schedule("fifo")

    with pytest.raises(TypeError, match=r"no allocate\(state, epoch\) method but has "):
        small_run(WrongName())
    with pytest.raises(TypeError, match=r"WrongName has no allocate.*alocate\(\)"):
        small_run(WrongName())

    class MisspeltReclaim(Fifo):
        def reclaimm(self, state, n, epoch):
            return state.reclaim(n)

    with pytest.warns(UserWarning, match=r"has reclaimm\(\), which is not a hook"):
        small_run(MisspeltReclaim())


def test_a_hook_that_raises_names_the_epoch_and_keeps_its_traceback():
    class Divides(Fifo):
        def allocate(self, state, epoch):
            if epoch.now > 0:
                return 1 / 0
            return super().allocate(state, epoch)

    with pytest.raises(PolicyError) as caught:
        small_run(Divides())
    assert "epoch 1 (t = 60 s): Divides.allocate raised ZeroDivisionError" in str(
        caught.value
    )
    cause = caught.value.__cause__
    assert isinstance(cause, ZeroDivisionError)
    shown = "".join(traceback.format_exception(cause))
    assert "return 1 / 0" in shown  # the user's own line is in the traceback

    class BadAdmit(Fifo):
        def admit(self, job, epoch):
            raise KeyError(job.id)

    with pytest.raises(
        PolicyError, match=r"epoch 0 \(t = 0 s\): BadAdmit.admit raised"
    ):
        small_run(BadAdmit())


@pytest.mark.parametrize(
    "answer",
    [
        lambda state: Decision("lazy"),
        lambda state: state.schedule("aryl", queue=[]),  # the kernel's, starting none
    ],
)
def test_a_policy_that_starts_nothing_while_jobs_wait_is_warned_about(answer):
    class Nothing:
        name = "lazy"

        def allocate(self, state, epoch):
            return answer(state)

    jobs = [aryl.Job(f"j{k}", 8, 1, 1, 600.0, submit_time=k * 1800.0) for k in range(5)]
    servers = [aryl.Server("t0", "training", 8)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.simulate(jobs, servers, policy=Nothing())
    said = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert re.match(
        r"policy 'lazy' started no job from epoch 0 \(t = 0 s\) to t = 7200 s "
        r"\(2\.0 h\) while up to 5 job\(s\) waited and none ran",
        said[0],
    )
    assert "the policy left them queued" in said[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.simulate(jobs, servers, policy=Fifo()).check()


# ---- a policy object in sweeps -----------------------------------------------------

JOBS = [aryl.Job(f"j{k}", 8, 1, 2, 900.0, submit_time=k * 300.0) for k in range(8)]
BASE = {
    "trace": "tiny",
    "training_servers": 2,
    "inference_servers": 0,
    "scenario": "baseline",
}


class Widest:
    """FIFO order, each job at its max_workers when it fits (else min)."""

    def __init__(self, scale=1):
        self.scale = scale

    def allocate(self, state, epoch):
        return state.schedule("fifo", **epoch.schedule_options)


def run_sweep(grid, tmp_path, **kw):
    return sim.sweep(
        BASE,
        grid,
        traces={"tiny": (JOBS, None)},
        engine=kw.pop("engine", "serial"),
        cache=tmp_path / "cache",
        progress=False,
        **kw,
    )


def test_a_sweep_runs_policy_objects_beside_built_ins_and_caches_them(tmp_path):
    first = run_sweep({"policy": ["fifo", Widest()]}, tmp_path)
    assert list(first["policy"]) == ["fifo", "Widest"]
    assert not first["cached"].any()
    # the same policy through the hooks decides as the built-in
    assert first["jct_mean"][0] == first["jct_mean"][1]
    again = run_sweep({"policy": ["fifo", Widest()]}, tmp_path)
    assert again["cached"].all()
    assert list(again["fingerprint"]) == list(first["fingerprint"])
    # other settings, another version: a miss
    changed = run_sweep({"policy": [Widest(scale=2)]}, tmp_path)
    assert not changed["cached"].any()
    versioned = Widest()
    versioned.version = "2"
    assert not run_sweep({"policy": [versioned]}, tmp_path)["cached"].any()


def test_a_changed_policy_file_is_a_cache_miss(tmp_path):
    code = (
        "class P:\n"
        "    def allocate(self, state, epoch):\n"
        "        return state.schedule({!r})\n"
    )
    path = tmp_path / "mine.py"
    path.write_text(code.format("fifo"))
    spec = f"{path}:P"
    first = run_sweep({"policy": [spec]}, tmp_path)
    assert not first["cached"].any() and first["policy"][0] == spec
    assert run_sweep({"policy": [spec]}, tmp_path)["cached"].all()
    path.write_text(code.format("sjf"))
    assert not run_sweep({"policy": [spec]}, tmp_path)["cached"].any()
    assert policy_identity(load_policy(spec))["class"].endswith(".P")


def test_a_policy_object_that_cannot_reach_worker_processes_is_named(tmp_path):
    unpicklable = Widest()
    unpicklable.order = lambda job: job.id  # a lambda does not pickle
    with pytest.raises(
        ValueError, match=r"engine 'processes' ships policy 'Widest' to its workers"
    ):
        run_sweep({"policy": [unpicklable]}, tmp_path, engine="processes")


def test_a_policy_spec_runs_on_worker_processes(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "class P:\n"
        "    name = 'mine'\n"
        "    def allocate(self, state, epoch):\n"
        "        return state.schedule('fifo', **epoch.schedule_options)\n"
    )
    rows = run_sweep(
        {"policy": ["fifo", f"{path}:P"]}, tmp_path, engine="processes", workers=1
    )
    assert list(rows["policy"]) == ["fifo", f"{path}:P"]  # a spec is shown as given
    assert rows["jct_mean"][0] == rows["jct_mean"][1]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nocolon", "module:Class or path.py:Class"),
        ("no_such_module_x:P", "cannot import 'no_such_module_x'"),
        ("aryl.policy:Nope", "'aryl.policy' has no 'Nope'"),
        ("aryl.policy:Epoch", r"Epoch\(\) failed"),
        (str(Path("/nowhere") / "absent.py") + ":P", "no file"),
    ],
)
def test_a_bad_policy_spec_is_named(spec, message):
    with pytest.raises(ValueError, match=message):
        load_policy(spec)


# ---- one policy, simulated and live --------------------------------------------------


class Recording:
    """Asks ``policy`` and records, per epoch, what it saw and what it decided."""

    def __init__(self, policy):
        self.policy, self.seen = policy, []

    def allocate(self, state, epoch):
        answer = self.policy.allocate(state, epoch)
        c = state.columns()
        decision = answer.decision if hasattr(answer, "decision") else answer
        self.seen.append(
            {
                "now": epoch.now,
                "start": sorted((w.job, w.server) for w in decision.start),
                "stop": sorted((w.job, w.server) for w in decision.stop),
                "attained": dict(zip(c.job_id.tolist(), c.attained.tolist())),
                "waited": dict(zip(c.job_id.tolist(), c.waited.tolist())),
            }
        )
        return answer


def live_loop(policy, jobs, servers, times):
    """The hand-stepped live loop over the run's events: each job added at its
    submission, and at each of ``times`` the finished jobs dropped, ``policy``
    asked and its answer applied; time passes between events (``advance``)."""
    state = aryl.ClusterState.from_records(servers)
    events = sorted(
        [(j.submit_time, 0, j) for j in jobs]
        + [(t, 1, index) for index, t in enumerate(times)],
        key=lambda e: e[:2],
    )
    last = 0.0
    for now, kind, what in events:
        state.remove_jobs(state.advance(now - last))
        last = now
        if kind == 0:
            state.add_jobs([what])
        else:
            policy.allocate(state, aryl.Epoch(what, now)).apply(state)


def test_one_policy_decides_alike_simulated_and_live(docs_namespace):
    las = docs_namespace["LeastAttainedService"]
    jobs = [
        aryl.Job("big", 8, 2, 2, 4096.0),
        aryl.Job("mid", 4, 1, 1, 2048.0, submit_time=512.0),
        aryl.Job("small", 4, 1, 1, 1024.0, submit_time=1024.0),
        aryl.Job("late", 8, 1, 1, 512.0, submit_time=1536.0),
        aryl.Job("last", 8, 1, 2, 1024.0, submit_time=2048.0),
    ]
    servers = [aryl.Server("t0", "training", 8), aryl.Server("t1", "training", 8)]
    simulated = Recording(las(threshold=4096.0))
    sim.simulate(jobs, servers, policy=simulated).check()
    live = Recording(las(threshold=4096.0))
    live_loop(live, jobs, servers, [seen["now"] for seen in simulated.seen])
    assert len(live.seen) == len(simulated.seen) > 3
    for s, v in zip(simulated.seen, live.seen):
        assert (s["now"], s["start"], s["stop"]) == (v["now"], v["start"], v["stop"])
        assert s["attained"] == pytest.approx(v["attained"])
        assert s["waited"] == pytest.approx(v["waited"])
    # the view's service is what the run did: big has held 16 GPUs since 0 s, mid
    # has waited since its submission at 512 s (epochs come on the minute)
    second = simulated.seen[1]
    assert second["attained"]["big"] == 16 * second["now"]
    assert second["waited"]["mid"] == second["now"] - 512.0 > 0


# ---- the parts -----------------------------------------------------------------------


def parts_state():
    servers = [
        aryl.Server("t0", "training", 8),
        aryl.Server("t1", "training", 8),
        aryl.Server("i0", "inference", 8, on_loan=True),
        aryl.Server("i1", "inference", 8),
    ]
    jobs = [
        aryl.Job("run", 4, 1, 1, 100.0),
        aryl.Job("late", 8, 1, 1, 100.0, submit_time=30.0),
        aryl.Job("early", 8, 1, 1, 900.0, submit_time=10.0),
        aryl.Job("elastic", 4, 1, 3, 900.0, submit_time=20.0),
    ]
    return aryl.ClusterState.from_records(servers, jobs, [aryl.Worker("run", "t0", 4)])


def test_the_columns_give_free_gpus_the_queue_and_loans():
    state = parts_state()
    c = state.columns()
    assert c.free_gpus.tolist() == [4, 8, 8, 0]  # i1 is not on loan: unusable
    assert c.job_id[c.queue].tolist() == ["early", "elastic", "late"]  # submit order
    assert c.server_id[c.loaned].tolist() == ["i0"]
    assert c.gpus.tolist() == [4, 0, 0, 0] and c.running.tolist()[0]
    assert state.columns() is c  # built once per state
    with pytest.raises(ValueError, match="read-only"):
        c.free_gpus[0] = 1
    state.advance(50.0)  # live: service booked as time passes
    c = state.columns()
    assert c.attained.tolist() == [200.0, 0.0, 0.0, 0.0]
    assert c.waited.tolist() == [0.0, 50.0, 50.0, 50.0]
    state.remove_jobs(["run"])
    assert state.columns().job_id.tolist() == ["late", "early", "elastic"]


def test_a_stopped_job_counts_a_preemption_live():
    state = parts_state()
    Decision("stop", stop=[aryl.Worker("run", "t0", 4)]).apply(state)
    assert state.columns().preemptions.tolist() == [1, 0, 0, 0]


def test_the_kernel_takes_a_callers_queue_and_growth_filter():
    state = parts_state()
    c = state.columns()
    rows = {j: i for i, j in enumerate(c.job_id.tolist())}
    # only late, then elastic: early is not listed and stays queued
    result = state.schedule("aryl", queue=[rows["late"], rows["elastic"]], grow=[])
    started = {w.job for w in result.decision.start}
    assert started == {"late", "elastic"}
    assert [w.job for w in result.decision.start].count("elastic") == 1  # no growth
    grown = state.schedule("aryl", queue=[rows["elastic"]])
    assert [w.job for w in grown.decision.start].count("elastic") == 3
    assert (
        state.schedule("aryl").decision
        == state.schedule("aryl", queue=None, grow=None).decision
    )
    with pytest.raises(ValueError, match="queue: job 'run' is running"):
        state.schedule("aryl", queue=[rows["run"]])
    with pytest.raises(ValueError, match="listed twice"):
        state.schedule("aryl", queue=[1, 1])
    with pytest.raises(ValueError, match="job row 9 out of range"):
        state.schedule("aryl", grow=[9])
    with pytest.raises(TypeError, match="queue must be a list or array of job rows"):
        state.schedule("aryl", queue=["late"])


@pytest.fixture(scope="module")
def days():
    """The embedded trace's first two days."""
    jobs, load = aryl.traces.load_default()
    return aryl.traces.to_jobs(jobs[jobs["submit_time_s"] < 2 * 86400]), load


def test_the_docs_parts_policies_run_the_trace(docs_namespace, days):
    jobs, load = days
    cluster = sim.Cluster(85, 100)
    for name in ("SmallestGpuTimeFirstParts", "LeastAttainedService", "LoadAware"):
        result = sim.simulate(
            jobs, cluster, policy=docs_namespace[name](), inference_load=load
        ).check()
        assert result.summary()["jobs_unfinished"] == 0, name
    # load-aware with its thresholds off is the built-in aryl, run for run
    off = docs_namespace["LoadAware"](high=float("inf"), rising=False)
    asked = sim.simulate(jobs, cluster, policy=off, inference_load=load).check()
    built_in = sim.simulate(jobs, cluster, policy="aryl", inference_load=load)
    columns = ["start_time", "finish_time", "preemptions", "scaling_ops"]
    assert built_in.jobs[columns].equals(asked.jobs[columns])


def test_the_epoch_gives_the_current_and_recent_inference_load():
    seen = []

    class Watch(Fifo):
        def allocate(self, state, epoch):
            seen.append((epoch.now, epoch.inference_load, epoch.recent_load))
            return super().allocate(state, epoch)

    jobs = [aryl.Job(f"j{k}", 8, 1, 1, 600.0, submit_time=k * 2000.0) for k in range(3)]
    servers = [aryl.Server("t0", "training", 8), aryl.Server("i0", "inference", 8)]
    load = [(0.0, 0.5), (1000.0, 0.9), (3000.0, 0.2)]
    sim.simulate(jobs, servers, policy=Watch(), inference_load=load)
    (t1, load1, recent1), (t2, load2, recent2) = seen[1:3]
    assert 2000.0 <= t1 < 3000.0 and 4000 <= t2 < 4600.0  # epochs on the minute
    assert (load1, recent1) == (0.9, ((0.0, 0.5), (1000.0, 0.9)))
    # the last hour, from the point in force an hour before
    assert (load2, recent2) == (0.2, ((0.0, 0.5), (1000.0, 0.9), (3000.0, 0.2)))


# ---- the command line ------------------------------------------------------------------

MINE = (
    "class Mine:\n"
    "    name = 'mine'\n"
    "    def allocate(self, state, epoch):\n"
    "        return state.schedule('aryl', **epoch.schedule_options)\n"
)


@pytest.fixture(scope="module")
def trace_files(tmp_path_factory):
    """The embedded trace's first 120 jobs and a day of its load, as CSV files, and
    a policy file."""
    jobs, load = aryl.traces.load_default()
    folder = tmp_path_factory.mktemp("trace")
    jobs.iloc[:120].to_csv(folder / "jobs.csv", index=False)
    load[load["time_s"] < 86400].to_csv(folder / "load.csv", index=False)
    (folder / "mine.py").write_text(MINE)
    return folder


def cli(folder, *argv):
    from aryl.cli import main

    small = ["--training-servers", "4", "--inference-servers", "4", "--format", "csv"]
    files = [str(folder / "jobs.csv"), "--load", str(folder / "load.csv")]
    return main([argv[0], *files, *small, *argv[1:]])


def test_the_cli_runs_a_policy_of_ones_own(trace_files, tmp_path, capsys):
    spec = f"{trace_files / 'mine.py'}:Mine"
    out = str(tmp_path / "s")
    assert cli(trace_files, "simulate", "--policy", spec, "--out", out) == 0
    assert "policy mine" in capsys.readouterr().err
    out = str(tmp_path / "c")
    rows = ["--rows", "Baseline (FIFO)", "--rows", "Aryl Basic", "--rows", "mine"]
    assert cli(trace_files, "compare", "--add-row", spec, *rows, "--out", out) == 0
    table = pd.read_csv(tmp_path / "c" / "compare.csv", index_col="run")
    assert list(table.index) == ["Baseline (FIFO)", "Aryl Basic", "mine"]
    # aryl's allocation through the hooks: the Aryl Basic row, again
    assert table.loc["mine", "jct_mean"] == table.loc["Aryl Basic", "jct_mean"]
    with pytest.raises(SystemExit) as exited:
        cli(trace_files, "simulate", "--policy", "fifoo", "--out", str(tmp_path))
    assert exited.value.code == 2
    assert "did you mean 'fifo'" in capsys.readouterr().err
