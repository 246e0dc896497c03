"""The importers on what users really pass: real rows of the Alibaba GPU 2023 release
(``tests/py/data/alibaba2023``), the files of a release that cannot be replayed,
archives as downloaded, PAI tables with their ``.header`` line, jobs still running
when a trace ends, the ``user``/``vc`` columns, and inputs that must neither exhaust
memory nor escape as bare Python errors (each memory case runs in a subprocess under
an address-space cap)."""

import csv
import gzip
import io
import json
import subprocess
import sys
import tarfile
import textwrap
import warnings
import zipfile
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

import aryl
import aryl.traces.formats.philly
import aryl.traces.reading
from aryl import sim
from aryl.traces import TraceError, read, read_jobs, to_jobs
from aryl.traces.formats.common import STILL_RUNNING

DATA = Path(__file__).parent / "data" / "alibaba2023"
SPEC33 = DATA / "openb_pod_list_gpuspec33.csv"
DEFAULT = DATA / "openb_pod_list_default.csv"


def quiet(function, *args, **kwargs):
    """function(*args, **kwargs) with its warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def pods(path):
    """The release's rows as dicts (read with the csv module, not with aryl)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---- censoring: jobs still running when the trace ends ---------------------------------


def test_alibaba_2023_pods_running_at_the_traces_end_are_left_out_and_counted():
    rows = pods(SPEC33)
    end = max(int(r["deletion_time"]) for r in rows if r["deletion_time"])
    running = {
        r["name"]
        for r in rows
        if r["pod_phase"] == "Running"
        and r["deletion_time"] == str(end)
        and r["num_gpu"] != "0"
    }
    assert len(running) >= 3  # the excerpt holds some, as the whole file does
    frame = quiet(read, SPEC33, format="alibaba-2023")
    assert frame.attrs["skip_reasons"][STILL_RUNNING] == len(running)
    assert not running & set(frame["job_id"])
    # a pod Running at an earlier deletion_time was deleted then: it is a job
    earlier = {
        r["name"]
        for r in rows
        if r["pod_phase"] == "Running"
        and r["deletion_time"] != str(end)
        and r["num_gpu"] != "0"
        and r["scheduled_time"]
    }
    assert earlier and earlier <= set(frame["job_id"])


def helios_log(tmp_path, *rows):
    """A Helios cluster_log.csv of ``rows`` (the columns the tests need)."""
    log = tmp_path / "cluster_log.csv"
    header = "job_id,user,vc,gpu_num,state,submit_time,duration"
    log.write_text("\n".join([header, *rows]) + "\n")
    return log


def test_pai_and_helios_jobs_running_when_the_log_ends_are_left_out(tmp_path):
    (tmp_path / "pai_task_table.csv").write_text(
        "a,t,1,Terminated,10,20,100,1,100,V100\nb,t,1,Running,10,30,100,1,100,V100\n"
    )
    jobs = tmp_path / "pai_job_table.csv"
    jobs.write_text("a,i,u,Terminated,5,20\nb,i,u,Running,5,\n")
    frame = quiet(read, jobs, format="alibaba-pai")
    assert frame["job_id"].tolist() == ["a"]
    assert frame.attrs["skip_reasons"] == Counter({STILL_RUNNING: 1})
    log = helios_log(
        tmp_path,
        "1,u,v,1,COMPLETED,2020-06-09 18:41:01,10",
        "2,u,v,1,RUNNING,2020-06-09 18:41:02,10",
    )
    frame = quiet(read, log, format="helios")
    assert frame["job_id"].tolist() == ["1"]
    assert frame.attrs["skip_reasons"] == Counter({STILL_RUNNING: 1})


def philly_log(tmp_path, *jobs):
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(list(jobs)))
    return path


def philly_job(jobid, submitted, start, end):
    return {
        "status": "Pass",
        "vc": "v",
        "jobid": jobid,
        "user": "u",
        "submitted_time": submitted,
        "attempts": [
            {
                "start_time": start,
                "end_time": end,
                "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
            }
        ],
    }


def test_philly_jobs_without_a_submission_or_across_a_clock_change_are_left_out(
    tmp_path,
):
    t = "2017-10-29 02:{:02d}:00"
    path = philly_log(
        tmp_path,
        philly_job("keep", t.format(0), t.format(1), t.format(9)),
        philly_job("unsubmitted", "None", t.format(1), t.format(9)),
        # local times: the clock went back an hour between the start and the end
        philly_job("dst", t.format(0), t.format(50), t.format(10)),
    )
    frame = quiet(read, path, format="philly")
    assert frame["job_id"].tolist() == ["keep"]
    assert frame.attrs["skip_reasons"] == Counter(
        {
            "no submit time recorded": 1,
            "ends before it starts (local times across a daylight-saving change)": 1,
        }
    )


# ---- every file of the Alibaba 2023 release: read, or refused saying why ---------------


@pytest.mark.parametrize(
    "name, why",
    [
        ("openb_pod_list_multigpu20.csv", "a pod list without times"),
        ("openb_node_list_gpu_node.csv", "a node list"),
    ],
)
def test_alibaba_2023_files_that_cannot_be_replayed_say_why(name, why):
    with pytest.raises(TraceError, match=why) as info:
        read(DATA / name, format="alibaba-2023")
    assert str(info.value).startswith(str(DATA / name))


def test_alibaba_2023_gpu_spec_keeps_one_dtype_whatever_the_file_holds():
    default = quiet(read, DEFAULT, format="alibaba-2023")  # every gpu_spec empty
    spec33 = quiet(read, SPEC33, format="alibaba-2023")
    assert default["gpu_spec"].dtype == spec33["gpu_spec"].dtype
    assert set(default["gpu_spec"]) == {""}
    assert {"T4", "G2", "V100M16|V100M32"} <= set(spec33["gpu_spec"])


def test_alibaba_2023_gpu_types_aryl_has_are_mapped_on_real_rows():
    frame = quiet(read, SPEC33, format="alibaba-2023")
    by_spec = frame.groupby("gpu_spec")["gpu_type"].agg(set).to_dict()
    assert by_spec["T4"] == {"T4"}
    assert by_spec["V100M16|V100M32"] == {"V100"}
    for other in ("P100", "G2", "P100|V100M16|V100M32"):
        assert by_spec[other] == {"unknown"}, other
    # empty: the release's "any type will do", so any type it is, not a draw
    assert by_spec[""] == {"any"}
    jobs = to_jobs(frame, any_type_share=0.0)
    anywhere = frame["gpu_type"].eq("any").to_numpy()
    assert all(j.gpu_type is None for j, a in zip(jobs, anywhere) if a)
    assert all(j.gpu_type is not None for j, a in zip(jobs, anywhere) if not a)


# ---- what users pass by mistake ---------------------------------------------------------


def test_a_known_release_read_without_its_format_suggests_it(tmp_path):
    with pytest.raises(TraceError, match="--trace-format alibaba-2023"):
        read_jobs(SPEC33)
    log = tmp_path / "cluster_job_log"
    log.write_text('[{"jobid": "a"}]')
    with pytest.raises(TraceError, match="--trace-format philly"):
        read_jobs(log)


def archives(tmp_path):
    """The same pod list as a zip, a .tar.gz, a .tar and an xz file."""
    data = SPEC33.read_bytes()
    out = {}
    zipped = tmp_path / "data.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("openb_pod_list_gpuspec33.csv", data)
    out[zipped] = "zip archive"
    for mode, suffix in (("w:gz", ".tar.gz"), ("w", ".tar")):
        path = tmp_path / f"trace-data{suffix}"
        with tarfile.open(path, mode) as tar:
            info = tarfile.TarInfo("openb_pod_list_gpuspec33.csv")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        out[path] = "tar archive"
    return out


@pytest.mark.parametrize("format", ["aryl", "alibaba-2023", "philly", "helios"])
def test_an_archive_passed_as_downloaded_says_extract_it_first(tmp_path, format):
    for path, kind in archives(tmp_path).items():
        with pytest.raises(TraceError, match=f"a {kind}.*extract it first"):
            read(path, format=format)


def pai_tables(tmp_path, header=False):
    jobs = "a,i,u1,Terminated,5,20\nb,i,u2,Terminated,6,30\n"
    tasks = (
        "a,t,1,Terminated,10,20,100,1,100,V100\nb,t,2,Terminated,10,30,100,1,50,T4\n"
    )
    if header:
        jobs = "job_name,inst_id,user,status,start_time,end_time\n" + jobs
        tasks = (
            "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
            "plan_mem,plan_gpu,gpu_type\n" + tasks
        )
    folder = tmp_path / ("with" if header else "without")
    folder.mkdir()
    (folder / "pai_task_table.csv").write_text(tasks)
    (folder / "pai_job_table.csv").write_text(jobs)
    return folder / "pai_job_table.csv"


def test_pai_tables_with_the_header_line_read_as_without(tmp_path):
    plain = read(pai_tables(tmp_path), format="alibaba-pai")
    headed = read(pai_tables(tmp_path, header=True), format="alibaba-pai")
    assert headed.drop(columns=[]).equals(plain)
    assert plain["gpu_type"].tolist() == ["V100", "T4"]


def test_pai_messages_name_what_is_missing(tmp_path):
    path = pai_tables(tmp_path)
    with open(path, "rb") as f, pytest.raises(TraceError, match="read_alibaba_pai"):
        read(f, format="alibaba-pai")
    with pytest.raises(TypeError, match="a path or a file object, got None"):
        read(None, format="alibaba-pai")
    with pytest.raises(FileNotFoundError, match="pai_job_table.csv"):
        read(tmp_path / "nowhere" / "pai_job_table.csv", format="alibaba-pai")
    empty = tmp_path / "empty" / "pai_job_table.csv"
    empty.parent.mkdir()
    empty.write_text("")
    (empty.parent / "pai_task_table.csv").write_text("a,t,1,T,10,20,100,1,100,V100\n")
    with pytest.raises(TraceError, match="empty file, no rows"):
        read(empty, format="alibaba-pai")


def test_a_gzip_file_object_is_named_by_its_file_or_as_a_stream(tmp_path):
    packed = tmp_path / "jobs.csv.gz"
    packed.write_bytes(gzip.compress(b"job_id,submit_time_s,num_gpus\n"))
    with open(packed, "rb") as raw, pytest.raises(TraceError) as info:
        read_jobs(gzip.GzipFile(fileobj=raw))
    assert str(info.value).startswith(f"{packed}: ")
    in_memory = gzip.GzipFile(fileobj=io.BytesIO(packed.read_bytes()))  # name ""
    with pytest.raises(TraceError, match="^<stream>: line 1"):
        read_jobs(in_memory)


def test_a_directory_is_refused_by_name(tmp_path):
    for format in ("aryl", "philly", "helios"):
        with pytest.raises(TraceError, match="a directory, not a trace file"):
            read(tmp_path, format=format)


# ---- values the importers must refuse, naming the file and row --------------------------


def openb_file(tmp_path, row):
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(DEFAULT.read_text().splitlines(True)[0] + row + "\n")
    return path


@pytest.mark.parametrize(
    "column, row",
    [
        ("deletion_time", "p,1,1,1,1000,,LS,Failed,0,1e300,10"),
        ("scheduled_time", "p,1,1,1,1000,,LS,Failed,0,1e300,1e299"),
    ],
)
def test_alibaba_2023_times_beyond_the_models_limit_are_refused(tmp_path, column, row):
    with pytest.raises(TraceError, match=f"row 1 .*'{column}': above 1e\\+15"):
        read(openb_file(tmp_path, row), format="alibaba-2023")


def test_pai_fractional_instance_count_is_refused(tmp_path):
    path = pai_tables(tmp_path)
    tasks = path.with_name("pai_task_table.csv")
    tasks.write_text("a,t,1.5,Terminated,10,20,100,1,100,V100\n")
    with pytest.raises(TraceError, match="'inst_num': not an integer"):
        read(path, format="alibaba-pai")


@pytest.mark.parametrize(
    "format", ["aryl", "philly", "alibaba-pai", "alibaba-2023", "helios"]
)
def test_drop_invalid_must_be_a_bool(tmp_path, format):
    with pytest.raises(ValueError, match="drop_invalid must be True or False"):
        read(pai_tables(tmp_path), format=format, drop_invalid="yes")


@pytest.mark.parametrize(
    "job, key",
    [
        ({"status": ["Pass"]}, "status"),
        ({"vc": {"a": 1}}, "vc"),
        ({"user": [1]}, "user"),
    ],
)
def test_philly_fields_of_the_wrong_type_name_their_key(tmp_path, job, key):
    t = "2017-10-01 00:00:0{}"
    path = philly_log(
        tmp_path, {**philly_job("a", t.format(0), t.format(1), t.format(2)), **job}
    )
    with pytest.raises(
        TraceError, match=f"row 1 \\(line 1\\), key '{key}': not a string"
    ):
        read(path, format="philly")


def test_philly_a_comma_before_the_end_of_the_array_is_refused(tmp_path):
    t = "2017-10-01 00:00:0{}"
    text = json.dumps([philly_job("a", t.format(0), t.format(1), t.format(2))])
    path = tmp_path / "cluster_job_log"
    path.write_text(text[:-1] + ",\n]")
    with pytest.raises(TraceError, match="line 2: a ',' before ']' after row 1"):
        read(path, format="philly")


def test_helios_reads_year_one_as_philly_does(tmp_path):
    # pandas' nanosecond timestamps end at 1677: the subtraction overflowed
    log = helios_log(
        tmp_path,
        "1,u,v,1,COMPLETED,2020-06-09 18:41:01,10",
        "2,u,v,1,COMPLETED,0001-01-01 00:00:00,10",
    )
    frame = quiet(read, log, format="helios")
    assert frame["job_id"].tolist() == ["2", "1"]
    since = datetime(2020, 6, 9, 18, 41, 1) - datetime(1, 1, 1)
    assert frame["submit_time_s"].iloc[1] == since.total_seconds()


# ---- user and vc: kept through import into Result.jobs ---------------------------------


def test_user_and_vc_go_from_the_trace_to_the_result(tmp_path):
    log = helios_log(
        tmp_path,
        "1,101,vcA,1,COMPLETED,2020-06-09 18:41:01,600",
        "2,102,vcB,8,FAILED,2020-06-09 18:41:02,300",
        "3,,vcA,2,COMPLETED,2020-06-09 18:41:03,60",
    )
    frame = read(log, format="helios")
    assert frame["user"].tolist() == ["101", "102", ""]  # text: ids are names
    jobs = to_jobs(frame)
    assert [(j.user, j.vc) for j in jobs] == [
        ("101", "vcA"),
        ("102", "vcB"),
        (None, "vcA"),
    ]
    cluster = sim.Cluster(training_servers=2, inference_servers=0)
    result = sim.simulate(jobs, cluster)
    assert result.jobs["user"].tolist() == ["101", "102", None]
    assert result.jobs["vc"].tolist() == ["vcA", "vcB", "vcA"]


def test_jobs_without_user_or_vc_have_none_and_hash_as_before():
    job = aryl.Job("a", 1, 1, 1, 10.0)
    assert (job.user, job.vc) == (None, None)
    frame = read_jobs(
        io.StringIO(
            "job_id,submit_time_s,num_gpus,duration_s,gpu_type\na,0,1,10,V100\n"
        )
    )
    jobs = to_jobs(frame)
    result = sim.simulate(jobs, sim.Cluster(training_servers=1, inference_servers=0))
    assert result.jobs["user"].tolist() == [None] and result.jobs["vc"].tolist() == [
        None
    ]
    named = to_jobs(frame.assign(user="u"))
    assert named[0].user == "u"
    assert named.fingerprint_bytes() != jobs.fingerprint_bytes()
    assert jobs.fingerprint_bytes() == to_jobs(frame).fingerprint_bytes()


def test_a_job_user_must_be_text():
    with pytest.raises(ValueError, match="job 'a': user must be a str or None"):
        aryl.Job("a", 1, 1, 1, 10.0, user=7)


# ---- bounded memory and the first bad row -----------------------------------------------

#: Run in a subprocess: cap the address space at what the interpreter holds plus
#: ``HEADROOM``, then run the case; prints "ok" or the error's type and message.
CAPPED = textwrap.dedent(
    """
    import resource, sys, warnings
    import aryl.traces as traces
    from aryl.traces import read
    def vm():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    cap = vm() + {headroom}
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    warnings.simplefilter("ignore")
    try:
        read(sys.argv[1], format=sys.argv[2])
        print("ok")
    except MemoryError:
        print("MemoryError")
    except Exception as exc:
        print(type(exc).__name__, str(exc)[:300])
    """
)
HEADROOM = 300 << 20


def capped(path, format="aryl"):
    """What reading ``path`` gives under the cap: "ok" or "<error type> <message>"."""
    script = CAPPED.format(headroom=HEADROOM)
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), format],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return (done.stdout or done.stderr).strip()


needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="caps memory with RLIMIT_AS"
)


def gzip_lines(path, head, filler, repeat, tail=b""):
    """``head``, then ``filler`` ``repeat`` times, then ``tail``, gzip-compressed as a
    stream (the file stays small; its text would not fit under the cap)."""
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(head)
        block = filler * 65536
        for _ in range(repeat // 65536):
            f.write(block)
        f.write(tail)
    return path


@needs_linux
def test_trailing_blank_lines_take_no_memory(tmp_path):
    # 2.6 M blank lines: ~170 B each when buffered would be ~440 MB
    path = gzip_lines(
        tmp_path / "jobs.csv.gz",
        b"job_id,submit_time_s,num_gpus,duration_s,gpu_type\na,0,1,10,V100\n",
        b"\n",
        5 << 19,
    )
    assert capped(path) == "ok"


@needs_linux
def test_a_huge_line_is_refused_before_it_is_held(tmp_path):
    path = gzip_lines(tmp_path / "jobs.csv.gz", b"job_id,", b"x", 400 << 20, b"\n")
    said = capped(path)
    assert said.startswith("TraceError") and "line 1: longer than" in said, said


@needs_linux
def test_philly_is_read_a_block_at_a_time(tmp_path):
    job = json.dumps(
        philly_job(
            "a", "2017-10-01 00:00:00", "2017-10-01 00:00:01", "2017-10-01 00:01:00"
        )
    ).encode()
    path = gzip_lines(tmp_path / "log.gz", b"[" + job, b" ", 400 << 20, b"]")
    assert capped(path, "philly") == "ok"


def test_deeply_nested_philly_json_is_a_named_error(tmp_path):
    path = tmp_path / "cluster_job_log"
    path.write_text("[" + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(TraceError, match="row 1 \\(line 1\\): nested too deeply"):
        read(path, format="philly")


class Counted(io.RawIOBase):
    """A binary stream that counts the bytes read from it."""

    def __init__(self, data):
        self.data, self.read_bytes = io.BytesIO(data), 0

    def readable(self):
        return True

    def readinto(self, buffer):
        n = self.data.readinto(buffer)
        self.read_bytes += n
        return n


@pytest.mark.parametrize("format", ["aryl", "helios", "alibaba-2023", "philly"])
def test_a_repeated_id_at_row_2_stops_the_reader_at_once(format, monkeypatch):
    # chunks of 1,000 rows (not 65,536) keep the file small
    monkeypatch.setattr(aryl.traces.reading, "CHUNK_ROWS", 1000)
    monkeypatch.setattr(aryl.traces.formats.philly, "CHUNK_ROWS", 1000, raising=False)
    rows = 20_000
    if format == "philly":
        t = "2017-10-01 00:00:0{}"
        jobs = [
            philly_job(f"j{i}", t.format(0), t.format(1), t.format(2))
            for i in range(rows)
        ]
        jobs[1]["jobid"] = "j0"
        data = json.dumps(jobs).encode()
    else:
        header, row = {
            "aryl": (
                "job_id,submit_time_s,num_gpus,duration_s,gpu_type",
                "j{},0,1,10,V100",
            ),
            "helios": (
                "job_id,gpu_num,submit_time,duration",
                "j{},1,2020-06-09 18:41:01,10",
            ),
            "alibaba-2023": (
                DEFAULT.read_text().splitlines()[0],
                "j{},1,1,1,1000,,LS,Failed,0,20,10",
            ),
        }[format]
        lines = [header, row.format(0), row.format(0)] + [
            row.format(i) for i in range(1, rows)
        ]
        data = ("\n".join(lines) + "\n").encode()
    source = Counted(data)
    with pytest.raises(TraceError, match="row 2 .*duplicate"):
        read(io.BufferedReader(source), format=format)
    assert source.read_bytes < len(data) / 4  # stopped in its first chunk
