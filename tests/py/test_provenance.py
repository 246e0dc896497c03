"""Provenance, save/load, Comparison, the shared load extension, notebook display."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import sim
from aryl.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def short_trace(tmp_path_factory):
    """The first 300 jobs of the embedded trace (2.8 days) and only 1 day of its load."""
    from aryl import traces

    jobs, load = traces.load_default()
    folder = tmp_path_factory.mktemp("short")
    jobs.iloc[:300].to_csv(folder / "jobs.csv", index=False)
    load[load["time_s"] < 86400].to_csv(folder / "load.csv", index=False)
    return folder / "jobs.csv", folder / "load.csv"


@pytest.fixture(scope="module")
def run():
    jobs = [
        aryl.Job("a", 1, 1, 2, 100),
        aryl.Job(7, 4, 1, 2, 2000, submit_time=10),
        aryl.Job("c", 8, 1, 1, 3000, submit_time=20),
    ]
    return sim.simulate(
        jobs,
        sim.Cluster(2, 2),
        reclaim="scf",
        inference_load=[(0, 0.0), (300, 0.8)],
        config={"gpu_speed": {"T4": 1.0}, "headroom": 0.1},
        seed=3,
        label="mixed ids",
    )


def test_every_result_records_what_produced_it(run):
    p = run.provenance
    assert (p.jobs, p.policy, p.reclaim, p.seed) == (3, "aryl", "scf", 3)
    assert p.cluster["training_servers"] == 2 and p.cluster["inference_servers"] == 2
    assert p.config["headroom"] == 0.1 and p.config["gpu_speed"] == {"T4": 1.0}
    assert p.aryl_version == aryl.__version__ and len(p.jobs_fingerprint) == 16
    assert (
        p.load_rows == 2 and p.load_extended is None
    )  # reaches past the last submission
    assert "headroom=0.1" in str(p) and "Provenance" in p._repr_html_()


def test_the_same_input_has_the_same_fingerprint(run):
    jobs = [
        aryl.Job("a", 1, 1, 2, 100),
        aryl.Job(7, 4, 1, 2, 2000, submit_time=10),
        aryl.Job("c", 8, 1, 1, 3000, submit_time=20),
    ]
    again = sim.simulate(
        jobs,
        sim.Cluster(2, 2),
        reclaim="scf",
        inference_load=[(0, 0.0), (300, 0.8)],
        config={"gpu_speed": {"T4": 1.0}, "headroom": 0.1},
        seed=3,
        label="mixed ids",
    )
    assert again.provenance == run.provenance and again == run
    other = sim.simulate(jobs[:2], sim.Cluster(2, 2))
    assert other.provenance.jobs_fingerprint != run.provenance.jobs_fingerprint


def test_a_saved_result_loads_back_equal(run, tmp_path):
    path = run.save(tmp_path / "run")
    assert sorted(p.name for p in path.iterdir()) == [
        "jobs.parquet",
        "result.json",
        "timeline.parquet",
    ]
    back = sim.load(path)
    assert back == run
    assert list(back.jobs["id"]) == ["a", 7, "c"]  # mixed id types survive
    for column in run.jobs:
        assert back.jobs[column].dtype == run.jobs[column].dtype, column
    assert back.summary() == run.summary() and back.provenance == run.provenance
    assert (
        json.loads((path / "result.json").read_text())["summary"]["jobs_finished"] == 3
    )


def test_saving_over_a_result_replaces_it(run, tmp_path):
    other = sim.simulate([aryl.Job("x", 1, 1, 1, 5)], sim.Cluster(1))
    run.save(tmp_path / "r")
    other.save(tmp_path / "r")
    assert sim.load(tmp_path / "r") == other and sim.load(tmp_path / "r") != run


def test_loading_what_is_not_a_result_fails(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved aryl result"):
        sim.load(tmp_path)
    (tmp_path / "result.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="unknown format"):
        sim.load(tmp_path)


def test_a_short_load_is_extended_and_said_so():
    jobs = [
        aryl.Job(i, 8, 1, 1, 600, submit_time=i * 3600.0) for i in range(30)
    ]  # 29 h
    load = [
        (t, 0.5 if (t // 3600) % 2 else 0.0) for t in np.arange(0, 10 * 3600, 300.0)
    ]  # 10 h
    result = sim.simulate(jobs, sim.Cluster(1, 2), inference_load=load)
    note = result.provenance.load_extended
    assert note and "repeated every 0.4 days" in note
    assert result.provenance.load_rows > len(load)
    assert "load series" in result._repr_html_()
    # The API's extension is the one traces.extend_load makes: same run either way.
    from aryl.traces import extend_load

    frame = extend_load(
        pd.DataFrame(load, columns=["time_s", "load"]), 29 * 3600 + 90 * 86400
    )
    same = sim.simulate(jobs, sim.Cluster(1, 2), inference_load=frame)
    assert same.summary() == result.summary() and same.provenance.load_extended is None


def test_readme_snippet_and_cli_give_the_same_numbers(short_trace, tmp_path, capsys):
    """`aryl simulate` and the README's what-if snippet, on a load shorter than the jobs."""
    jobs_csv, load_csv = short_trace
    out = tmp_path / "cli"
    assert (
        main(
            [
                "simulate",
                str(jobs_csv),
                "--load",
                str(load_csv),
                "--training-servers",
                "4",
                "--inference-servers",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "Note: the load series" in capsys.readouterr().out
    cli = json.loads((out / "summary.json").read_text())

    from aryl import traces

    frame, load = traces.read_jobs(jobs_csv), traces.read_load(load_csv)
    jobs = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
    result = sim.simulate(
        jobs,
        sim.Cluster(training_servers=4, inference_servers=4),
        policy="aryl",
        reclaim="aryl",
        inference_load=load,
        seed=0,
    )
    api = result.summary()
    assert {k: cli[k] for k in api} == api
    assert cli["provenance"]["run"] == json.loads(
        json.dumps(result.provenance.to_dict())
    )


def test_cli_outputs_name_inputs_parameters_seed_and_version(
    short_trace, tmp_path, capsys
):
    jobs_csv, load_csv = short_trace
    out = tmp_path / "cmp"
    assert (
        main(
            [
                "compare",
                str(jobs_csv),
                "--load",
                str(load_csv),
                "--training-servers",
                "64",
                "--inference-servers",
                "16",
                "--seed",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    table = pd.read_csv(out / "compare.csv", index_col="run")
    row = table.loc["Loaning only, SCF reclaim"]
    assert (row["policy"], row["reclaim"], row["seed"], row["aryl_version"]) == (
        "aryl",
        "scf",
        2,
        aryl.__version__,
    )
    assert (
        str(jobs_csv) in row["inputs"]
        and row["jobs"] == 300
        and "repeated" in row["load_extended"]
    )
    assert table.loc["Baseline (FIFO)", "config"] == "loaning=False"
    record = json.loads((out / "provenance.json").read_text())
    assert (
        record["parameters"]["seed"] == 2 and record["aryl_version"] == aryl.__version__
    )
    assert set(record["runs"]) == set(table.index)
    from PIL import Image

    with Image.open(out / "jct_cdf.png") as png:
        assert png.text["Software"] == f"aryl {aryl.__version__}"
        assert json.loads(png.text["Description"])["parameters"]["seed"] == 2


def test_compare_returns_the_results_with_the_table():
    jobs = [aryl.Job(i, 2, 1, 2, 500 + 100 * i, submit_time=30 * i) for i in range(8)]
    cmp = sim.compare(
        jobs,
        sim.Cluster(1, 1),
        {"fifo": {"policy": "fifo"}, "aryl": {}},
        inference_load=[(0, 0.2)],
        threads=2,
    )
    assert isinstance(cmp, pd.DataFrame) and isinstance(cmp, sim.Comparison)
    assert list(cmp.index) == ["fifo", "aryl"] and list(cmp.columns) == list(
        sim.SUMMARY_KEYS
    )
    assert set(cmp.results) == {"fifo", "aryl"}
    assert cmp.results["fifo"].summary() == cmp.table.loc["fifo"].to_dict()
    assert type(cmp.table) is pd.DataFrame and type(cmp.loc[["aryl"]]) is pd.DataFrame
    serial = sim.compare(
        jobs,
        sim.Cluster(1, 1),
        {"fifo": {"policy": "fifo"}, "aryl": {}},
        inference_load=[(0, 0.2)],
    )
    assert serial.table.equals(cmp.table)


def test_html_views_show_units_and_percentages(run, paper_example):
    html = run._repr_html_()
    assert "queuing time, mean" in html and " s (" in html
    assert "%" in html and "queuing_mean" not in html and "e+0" not in html
    plan = aryl.reclaim(*paper_example, n=2)
    assert "16 GPUs" in plan._repr_html_() and "0.0%" in plan._repr_html_()
    decision = aryl.schedule(
        [aryl.Job("A", 1, 2, 3, 100), aryl.Job("B", 1, 2, 6, 20)], [aryl.Server("s1")]
    )
    assert "2 of 2 (100%)" in decision._repr_html_()


def test_figures_display_inline_without_pyplot(run):
    fig = aryl.plot.cdf(run)
    assert fig._repr_png_().startswith(PNG_MAGIC)


def test_subpackages_after_a_bare_import():
    code = (
        "import aryl, sys; assert 'aryl.sim' not in sys.modules; "
        "print(aryl.sim.simulate.__name__, aryl.plot.cdf.__name__, aryl.traces.read_jobs.__name__); "
        "assert {'sim', 'plot', 'traces'} <= set(dir(aryl))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["simulate", "cdf", "read_jobs"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        aryl.nope  # noqa: B018


def readme_blocks(heading):
    """The ```python blocks of the README section that starts with ``heading``."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index(heading) :]
    section = section[: section.index("\n### ", 1)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_readme_what_if_snippets_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARYL_CACHE_DIR", str(tmp_path / "cache"))
    snippet, history, sweep = readme_blocks("### What-if studies")
    namespace = {}
    exec(compile(snippet, "README what-if", "exec"), namespace)
    result = namespace["result"]
    assert (
        "repeated" in result.provenance.load_extended
        and (tmp_path / "runs" / "aryl").is_dir()
    )
    from aryl.studies.sweep import run_point

    cli_path = run_point(
        {"training_servers": 64, "inference_servers": 64},
        namespace["traces"].load_default(),
    )
    assert (
        cli_path.summary() == result.summary()
    )  # what `aryl simulate` runs (see test_sweep)
    exec(compile(history, "README history", "exec"), namespace)
    assert namespace["result"].summary() == result.summary()  # the same run
    assert len(namespace["h"]) > 0
    # Smaller and on threads: starting Ray is tested in test_sweep and notebook 02.
    sweep = sweep.replace('"first_jobs": 3000', '"first_jobs": 300').replace(
        "\n)  # 8 runs", "\n    engine='threads',\n)"
    )
    assert "engine='threads'" in sweep
    exec(compile(sweep, "README sweep", "exec"), namespace)
    assert len(namespace["table"]) == 8
