"""The run recipe (aryl.engine.runs): one home for trace -> jobs -> scenario -> simulate."""

import pytest

from aryl import sim, traces
from aryl.engine.runs import run_arguments, scenario_settings, trace_jobs
from aryl.jobtable import JobTable


@pytest.fixture(scope="module")
def trace():
    jobs, load = traces.load_default()
    return jobs.iloc[:300], load


def test_trace_jobs_converts_the_first_rows_of_a_frame(trace):
    frame, _ = trace
    got = trace_jobs(frame, 120, any_type_share=0.5, seed=4)
    want = traces.to_jobs(frame.iloc[:120], any_type_share=0.5, seed=4)
    assert len(got) == 120
    assert got.to_frame().equals(want.to_frame())
    assert len(trace_jobs(frame)) == len(frame)


def test_trace_jobs_takes_jobs_as_they_are(trace):
    jobs = traces.to_jobs(trace[0], seed=1)
    assert trace_jobs(jobs, 7).to_frame().equals(jobs[:7].to_frame())
    assert trace_jobs(list(jobs), None).to_frame().equals(jobs.to_frame())
    assert isinstance(trace_jobs(list(jobs)[:3]), JobTable)


def test_scenario_settings_given_values_win_over_the_preset():
    assert scenario_settings("baseline") == ("fifo", {"loaning": False})
    policy, config = scenario_settings("ideal", "sjf", {"hetero_efficiency": 0.5})
    assert policy == "sjf" and config["hetero_efficiency"] == 0.5
    preset = sim.scenario_config("basic")
    assert scenario_settings("basic")[1] == {
        k: v for k, v in preset.items() if k != "policy"
    }


def test_run_arguments_apply_the_scenario_with_the_seed(trace):
    jobs = trace_jobs(trace[0], seed=2)
    run = run_arguments(jobs, trace[1], scenario_name="advanced", seed=2)
    want = sim.scenario(jobs, "advanced", seed=2)
    assert run["jobs"].to_frame().equals(want.to_frame())
    assert run["policy"] == "aryl" and run["seed"] == 2
    assert run["inference_load"] is trace[1]
    assert (
        run["config"]["hetero_efficiency"]
        == sim.scenario_config("advanced")["hetero_efficiency"]
    )
