"""The Pollux table checks its manifest against the runs it names (reliability round 5,
R5-12): another row's entry, a path outside ``runs/``, files swapped between entries or
an empty fingerprint are refused with a ``ManifestError`` naming the run, never a full
table of other numbers."""

import shutil

import pandas as pd
import pytest

from test_pollux_windows import benchmark


@pytest.fixture(scope="module")
def table():
    return benchmark("pollux_table")


@pytest.fixture
def kept(tmp_path, table):
    """A copy of the kept results, and its manifest."""
    folder = tmp_path / "pollux"
    shutil.copytree(table.RESULTS, folder)
    return folder, pd.read_csv(folder / "manifest.csv")


def plan_row(manifest, row, window):
    """The index of the 16-window plan's run of ``row`` in ``window``."""
    match = manifest[
        (manifest["windows"] == 16)
        & (manifest["row"] == row)
        & (manifest["window"] == window)
    ]
    (index,) = match.index
    return index


def test_the_kept_results_pass_the_checks(table):
    runs = table.load_runs(table.RESULTS)
    assert len(runs) == 48


def test_another_rows_entry_is_refused(kept, table):
    folder, manifest = kept
    pollux = plan_row(manifest, "Pollux", 1)
    tuned = plan_row(manifest, "Aryl+TunedJobs", 1)
    manifest.loc[pollux, "fingerprint"] = manifest.loc[tuned, "fingerprint"]
    manifest.to_csv(folder / "manifest.csv", index=False)
    with pytest.raises(table.ManifestError, match=r"policy 'aryl', expected 'pollux'"):
        table.tables(folder)


def test_another_rows_entry_under_this_ones_name_is_refused(kept, table):
    # Another run's entry copied under the fingerprint the manifest gives Pollux:
    # its row.json names the other entry; edited to match, the provenance still
    # says which run it is.
    import json

    folder, manifest = kept
    pollux = manifest.loc[plan_row(manifest, "Pollux", 1), "fingerprint"]
    tuned = manifest.loc[plan_row(manifest, "Aryl+TunedJobs", 1), "fingerprint"]
    runs = folder / "runs"
    shutil.rmtree(runs / pollux)
    shutil.copytree(runs / tuned, runs / pollux)
    with pytest.raises(table.ManifestError, match=f"row.json names entry '{tuned}'"):
        table.tables(folder)
    row = json.loads((runs / pollux / "row.json").read_text())
    (runs / pollux / "row.json").write_text(json.dumps({**row, "fingerprint": pollux}))
    with pytest.raises(
        table.ManifestError, match=r"policy 'aryl', expected 'pollux'"
    ) as error:
        table.tables(folder)
    assert "'Pollux', seed 0, window 1 of 16" in str(error.value)


@pytest.mark.parametrize("where", ["absolute", "relative", "empty", "link"])
def test_an_entry_outside_runs_is_refused(kept, table, where, tmp_path):
    folder, manifest = kept
    index = plan_row(manifest, "Pollux", 1)
    name = manifest.loc[plan_row(manifest, "Aryl+TunedJobs", 1), "fingerprint"]
    outside = tmp_path / "elsewhere"
    shutil.copytree(folder / "runs" / name, outside / name)
    if where == "link":
        (folder / "runs" / "0123456789abcdef").symlink_to(outside / name)
    manifest.loc[index, "fingerprint"] = {
        "absolute": str(outside / name),
        "relative": f"../../elsewhere/{name}",
        "empty": None,
        "link": "0123456789abcdef",
    }[where]
    manifest.to_csv(folder / "manifest.csv", index=False)
    with pytest.raises(table.ManifestError, match=r"not the name of an entry|outside"):
        table.tables(folder)


def test_files_swapped_between_entries_are_refused(kept, table):
    folder, manifest = kept
    runs = folder / "runs"
    a = runs / manifest.loc[plan_row(manifest, "Pollux", 1), "fingerprint"]
    b = runs / manifest.loc[plan_row(manifest, "Aryl+TunedJobs", 1), "fingerprint"]
    for name in ("result.json", "jobs.parquet", "timeline.parquet"):
        (a / name).rename(runs / name)
        (b / name).rename(a / name)
        (runs / name).rename(b / name)
    with pytest.raises(table.ManifestError, match=r"files swapped between entries"):
        table.tables(folder)


def test_a_missing_entry_is_still_reported_as_a_partial_run(kept, table):
    folder, manifest = kept
    name = manifest.loc[plan_row(manifest, "Pollux", 1), "fingerprint"]
    shutil.rmtree(folder / "runs" / name)
    assert "15 of 16" in table.tables(folder)
