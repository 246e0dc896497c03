"""aryl.traces: the Pollux workloads and applications."""

import gzip
import io

import pytest

from aryl import traces
from aryl.traces import TraceError

HEADER = "name,time,application,num_replicas,batch_size\n"


def read(text, **kwargs):
    return traces.read_pollux_workload(io.StringIO(text), **kwargs)


def test_embedded_workloads_and_applications():
    for n in traces.POLLUX_WORKLOADS:
        frame = traces.pollux_workload(n)
        assert len(frame) == 160
        assert list(frame.columns) == list(traces.WORKLOAD_COLUMNS)
        assert set(frame.attrs["applications"]) <= set(traces.POLLUX_APPLICATIONS)
    apps = traces.pollux_applications()
    assert {
        a: (apps[a].init_batch_size, apps[a].max_batch_size, apps[a].max_epochs)
        for a in ("bert", "yolov3")
    } == {"bert": (12, 384, 2), "yolov3": (8, 512, 50)}
    assert apps["yolov3"].max_local_bsz == 8
    assert apps["cifar10"].min_local_bsz == 32
    frame = traces.pollux_workload(1)
    assert frame.loc[0].tolist() == ["cifar10-0", 107.0, "cifar10", 6, 2048]
    assert frame.head(2).attrs["applications"]["cifar10"] is apps["cifar10"]


def test_good_file_and_profiles_directory(tmp_path):
    app = tmp_path / "toy"
    app.mkdir()
    (app / "placements.csv").write_text(
        "placement,local_bsz,step_time,sync_time\n1,8,0.1,0.01\n1,16,0.2,0.01\n2,8,0.12,0.02\n"
    )
    (app / "scalability.csv").write_text(
        "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
    )
    (app / "validation-16.csv.gz").write_bytes(
        gzip.compress(
            b"progress,iteration,metric,grad_sqr,grad_var\n10,10,0.5,1.0,4.0\n20,20,0.6,1.0,3.0\n"
        )
    )
    (app / "validation-32.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n11,5,0.5,2.0,4.0\n22,10,0.6,1.0,3.0\n"
    )
    frame = read(HEADER + "j1,0,toy,2,32\nj2,5.5,toy,1,16\n", profiles=tmp_path)
    assert frame["num_replicas"].tolist() == [2, 1]
    toy = frame.attrs["applications"]["toy"]
    assert (toy.init_batch_size, toy.max_batch_size, toy.max_epochs) == (16, 32, 2)
    assert toy.core.epoch_progress(1) == 10.0
    assert toy.core.grad_stats(24, 0) == pytest.approx((1.5, 4.0))


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "name,time,application,num_replicas\nj,0,bert,1\n",
            "missing column(s) batch_size",
        ),
        (
            HEADER + "j1,0,bert,1,12\nj2,3,gpt,1,12\n",
            "row 2 (line 3), column 'application': unknown application",
        ),
        (
            HEADER + "j1,0,bert,1,12\nj2,x,bert,1,12\n",
            "row 2 (line 3), column 'time': not a number",
        ),
        (
            HEADER + "j1,0,bert,1.5,12\n",
            "row 1 (line 2), column 'num_replicas': not an integer",
        ),
        (HEADER + "j1,0,bert,0,12\n", "column 'num_replicas': zero replicas"),
        (HEADER + "j1,0,bert,1,-2\n", "column 'batch_size': negative"),
        (
            HEADER + "j1,0,bert,1,12\nj1,1,bert,1,12\n",
            "row 2 (line 3), column 'name': duplicate name",
        ),
        (HEADER + "j1,0,bert,1\n", "row 1 (line 2): 4 fields, the header has 5"),
        ("", "empty file"),
    ],
)
def test_each_broken_file_has_one_clear_error(text, message):
    with pytest.raises(
        TraceError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        read(text)


def test_bad_names():
    with pytest.raises(ValueError, match="no embedded Pollux workload 9"):
        traces.pollux_workload(9)
    with pytest.raises(ValueError, match="unknown Pollux application 'gpt'"):
        traces.pollux_application("gpt")
