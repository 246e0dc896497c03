"""Frictions a new user met (issue 45: the fifth users' audit) and two silent reads of
the fifth reliability audit (R5-13, R5-19): each on the kind of input that showed it,
written small to ``tmp_path``."""

import warnings
from collections import Counter

import pytest

from aryl.cli import main
from aryl.cli.console import Console
from aryl.cli.inputs import TraceFiles
from aryl.cli.inputs import read_jobs as read_cli_jobs
from aryl.policy import load_policy
from aryl.traces import CutShortWarning, TraceError, read, read_jobs, read_load
from aryl.traces.formats.common import STILL_RUNNING

OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


def pod_list(tmp_path, *rows, end="\n"):
    """An ``openb_pod_list_default.csv`` of ``rows``, its last line ended by ``end``."""
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(OPENB_HEADER + "\n".join(rows) + end)
    return path


def quiet(function, *args, **kwargs):
    """function(*args, **kwargs) with its warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


# ---- R5-13: the pod phase in any spelling -------------------------------------------


@pytest.mark.parametrize("phase", ["Running", "running", "RUNNING", " running "])
def test_alibaba_2023_phase_is_read_whatever_its_spelling(tmp_path, phase):
    path = pod_list(
        tmp_path,
        "done,1000,1000,1,1000,,LS,Succeeded,0,500,10",
        # still running when the trace ends (the last deletion_time): left out
        f"long,1000,1000,1,1000,,LS,{phase},5,900,20",
        "over,1000,1000,1,1000,,LS,SUCCEEDED,6,700,30",
    )
    frame = quiet(read, path, format="alibaba-2023")
    assert frame["job_id"].tolist() == ["done", "over"]
    assert frame.attrs["skip_reasons"] == Counter({STILL_RUNNING: 1})
    # kept as the release spells it
    assert frame["pod_phase"].tolist() == ["Succeeded", "Succeeded"]


@pytest.mark.parametrize("phase", ["Xyz", "", "Runing"])
def test_alibaba_2023_unknown_phase_is_refused_naming_file_row_column(tmp_path, phase):
    path = pod_list(
        tmp_path,
        "done,1000,1000,1,1000,,LS,Succeeded,0,500,10",
        f"long,1000,1000,1,1000,,LS,{phase},5,900,20",
    )
    with pytest.raises(TraceError) as error:
        read(path, format="alibaba-2023")
    message = str(error.value)
    assert isinstance(error.value, ValueError)
    assert "openb_pod_list_default.csv: row 2 (line 3), column 'pod_phase'" in message
    assert "Running, Succeeded, Failed or Pending" in message
    # with drop_invalid, counted as invalid, never a finished job
    frame = quiet(read, path, format="alibaba-2023", drop_invalid=True)
    assert frame["job_id"].tolist() == ["done"]
    assert frame.attrs["dropped"] == 1


def test_alibaba_2023_without_a_phase_column_is_a_named_error(tmp_path):
    path = tmp_path / "pods.csv"
    path.write_text(
        "name,num_gpu,gpu_spec,creation_time,deletion_time,scheduled_time\n"
        "p,1,,0,100,10\n"
    )
    with pytest.raises(TraceError, match="missing column.*pod_phase"):
        read(path, format="alibaba-2023")


# ---- R5-19: a file cut short ----------------------------------------------------------


def cut_pod_list(tmp_path, last):
    """The R5-19 case: a pod list whose last row ends in ``last``, with no newline."""
    return pod_list(
        tmp_path,
        "done,1000,1000,1,1000,,LS,Succeeded,0,500,10",
        f"last,1000,1000,1,1000,,LS,Succeeded,5,{last}",
        end="",
    )


def test_a_last_line_without_newline_is_read_with_a_warning_naming_it(tmp_path):
    # deletion_time,scheduled_time = 86000,82000 cut to 86000,82: a whole-looking row
    path = cut_pod_list(tmp_path, "86000,82")
    with pytest.warns(UserWarning) as caught:
        frame = read(path, format="alibaba-2023")
    # read whole: a pod, deleted at the trace's end, so still running then
    assert len(frame) == 1 and frame.attrs["skip_reasons"][STILL_RUNNING] == 1
    (message,) = [str(w.message) for w in caught if w.category is CutShortWarning]
    assert "openb_pod_list_default.csv: line 3, the last" in message
    assert "cut short" in message
    # whole, with its newline: no such warning (warnings are errors in the tests)
    whole = pod_list(
        tmp_path,
        "p,1000,1000,1,1000,,LS,Succeeded,0,500,10",
        "q,1000,1000,1,1000,,LS,Running,0,900,10",
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*left out 1 record", UserWarning)
        read(whole, "alibaba-2023")


@pytest.mark.parametrize(
    "last, says",
    [
        # cut inside a quoted last field
        ('86000,"82', "line 3: the file ends inside a quoted field"),
        # cut before its last fields
        ("860", "row 2 (line 3): 10 fields, the header has 11; the file ends there"),
    ],
)
def test_a_last_line_cut_short_is_refused_naming_file_and_line(tmp_path, last, says):
    path = cut_pod_list(tmp_path, last)
    with pytest.raises(TraceError) as error:
        read(path, format="alibaba-2023")
    assert isinstance(error.value, ValueError)
    assert f"openb_pod_list_default.csv: {says}" in str(error.value)
    assert "cut short" in str(error.value)


def test_a_quoted_field_cut_short_is_refused_even_after_a_newline(tmp_path):
    # the csv module reads the open quote to the end of the file as one field
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(
        "job_id,submit_time_s,num_gpus,duration_s,gpu_type\n"
        'a,0,1,100,V100\nb,5,1,10,"V100\n'
    )
    with pytest.raises(TraceError, match=r"jobs\.csv: line 3: the file ends inside"):
        read_jobs(jobs)
    load = tmp_path / "load.csv"
    load.write_text('time_s,load\n0,0.5\n300,"0.4')
    with pytest.raises(TraceError, match=r"load\.csv: line 3: the file ends inside"):
        read_load(load)


def test_the_command_line_shows_the_cut_short_warning(tmp_path):
    path = cut_pod_list(tmp_path, "86000,82")
    files = TraceFiles(jobs=str(path), format="alibaba-2023")
    with pytest.warns(CutShortWarning, match="line 3, the last"):
        frame = read_cli_jobs(files, Console(quiet=True))
    assert len(frame) + frame.attrs["skip_reasons"][STILL_RUNNING] == 2


# ---- --load embeded ----------------------------------------------------------------


@pytest.mark.parametrize("given", ["embeded", "embbeded", "Embeded"])
def test_a_misspelt_embedded_load_is_suggested(given, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no file of that name
    with pytest.raises(SystemExit) as stop:
        main(["simulate", "--load", given])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"--load: {given}: no such file; did you mean 'embedded'?" in err


def test_a_missing_load_file_is_not_taken_for_embedded(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--load", str(tmp_path / "load.csv")])
    err = capsys.readouterr().err
    assert "load.csv: no such file" in err and "did you mean" not in err


# ---- --policy las --------------------------------------------------------------------


@pytest.mark.parametrize(
    "given", ["las", "LAS", "least-attained-service", "least_attained_service"]
)
def test_least_attained_service_by_its_name_suggests_tiresias(given, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["simulate", "--policy", given])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"got {given!r}; did you mean 'tiresias' (least attained service)?" in err


def test_policy_aliases_are_suggested_by_the_api_too():
    from aryl import sim

    with pytest.raises(ValueError, match=r"did you mean 'tiresias' \(least attained"):
        sim.simulate([], sim.Cluster(1, 1), policy="las")
    with pytest.raises(ValueError, match=r"did you mean 'fifo' \(first come"):
        sim.simulate([], sim.Cluster(1, 1), policy="fcfs")


def test_a_plain_misspelling_still_gets_the_closest_name(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--policy", "tiresas"])
    assert "did you mean 'tiresias'?" in capsys.readouterr().err


# ---- --policy path.py:LAS ------------------------------------------------------------

POLICY_FILE = """
from aryl import Policy


class Las:
    def allocate(self, state, epoch):
        return state.schedule("tiresias", **epoch.schedule_options)


class Greedy(Las):
    pass


def helper():
    return 1


FAST = Greedy()
"""


def test_a_policy_file_without_the_name_lists_its_policies(tmp_path, capsys):
    path = tmp_path / "mine.py"
    path.write_text(POLICY_FILE)
    with pytest.raises(ValueError) as error:
        load_policy(f"{path}:LAS")
    message = str(error.value)
    # the same name in another case first, then every policy (not helper, not Policy)
    assert message.endswith(
        f"{str(path)!r} has no 'LAS'; did you mean 'Las'? (its policies: Las, Greedy, "
        "FAST)"
    )
    with pytest.raises(ValueError, match=r"has no 'Other' \(its policies: Las, Gr"):
        load_policy(f"{path}:Other")
    assert main(["simulate", "--policy", f"{path}:LAS"]) == 2
    assert "did you mean 'Las'?" in capsys.readouterr().err


def test_a_policy_file_without_any_policy_says_so(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("def helper():\n    return 1\n")
    with pytest.raises(ValueError, match="has no 'LAS'; it defines no policy"):
        load_policy(f"{path}:LAS")


# ---- the 2025 DLRM release ----------------------------------------------------------

#: The header and two rows of the release's disaggregated_DLRM_trace.csv (its
#: README's sample rows).
DLRM_2025 = (
    "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,"
    "rdma_request,rdma_limit,memory_request,memory_limit,disk_request,disk_limit,"
    "max_instance_per_node,creation_time,scheduled_time,deletion_time\n"
    "instance_7185,HN,app_0,12,12,1,1,25,25,120.0,120.0,680.0,800.0,8,,,\n"
    "instance_13574,CN,app_130,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,1435629.0,"
    "1435629.0,1435760.0\n"
)


@pytest.mark.parametrize("format", ["aryl", "alibaba-2023", "helios"])
def test_the_2025_dlrm_release_is_recognised_and_refused_saying_why(tmp_path, format):
    path = tmp_path / "disaggregated_DLRM_trace_v2025.csv"
    path.write_text(DLRM_2025)
    with pytest.raises(TraceError) as error:
        read(path, format=format)
    message = str(error.value)
    assert message.startswith(f"{path}: the Alibaba GPU 2025 release")
    assert "aryl has no importer for" in message
    assert "missing column" not in message


def test_the_command_line_says_which_release_it_is(tmp_path, capsys):
    path = tmp_path / "disaggregated_DLRM_trace_v2025.csv"
    path.write_text(DLRM_2025)
    assert main(["simulate", str(path), "--training-servers", "2"]) == 2
    err = capsys.readouterr().err
    assert "the Alibaba GPU 2025 release" in err and "no importer" in err


# ---- docs/cli.md in the source tree --------------------------------------------------


def test_the_checked_in_cli_page_overviews_every_command(tmp_path, monkeypatch):
    import argparse
    import shlex
    from pathlib import Path

    from aryl import cli

    page = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    text = page.split("<!-- aryl-cli-reference -->")[0]
    assert "aryl COMMAND --help" in text
    top = cli._parser()
    commands = next(
        a.choices for a in top._actions if isinstance(a, argparse._SubParsersAction)
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs.csv").write_text("")  # the file the live example names
    for name in commands:
        row = next(r for r in text.splitlines() if r.startswith(f"| `{name}` |"))
        example = row.rstrip(" |").rsplit("| ", 1)[1].strip("`")
        assert example.startswith(f"aryl {name}"), row
        top.parse_args(shlex.split(example)[1:])  # a command line that parses


def test_a_sweep_takes_tiresias_and_answers_las_with_it():
    from aryl.studies.sweep_runs import resolve

    assert resolve({"policy": "tiresias"})["policy"] == "tiresias"
    with pytest.raises(ValueError, match="did you mean 'tiresias'"):
        resolve({"policy": "las"})
