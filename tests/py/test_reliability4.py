"""The fourth reliability round (issue 35): each defect's reproducer, now refused
with a named error or answered right.

Silent wrong answers (``advance`` curves and version, empty windows, hook answers,
edited history files), errors that name what they are about, and reads that never
block on something that is not a regular file.
"""

import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import aryl
from aryl import Decision, Job, Server, Worker, sim

# ---- ClusterState.advance (R4-01, R4-16) ----------------------------------------------


def running_state():
    """One 2-worker job of 600 s running on its two workers."""
    servers = [Server("s0", gpus=4), Server("s1", gpus=4)]
    jobs = [Job("a", 4, 2, 2, 600.0)]
    workers = [Worker("a", "s0"), Worker("a", "s1")]
    return aryl.ClusterState.from_records(servers, jobs, workers)


@pytest.mark.parametrize(
    "curve, message",
    [
        ([1.0], "throughput has 1 values, expected one per worker count 1..2"),
        ([1.0, 0.0], "throughput values must be finite and > 0"),
        ([0.0, 0.0], "throughput values must be finite and > 0"),
        ([-1.0, 2.0], "throughput values must be finite and > 0"),
        ([1.0, 2.0, 3.0], "throughput has 3 values"),
    ],
)
def test_advance_checks_curves_as_schedule_does(curve, message):
    state = running_state()
    with pytest.raises(ValueError, match=f"job 'a': {message}"):
        state.advance(60.0, throughput={"a": curve})
    with pytest.raises(ValueError, match=f"job 'a': {message}"):
        state.schedule(throughput={"a": curve})
    assert state.remaining == {}  # nothing moved
    assert state.advance(60.0, throughput={"a": [1.0, 2.0]}) == []  # a good curve


def test_advance_makes_an_earlier_result_stale():
    state = running_state()
    version = state.version
    before = state.schedule()
    state.advance(60.0)
    assert state.version > version
    with pytest.raises(ValueError, match="stale|changed"):
        before.apply(state)
    state.schedule().apply(state)  # one computed after the advance applies


@pytest.mark.parametrize("seconds", [2**1024, -(2**1024)])
def test_advance_refuses_a_huge_int_by_name(seconds):
    with pytest.raises(ValueError, match="seconds must be a finite number"):
        running_state().advance(seconds)


# ---- windows that measure no job (R4-03) ---------------------------------------------


@pytest.mark.filterwarnings("ignore:.*use 5 or more replications:UserWarning")
def test_an_empty_window_is_left_out_with_a_warning_not_a_nan():
    # two bursts: the middle windows hold no submission
    jobs = [Job(f"a{i}", 8, 1, 1, 300.0, submit_time=10.0 * i) for i in range(6)]
    jobs += [
        Job(f"b{i}", 8, 1, 1, 300.0, submit_time=9000.0 + 10 * i) for i in range(6)
    ]
    runs = {"Baseline (FIFO)": {"policy": "fifo"}, "Aryl": {"policy": "aryl"}}
    with pytest.warns(UserWarning, match=r"2 of 4 windows hold no submitted job"):
        table = sim.compare(jobs, sim.Cluster(2, 0), runs, windows=4, warmup=0.0)
    assert sorted(set(table.samples["window"])) == [0, 3]
    assert np.isfinite(table["jct_mean"].astype(float)).all()
    assert (table["replications"] == 2).all()


# ---- a policy's answers (R4-04, R4-11, R4-12) ----------------------------------------


class Answer:
    """A policy whose answer is ``answer(state, epoch)``."""

    def __init__(self, answer):
        self.answer = answer

    def allocate(self, state, epoch):
        return self.answer(state, epoch)


def small_run(policy):
    jobs = [Job("a", 4, 2, 2, 600.0), Job("b", 8, 1, 1, 300.0, submit_time=60.0)]
    servers = [Server("t0", "training", 8), Server("t1", "training", 8)]
    return sim.simulate(jobs, servers, policy=policy)


@pytest.mark.parametrize(
    "answer, error, message",
    [
        (  # R4-04: a start whose gpus is not the job's
            lambda s, e: Decision("x", start=[Worker("a", "t0", 1)] * 2),
            ValueError,
            r"epoch 0 \(t = 0 s\): .*has 1 GPUs but the job's gpus_per_worker is 4",
        ),
        (
            lambda s, e: Decision("x", start=[Worker("a", "t0", -5)] * 2),
            ValueError,
            r"epoch 0 \(t = 0 s\): .*gpus",
        ),
        (  # R4-11: malformed answers
            lambda s, e: Decision("x", start=[("a", "t0"), ("a", "t0")]),
            ValueError,
            r"epoch 0 \(t = 0 s\): the policy's start worker record 0 must be a Worker",
        ),
        (
            lambda s, e: Decision("x", start=None),
            TypeError,
            r"epoch 0 \(t = 0 s\): .*decision.start must be a list of aryl.Worker",
        ),
        (
            lambda s, e: Decision("x", stop="a"),
            TypeError,
            r"epoch 0 \(t = 0 s\): .*decision.stop must be a list",
        ),
    ],
)
def test_a_malformed_or_wrong_decision_is_refused_naming_the_epoch(
    answer, error, message
):
    with pytest.raises(error, match=message):
        small_run(Answer(answer))


@pytest.mark.parametrize("row", [10**6, -1])
def test_a_schedule_result_edited_out_of_range_names_the_epoch(row):
    def edited(state, epoch):
        result = state.schedule("aryl")
        result.start_job[:] = row  # the arrays are the result's own, writable
        return result

    with pytest.raises(
        ValueError,
        match=rf"epoch 0 \(t = 0 s\): the policy's answer names job row {row}, but "
        "the state has 1 jobs",
    ):
        small_run(Answer(edited))


def test_a_change_to_the_schedule_options_stays_in_its_epoch():
    seen = []

    def meddles(state, epoch):
        seen.append(dict(epoch.schedule_options["gpu_speed"]))
        epoch.schedule_options["gpu_speed"]["V100"] = 99.0
        return state.schedule("aryl")

    small_run(Answer(meddles))
    assert len(seen) >= 2
    assert all(speeds == seen[0] for speeds in seen)


# ---- no read blocks on a FIFO (R4-06) ------------------------------------------------


def run_with_timeout(code, tmp_path, seconds=60):
    """Run ``code`` in a fresh Python; a read that blocks shows as a timeout."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=seconds,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", ["jobs.parquet", "timeline.parquet", "result.json"])
def test_a_fifo_in_a_result_folder_is_refused_not_waited_on(tmp_path, name):
    done = run_with_timeout(
        f"""
        import os
        import aryl, aryl.sim as sim
        from aryl import engine
        from aryl.engine.storage import ResultFileError
        folder = sim.simulate([aryl.Job("a", 8, 1, 1, 60)], sim.Cluster(1, 0)).save("run")
        os.remove(folder / {name!r}); os.mkfifo(folder / {name!r})
        for read in (sim.load, engine.storage.saved_summary):
            try:
                read(folder)
            except (ResultFileError, FileNotFoundError) as e:
                print(type(e).__name__, e)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert "run" in line and ("not a regular file" in line or "no saved" in line)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("name", ["row.json", "jobs.parquet"])
def test_a_fifo_in_a_sweep_cache_entry_is_recomputed(tmp_path, name):
    done = run_with_timeout(
        f"""
        import glob, os, warnings
        import aryl.sim as sim
        base, grid = {{"first_jobs": 100, "training_servers": 4}}, {{"seed": [0]}}
        sim.sweep(base, grid, cache="cache", engine="serial", progress=False)
        entry = glob.glob(os.path.join("cache", "*"))[0]
        os.remove(os.path.join(entry, {name!r})); os.mkfifo(os.path.join(entry, {name!r}))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = sim.sweep(base, grid, cache="cache", engine="serial", progress=False)
        print(list(rows["cached"]), [str(w.message) for w in caught])
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "[False]" in done.stdout and "not a regular file" in done.stdout


def test_a_symlinked_cache_entry_is_replaced_not_followed(tmp_path):
    base, grid = {"first_jobs": 100, "training_servers": 4}, {"seed": [0]}
    cache = tmp_path / "cache"
    sim.sweep(base, grid, cache=cache, engine="serial", progress=False)
    (entry,) = cache.iterdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    os.rename(entry, tmp_path / "moved")
    os.symlink(elsewhere, entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = sim.sweep(base, grid, cache=cache, engine="serial", progress=False)
    assert list(rows["cached"]) == [False]
    assert not entry.is_symlink() and (entry / "row.json").is_file()
    assert (elsewhere / "keep.txt").read_text() == "mine"


# ---- errors that name what they are about (R4-14, N11, N12) --------------------------

TWO_JOBS = [Job("a", 8, 1, 1, 300.0), Job("b", 8, 1, 1, 300.0, submit_time=60.0)]
ONE_ROW = {"Baseline (FIFO)": {"policy": "fifo"}}


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"seeds": 1.5}, TypeError, "seeds must be an int or a list of ints, got 1.5"),
        ({"seeds": 10**8}, ValueError, r"seeds must be in \[1, 10000\]"),
        ({"seeds": range(10**8)}, ValueError, "at most 10000 seeds, got 100000000$"),
        ({"seeds": iter(range(10**8))}, ValueError, "at most 10000 seeds, got more$"),
        ({"seeds": 2, "seed": 2**64 - 1}, ValueError, "go past the largest seed"),
        ({"windows": 10**9}, ValueError, r"windows must be in \[1, 1000\]"),
        ({"windows": 1.5}, TypeError, "windows must be an integer"),
        ({"windows": 2, "warmup": True}, TypeError, "warmup .* must be a number"),
        ({"windows": 2, "warmup": -1.0}, ValueError, "warmup"),
        ({"seeds": 2, "threads": -5}, ValueError, r"threads must be in \[1, "),
    ],
)
def test_compare_replications_check_their_arguments_up_front(kwargs, error, message):
    with pytest.raises(error, match=message):
        sim.compare(TWO_JOBS, sim.Cluster(1, 0), ONE_ROW, **kwargs)


@pytest.mark.parametrize(
    "jobs",
    [
        [Job("a", 8, 1, 1, 60.0), Job("big", 8, 1, 2**63, 60.0)],
        [Job("big", 8, 1, 2**63, 60.0)],  # alone, NumPy reads 2**63 as uint64
    ],
)
def test_a_huge_int_field_names_the_job_and_is_not_wrapped(jobs):
    for build in (
        lambda: sim.simulate(jobs, sim.Cluster(1, 0)),
        lambda: aryl.ClusterState.from_records([Server("s")], jobs),
        lambda: aryl.schedule(jobs, [Server("s")]),
    ):
        with pytest.raises(
            ValueError, match=r"job 'big': max_workers .*, got 9223372036854775808$"
        ):
            build()


def test_reference_workers_zero_is_refused():
    with pytest.raises(ValueError, match="job 'a': reference_workers must be >= 1"):
        Job("a", 8, 1, 2, 60.0, reference_workers=0)
    assert Job("a", 8, 1, 2, 60.0).reference_workers == 2


@pytest.mark.parametrize("value", [-5, 0, 1.5, float("nan")])
def test_remaining_of_a_left_out_job_is_checked(value):
    jobs = [Job("a", 8, 1, 1, 60.0), Job("b", 8, 1, 1, 60.0, submit_time=100.0)]
    with pytest.raises(
        (ValueError, TypeError), match=r"remaining\['b'\]|job 'b': remaining"
    ):
        aryl.schedule(jobs, [Server("s")], now=0.0, remaining={"b": value})
    assert aryl.schedule(jobs, [Server("s")], now=0.0, remaining={"b": 0.5}).allocation


# ---- the command line: options that cannot be combined say so (R4-14, N12) ----------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cache", "c", "--no-cache"], "--cache and --no-cache: give one of them"),
        (
            ["--address", "auto", "--engine", "serial"],
            "--address .* needs --engine ray",
        ),
        (["--warmup", "0"], "--warmup .* needs --windows"),
        (
            ["--seed", str(2**64 - 1), "--seeds", "2"],
            "2 seeds from seed 18446744073709551615 go past the largest seed",
        ),
    ],
)
def test_compare_refuses_options_that_would_be_ignored(argv, message, tmp_path, capsys):
    from aryl.cli import main

    assert main(["compare", "--out", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_grid_name_given_twice_is_refused(tmp_path, capsys):
    from aryl.cli import main

    argv = ["sweep", "--first-jobs", "10", "--grid", "seed=0", "--grid", "seed=1"]
    assert main([*argv, "--out", str(tmp_path), "--engine", "serial"]) == 2
    err = capsys.readouterr().err
    assert "--grid seed: given twice" in err and "Traceback" not in err


def test_the_cli_refuses_a_cluster_too_big_before_printing_it(tmp_path, capsys):
    from aryl.cli import main

    argv = ["simulate", "--training-servers", "600000", "--inference-servers", "0"]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "Cluster:" not in captured.out
    assert (
        "the cluster would have 4,800,000 GPUs; the limit is 4,194,304" in captured.err
    )


def test_a_write_error_without_a_file_name_names_the_folder(tmp_path):
    from aryl.cli.files import write_atomically

    def full_disk(folder):
        (folder / "compare.csv").write_text("x")
        raise OSError(27, "File too large")  # what a file-size limit gives, no file

    with pytest.raises(
        OSError, match=rf"File too large \(writing the results into {tmp_path}\)"
    ):
        write_atomically(tmp_path, full_disk)
    assert list(tmp_path.iterdir()) == []  # nothing half-written


# ---- reliability3's leftovers: Config values refused before any run, alike by door ---


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("lend_hold", -1.0, "lend_hold must be a number >= 0"),
        ("reallocation_overhead", -5.0, "reallocation_overhead must be a finite"),
        ("tiresias_threshold", float("nan"), "tiresias_threshold must be a number"),
    ],
)
def test_a_sweep_refuses_a_bad_config_value_before_any_run(
    tmp_path, field, value, message
):
    # A good first point and a bad second one: the first ran (and was cached) before.
    base = {"first_jobs": 20, "training_servers": 2, "inference_servers": 0}
    with pytest.raises(ValueError, match=message):
        sim.sweep(
            base, {field: [0.0, value]}, engine="serial", cache=tmp_path, progress=False
        )
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing cached


FLAG = "loaning must be True or False, got 'yes'"


def test_a_non_bool_flag_is_one_type_and_message_through_every_door(tmp_path, capsys):
    from aryl.cli import main

    jobs = [Job("a", 1, 1, 1, 60.0)]
    doors = {
        "Config": lambda: sim.Config(loaning="yes"),
        "simulate": lambda: sim.simulate(
            jobs, sim.Cluster(1, 0), config={"loaning": "yes"}
        ),
        "sweep": lambda: sim.sweep(
            {"first_jobs": 5, "loaning": "yes"}, engine="serial", cache=False
        ),
    }
    for door, call in doors.items():
        with pytest.raises(ValueError) as raised:
            call()
        assert str(raised.value) == FLAG, door
    argv = ["sweep", "--first-jobs", "5", "--set", "loaning=yes", "-q"]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"aryl: error: {FLAG}\n"
    with pytest.raises(ValueError, match="^goodput_jobs must be True or False, got 1$"):
        sim.sweep({"first_jobs": 5, "goodput_jobs": 1}, engine="serial", cache=False)


# ---- R4-15: a read-only cache is read; a full disk names the file --------------------

SWEEP = ["sweep", "--training-servers", "2", "--inference-servers", "0"]
SWEEP += ["--engine", "serial", "-q", "--first-jobs"]


def read_only(monkeypatch, folder):
    """``folder`` as a read-only cache: ``os.access`` says so (as root, the tests'
    usual user here, a chmod would not; test_a_chmod_read_only_cache_is_read
    checks the real thing as another user)."""
    access, inside = os.access, str(folder)

    def no_writes(path, mode, *args, **kwargs):
        if mode & os.W_OK and os.path.abspath(path).startswith(inside):
            return False
        return access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", no_writes)


def test_a_read_only_cache_holding_every_run_is_read(tmp_path, monkeypatch, capsys):
    from aryl.cli import main

    cache = tmp_path / "cache"
    grid = ["--grid", "seed=0,1"]
    first = [*SWEEP, "20", *grid, "--cache", str(cache)]
    assert main([*first, "--out", str(tmp_path / "a")]) == 0
    entries = sorted(cache.iterdir())
    read_only(monkeypatch, cache)
    out = tmp_path / "b"
    assert main([*first, "--out", str(out)]) == 0
    assert (out / "sweep.parquet").is_file() and sorted(cache.iterdir()) == entries
    capsys.readouterr()
    # one run more: it would have to be written, so the sweep stops before running
    more = ["--grid", "seed=0,1,2"]
    assert main([*SWEEP, "20", *more, "--cache", str(cache), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"aryl: error: {cache}: the sweep cache is not writable, and 1 of 3 runs are "
        "not in it; give a writable cache folder (or run without one: cache=False, "
        "--no-cache)\n"
    )
    assert sorted(cache.iterdir()) == entries


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes anywhere"
)
def test_a_chmod_read_only_cache_is_read(tmp_path):
    cache = tmp_path / "cache"
    base, grid = {"first_jobs": 20, "training_servers": 2}, {"seed": [0]}
    first = sim.sweep(base, grid, engine="serial", cache=cache, progress=False)
    folders = [cache, *cache.iterdir()]
    for folder in folders:
        folder.chmod(0o555)
    try:
        again = sim.sweep(base, grid, engine="serial", cache=cache, progress=False)
        assert again["cached"].all()
        assert again["jct_mean"].tolist() == first["jct_mean"].tolist()
        with pytest.raises(PermissionError, match="not writable, and 1 of 2 runs"):
            sim.sweep(base, {"seed": [0, 1]}, engine="serial", cache=cache)
    finally:
        for folder in folders:
            folder.chmod(0o755)


def under_file_size_limit(code, limit):
    """Run ``code`` in a Python whose files may not grow past ``limit`` bytes (what a
    full disk also gives: a write error that names no file)."""
    script = f"import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
    return subprocess.run(
        [sys.executable, "-c", script + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_a_file_too_large_names_the_result_being_saved(tmp_path):
    target = tmp_path / "run"
    done = under_file_size_limit(
        f"""
        import aryl, aryl.sim as sim
        jobs = [aryl.Job(f"j{{i}}", 1, 1, 1, 60.0 * (i + 1)) for i in range(2000)]
        try:
            sim.simulate(jobs, sim.Cluster(4, 0)).save({str(target)!r})
        except OSError as exc:
            print(exc)
        """,
        8192,
    )
    said = done.stdout.strip()  # pyarrow's words around the errno's
    assert "File too large" in said and said.endswith(f"(writing {target})"), said
    assert not target.exists() and os.listdir(tmp_path) == []  # no temp folder left


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_a_file_too_large_in_a_sweep_names_the_cache_entry(tmp_path):
    out = tmp_path / "out"
    argv = ["sweep", "--training-servers", "16", "--engine", "serial", "-q"]
    argv += ["--first-jobs", "300", "--out", str(out)]
    done = under_file_size_limit(
        f"import sys\nfrom aryl.cli import main\nsys.exit(main({argv!r}))", 8192
    )
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert re.fullmatch(
        rf"aryl: error: \[Errno 27\] .*File too large \(writing {out}/cache/\w+\)",
        line,
    ), line


# ---- 0 / 0 is undefined, not 0 ---------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*use 5 or more replications:UserWarning")
def test_a_share_of_nothing_is_undefined_in_the_confidence_table():
    from aryl.cli.output import TABLE_COLUMNS, compare_table, ledger_table

    # A Baseline and a copy of it: nothing lent, nothing reclaimed, in every seed.
    jobs = [Job(f"j{i}", 1, 1, 1, 600.0, submit_time=100.0 * i) for i in range(20)]
    runs = {"Baseline (FIFO)": {"policy": "fifo"}, "copy": {"policy": "fifo"}}
    table = sim.compare(jobs, sim.Cluster(2, 0), runs, seeds=2)
    shares = ("collateral_damage", "flexible_reclaim_share", "lent_used_share")
    # nothing reclaimed, nothing preempted: no preemption ratio to read (issue 47)
    for share in (*shares, "preemption_ratio"):
        for column in (share, f"{share}_low", f"{share}_high"):
            assert table[column].isna().all(), column  # kept NaN in the data
    assert compare_table(table).shown[1][10] == "—"  # the copy's preempt ratio
    ledger = ledger_table(table).shown
    assert ledger[1][3] == "—" and ledger[1][1] == "0.0 h"  # lent used; lent GPU-h
    once = sim.compare(jobs, sim.Cluster(2, 0), runs)  # one run: summaries give 0.0
    assert once["lent_used_share"].tolist() == [0.0, 0.0]
    assert ledger_table(once).shown[1][3] == "—"
    summary = {**{k: 1.0 for k, _ in TABLE_COLUMNS}, "queuing_mean": 0.0}
    shown = compare_table(sim.speedups({"a": summary})).shown[0]
    assert shown[-1] == "—"  # a queue speed-up over a mean of 0 was printed "nanx"
