"""Saving and loading results and sweep cache entries: nothing lost, nothing half-read.

Saving never replaces what aryl did not write; a damaged file is named, never fatal to a
sweep; concurrent writers and readers of one folder never see a missing or mixed result.
"""

import dataclasses
import faulthandler
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import aryl
from aryl import sim
from aryl.engine import provenance, storage
from aryl.studies import sweep_runs

FILES = ["jobs.parquet", "result.json", "timeline.parquet"]


def small_run(n=3, label="run"):
    jobs = [
        aryl.Job(f"j{i}", 8, 1, 2, 600.0 + i, submit_time=10.0 * i) for i in range(n)
    ]
    return sim.simulate(jobs, sim.Cluster(2, 0), label=label)


@pytest.fixture(scope="module")
def run():
    return small_run()


def snapshot(folder: Path):
    """Every file under ``folder`` with its bytes."""
    return {
        p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def users_folder(tmp_path):
    folder = tmp_path / "mydata"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("keep me")
    (folder / "sub" / "data.csv").write_text("1,2\n")
    return folder


# ---- what save refuses ------------------------------------------------------------------


def test_save_refuses_a_folder_that_is_not_a_result_and_leaves_it(run, tmp_path):
    folder = users_folder(tmp_path)
    before = snapshot(folder)
    with pytest.raises(ValueError, match="not an aryl result; refusing to replace"):
        run.save(folder)
    assert snapshot(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydata"]  # no temporary left


def test_save_refuses_a_result_folder_holding_a_users_file(run, tmp_path):
    run.save(tmp_path / "r")
    (tmp_path / "r" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not an aryl result"):
        run.save(tmp_path / "r")
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_what_is_there_when_asked(run, tmp_path):
    folder = users_folder(tmp_path)
    run.save(folder, overwrite=True)
    assert sorted(p.name for p in folder.iterdir()) == FILES
    assert sim.load(folder) == run
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="not an aryl result"):
        run.save(a_file)
    run.save(a_file, overwrite=True)
    assert sim.load(a_file) == run


@pytest.mark.parametrize("where", [".", "", "  ", "..", "sub/.."])
def test_save_never_replaces_the_current_folder_or_a_parent(
    run, tmp_path, monkeypatch, where
):
    (tmp_path / "sub").mkdir()
    (tmp_path / "keep.txt").write_text("x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError):
        run.save(where, overwrite=True)
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_save_refuses_a_symbolic_link(run, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ValueError, match="symbolic link"):
        run.save(tmp_path / "link", overwrite=True)


def test_save_expands_the_home_folder(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = run.save("~/experiments/run1")
    assert path == tmp_path / "experiments" / "run1"
    assert sim.load("~/experiments/run1") == run


def test_save_fills_an_empty_folder_and_replaces_a_result(run, tmp_path):
    (tmp_path / "empty").mkdir()
    run.save(tmp_path / "empty")
    other = small_run(5, "other")
    other.save(tmp_path / "empty")
    assert sim.load(tmp_path / "empty") == other
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_without_an_atomic_swap_saving_still_replaces_and_refuses(
    run, tmp_path, monkeypatch
):
    monkeypatch.setattr(storage, "_exchange", lambda a, b: None)  # as off Linux
    run.save(tmp_path / "r")
    other = small_run(4, "other")
    other.save(tmp_path / "r")
    assert sim.load(tmp_path / "r") == other
    folder = users_folder(tmp_path)
    before = snapshot(folder)
    with pytest.raises(ValueError, match="not an aryl result"):
        run.save(folder)
    assert snapshot(folder) == before


def test_a_folder_that_appears_during_the_save_is_given_back(
    run, tmp_path, monkeypatch
):
    target = tmp_path / "r"

    def fill_then_user_writes(tmp):
        storage.write_result(run, tmp)
        users = target / "sub"
        users.mkdir(parents=True)
        (target / "notes.txt").write_text("mine")

    with pytest.raises(ValueError, match="not an aryl result"):
        storage.write_folder(target, fill_then_user_writes)
    assert (target / "notes.txt").read_text() == "mine" and (target / "sub").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


# ---- damaged files ----------------------------------------------------------------------


def edit_json(folder, change):
    meta = json.loads((folder / "result.json").read_text())
    (folder / "result.json").write_text(json.dumps(change(meta)))


DAMAGES = {
    "json list": lambda f: (f / "result.json").write_text("[]"),
    "json null": lambda f: (f / "result.json").write_text("null"),
    "empty json": lambda f: (f / "result.json").write_text(""),
    "truncated json": lambda f: (f / "result.json").write_text(
        (f / "result.json").read_text()[:200]
    ),
    "deep nesting": lambda f: (f / "result.json").write_text("[" * 100_000),
    "missing totals": lambda f: edit_json(
        f, lambda m: {k: v for k, v in m.items() if k != "totals"}
    ),
    "totals a list": lambda f: edit_json(f, lambda m: {**m, "totals": []}),
    "bad provenance": lambda f: edit_json(f, lambda m: {**m, "provenance": {"x": 1}}),
    "swapped tables": lambda f: (
        os.rename(f / "jobs.parquet", f / "t"),
        os.rename(f / "timeline.parquet", f / "jobs.parquet"),
        os.rename(f / "t", f / "timeline.parquet"),
    ),
    "timeline of another run": lambda f: sim.simulate(
        [aryl.Job("a", 8, 1, 1, 60)], sim.Cluster(1, 0)
    ).timeline.to_parquet(f / "timeline.parquet", index=False),
    "a folder for a table": lambda f: (
        (f / "timeline.parquet").unlink(),
        (f / "timeline.parquet").mkdir(),
    ),
    "truncated parquet": lambda f: (f / "jobs.parquet").write_bytes(
        (f / "jobs.parquet").read_bytes()[:100]
    ),
    "missing table": lambda f: (f / "timeline.parquet").unlink(),
    "edited summary": lambda f: edit_json(
        f, lambda m: {**m, "summary": {**m["summary"], "jct_mean": -1.0}}
    ),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_result_raises_one_error_naming_the_file(run, tmp_path, damage):
    folder = run.save(tmp_path / "r")
    DAMAGES[damage](folder)
    with pytest.raises(sim.ResultFileError, match=str(folder)) as error:
        sim.load(folder)
    assert isinstance(error.value, ValueError)


def history_run(ids=None):
    jobs = [
        aryl.Job(i, 8, 1, 2, 600.0 + n, submit_time=10.0 * n)
        for n, i in enumerate(ids or ["a", "b", "c"])
    ]
    return sim.simulate(jobs, sim.Cluster(2, 0), label="h", history=True)


def rewrite_history(folder, change):
    table = pd.read_parquet(folder / "history.parquet")
    change(table).to_parquet(folder / "history.parquet", index=False)


HISTORY_DAMAGES = {
    "missing history": lambda f: (f / "history.parquet").unlink(),
    "truncated history": lambda f: (f / "history.parquet").write_bytes(
        (f / "history.parquet").read_bytes()[:100]
    ),
    "history row dropped": lambda f: rewrite_history(f, lambda t: t.iloc[1:]),
    "history column dropped": lambda f: rewrite_history(
        f, lambda t: t.drop(columns="gpus")
    ),
    "history count not a count": lambda f: edit_json(
        f, lambda m: {**m, "history": "all"}
    ),
    "history end edited": lambda f: rewrite_history(
        f, lambda t: t.assign(end=t["end"] + 1.0)
    ),
    "history server edited": lambda f: rewrite_history(
        f, lambda t: t.assign(server=t["server"].iloc[::-1].to_numpy())
    ),
    "history workers edited": lambda f: rewrite_history(
        f, lambda t: t.assign(workers=t["workers"] + 1)
    ),
    "history a folder": lambda f: (
        (f / "history.parquet").unlink(),
        (f / "history.parquet").mkdir(),
    ),
    "history not recorded": lambda f: edit_json(
        f, lambda m: {k: v for k, v in m.items() if k != "history"}
    ),
}


def test_a_history_is_saved_only_when_recorded_and_loads_equal(run, tmp_path):
    recorded = history_run()
    folder = recorded.save(tmp_path / "h")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        FILES + ["history.parquet"]
    )
    back = sim.load(folder)
    assert back == recorded and back.history().equals(recorded.history())
    assert back != dataclasses.replace(recorded, allocations=None)
    assert "history.parquet" not in {p.name for p in run.save(tmp_path / "r").iterdir()}
    assert sim.load(tmp_path / "r").allocations is None


def test_a_history_of_mixed_ids_keeps_them(tmp_path):
    recorded = history_run([1, "b", 3])
    assert sim.load(recorded.save(tmp_path / "h")) == recorded


@pytest.mark.parametrize("damage", HISTORY_DAMAGES, ids=list(HISTORY_DAMAGES))
def test_a_damaged_history_raises_one_error_naming_the_file(tmp_path, damage):
    folder = history_run().save(tmp_path / "h")
    HISTORY_DAMAGES[damage](folder)
    with pytest.raises(sim.ResultFileError, match=str(folder)):
        sim.load(folder)


def test_saved_summary_checks_the_history_too(tmp_path):
    folder = history_run().save(tmp_path / "h")
    HISTORY_DAMAGES["truncated history"](folder)
    with pytest.raises(sim.ResultFileError, match="history.parquet"):
        storage.saved_summary(folder)


def test_an_edited_table_is_caught_by_its_digest_and_its_summary(run, tmp_path):
    folder = run.save(tmp_path / "r")
    jobs = run.jobs.copy()
    jobs.loc[0, "jct"] = -5.0
    jobs.to_parquet(folder / "jobs.parquet", index=False)
    with pytest.raises(sim.ResultFileError, match="jobs.parquet: .*edited or swapped"):
        sim.load(folder)
    # a result saved before digests were recorded: the summary still catches it
    edit_json(folder, lambda m: {k: v for k, v in m.items() if k != "files"})
    with pytest.raises(sim.ResultFileError, match="jobs.parquet.*summary"):
        sim.load(folder)


def test_loading_a_missing_result_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved aryl result"):
        sim.load(tmp_path)


# ---- concurrent writers and readers ---------------------------------------------------------


def _writer(folder, label, rounds, errors):
    faulthandler.enable()  # a crash in C prints every thread's stack to the log
    run = small_run(3 if label == "a" else 6, label)
    for _ in range(rounds):
        try:
            run.save(folder)
        except Exception as exc:  # noqa: BLE001 - every failure is what we count
            errors.put(f"save {label}: {type(exc).__name__}: {exc}")


def _reader(folder, rounds, errors):
    faulthandler.enable()
    runs = {r.label: r for r in (small_run(3, "a"), small_run(6, "b"))}
    for _ in range(rounds):
        try:
            got = sim.load(folder)
            if got != runs.get(got.label):
                errors.put(f"load: a mixed or half result ({got.label})")
        except Exception as exc:  # noqa: BLE001
            errors.put(f"load: {type(exc).__name__}: {exc}")


@pytest.mark.serial  # six processes race on one folder
def test_many_writers_and_readers_on_one_folder_lose_nothing(tmp_path):
    folder = tmp_path / "run"
    small_run(3, "a").save(folder)
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(folder, w, 40, errors)) for w in "abab"]
    procs += [ctx.Process(target=_reader, args=(folder, 80, errors)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert [p.exitcode for p in procs] == [0] * len(procs)
    assert found == []
    assert sim.load(folder).label in ("a", "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporaries left


READ_IN_A_NEW_PROCESS = """
import os, sys
from aryl import sim
from aryl.engine import storage

def threads():
    return sorted(os.listdir("/proc/self/task"))

before = threads()
for _ in range(3):
    sim.load(sys.argv[1])
    storage.saved_summary(sys.argv[1])
print(len(before), len(threads()))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_reading_a_result_starts_no_arrow_thread(tmp_path, run):
    # A reader of a folder racing writers once died by SIGABRT at exit: Arrow's
    # thread pools, started by a threaded Parquet read from a Python file object,
    # can abort the process when they are torn down at interpreter exit
    # ("terminate called without an active exception"). A read parses the bytes
    # on the calling thread, so a reader holds no Arrow thread to tear down.
    run.save(tmp_path / "run")
    out = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", READ_IN_A_NEW_PROCESS]
        + [str(tmp_path / "run")],
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = map(int, out.stdout.split())
    assert after == before


# ---- the sweep cache ----------------------------------------------------------------------

BASE = {"first_jobs": 60, "training_servers": 4, "inference_servers": 2}
GRID = {"seed": [0, 1]}


def run_sweep(cache):
    return sim.sweep(BASE, GRID, cache=cache, engine="serial", progress=False)


CACHE_DAMAGES = {
    "row {}": lambda e: (e / "row.json").write_text("{}"),
    "row []": lambda e: (e / "row.json").write_text("[]"),
    "row truncated": lambda e: (e / "row.json").write_text(
        (e / "row.json").read_text()[:30]
    ),
    "edited number": lambda e: (e / "row.json").write_text(
        json.dumps({**json.loads((e / "row.json").read_text()), "jct_mean": -1})
    ),
    "number as text": lambda e: (e / "row.json").write_text(
        json.dumps({**json.loads((e / "row.json").read_text()), "jct_mean": "x"})
    ),
    "result.json gone": lambda e: (e / "result.json").unlink(),
    "truncated parquet": lambda e: (e / "timeline.parquet").write_bytes(b"PAR1"),
}


@pytest.mark.parametrize("damage", CACHE_DAMAGES, ids=list(CACHE_DAMAGES))
def test_a_damaged_cache_entry_is_recomputed_with_a_warning(tmp_path, damage):
    first = run_sweep(tmp_path)
    entry = Path(first.loc[0, "saved"])
    CACHE_DAMAGES[damage](entry)
    with pytest.warns(UserWarning, match=f"{entry}.*recomputing"):
        second = run_sweep(tmp_path)
    assert list(second["cached"]) == [False, True]
    assert second["jct_mean"].tolist() == first["jct_mean"].tolist()
    assert list(run_sweep(tmp_path)["cached"]) == [True, True]  # repaired
    assert sim.load(entry).summary()["jct_mean"] == first.loc[0, "jct_mean"]


def test_the_cache_key_follows_the_code_not_the_version(tmp_path, monkeypatch):
    assert list(run_sweep(tmp_path)["cached"]) == [False, False]
    assert list(run_sweep(tmp_path)["cached"]) == [True, True]
    source = tmp_path / "pkg"
    shutil.copytree(
        Path(aryl.__file__).parent,
        source,
        ignore=shutil.ignore_patterns("data", "*.so"),
    )
    core = Path(aryl._core.__file__)
    before = provenance._code_fingerprint(source, core)
    with open(source / "sim" / "simulation.py", "a") as f:
        f.write("\n# a change that keeps the version string\n")
    after = provenance._code_fingerprint(source, core)
    assert after != before
    monkeypatch.setattr(sweep_runs, "code_fingerprint", lambda: after)
    assert list(run_sweep(tmp_path)["cached"]) == [False, False]


def test_fuzzed_result_files_raise_only_the_documented_errors():
    # 200 of the saved_result fuzz target's inputs (python tests/fuzz/fuzz_targets.py
    # --target saved_result runs more).
    from fuzz.fuzz_targets import saved_result

    for i in range(200):
        saved_result(i.to_bytes(4, "little"))


def test_an_optional_key_saved_empty_by_an_older_aryl_still_loads(run, tmp_path):
    # an aryl that wrote user_slowdown_spread as NaN for every run; now it is left out
    folder = run.save(tmp_path / "r")
    edit_json(
        folder,
        lambda m: {**m, "summary": {**m["summary"], "user_slowdown_spread": None}},
    )
    assert sim.load(folder).summary() == run.summary()
    # a value there is a claim the tables must give, as for every other key
    edit_json(
        folder,
        lambda m: {**m, "summary": {**m["summary"], "user_slowdown_spread": 2.0}},
    )
    with pytest.raises(sim.ResultFileError, match="do not give the summary"):
        sim.load(folder)
