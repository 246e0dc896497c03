"""Frictions a new user met (issue 45, shared/audits/users5.md) and two silent reads of
the reliability audit (R5-13, R5-19): each on the kind of input that showed it,
written small to ``tmp_path``."""

import warnings
from collections import Counter

import pytest

from aryl.traces import TraceError, read
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
        "over,1000,1000,1,1000,,LS,SUCCEEDED,6,900,30",
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
