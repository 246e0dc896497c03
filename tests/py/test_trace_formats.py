"""aryl.traces.read: the public GPU cluster traces in their published formats.

Every file here is written in the format its dataset's README gives (Philly's
``cluster_job_log`` JSON, Alibaba PAI 2020's headerless ``pai_job_table`` /
``pai_task_table``, Alibaba GPU 2023's ``openb_pod_list``, Helios's ``cluster_log``);
the example rows are the READMEs' own where they give some. One test per mapping rule,
one per kind of bad record, and one ``aryl simulate --trace-format`` per format.
"""

import gzip
import io
import json
import re
import warnings
from collections import Counter

import pandas as pd
import pytest

from aryl.cli import main
from aryl.traces import (
    JOB_COLUMNS,
    TRACE_FORMATS,
    TraceError,
    read,
    read_alibaba_pai,
    read_jobs,
    to_jobs,
)


def quiet(function, *args, **kwargs):
    """function(*args, **kwargs) with its warnings recorded: (result, messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [str(w.message) for w in caught]


def fails(match, *args, **kwargs):
    """read(*args, **kwargs) raises a TraceError matching ``match``; its message."""
    with pytest.raises(TraceError, match=match) as info:
        quiet(read, *args, **kwargs)
    return str(info.value)


# ---- Microsoft Philly: cluster_job_log (JSON) -----------------------------------------

#: The example entry of msr-fiddle/philly-traces' README, verbatim.
PHILLY_EXAMPLE = {
    "status": "Pass",
    "vc": "ee9e8c",
    "jobid": "application_1506638472019_14199",
    "attempts": [
        {
            "start_time": "2017-10-07 01:12:09",
            "end_time": "2017-10-07 01:13:23",
            "detail": [{"ip": "m47", "gpus": [f"gpu{i}" for i in range(8)]}],
        },
        {
            "start_time": "2017-10-07 01:13:30",
            "end_time": "2017-10-09 06:53:12",
            "detail": [{"ip": "m412", "gpus": [f"gpu{i}" for i in range(8)]}],
        },
    ],
    "submitted_time": "2017-10-07 01:11:39",
    "user": "ce2f4c",
}


def philly_job(jobid, submitted, attempts, status="Killed"):
    """A job of the published schema; attempts as (start, end, [gpus per server])."""
    return {
        "status": status,
        "vc": "6214e9",
        "jobid": jobid,
        "attempts": [
            {
                "start_time": start,
                "end_time": end,
                "detail": [
                    {"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]}
                    for i, n in enumerate(servers)
                ],
            }
            for start, end, servers in attempts
        ],
        "submitted_time": submitted,
        "user": "u1",
    }


GOOD_RUN = [("2017-10-01 00:00:01", "2017-10-01 00:00:05", [2])]
T0 = "2017-10-01 00:00:00"


@pytest.fixture
def philly(tmp_path):
    """philly(jobs, text=None) -> path of a cluster_job_log holding the jobs (indented
    as json.dump(indent=4) writes them, or ``text`` as given)."""

    def write(jobs=(), text=None):
        path = tmp_path / "cluster_job_log"
        path.write_text(json.dumps(list(jobs), indent=4) if text is None else text)
        return path

    return write


def test_philly_readme_example_maps_onto_one_job(philly):
    frame = read(philly([PHILLY_EXAMPLE]), format="philly")
    assert list(frame.columns[:5]) == list(JOB_COLUMNS)
    job = frame.iloc[0]
    assert job["job_id"] == "application_1506638472019_14199"
    assert job["num_gpus"] == 8  # the first attempt's gpus
    # first attempt's start (10-07 01:12:09) to the last attempt's end (10-09 06:53:12)
    assert job["duration_s"] == 2 * 86400 + (6 * 3600 + 53 * 60 + 12) - (
        1 * 3600 + 12 * 60 + 9
    )
    assert job["submit_time_s"] == 0.0
    assert job["gpu_type"] == "unknown"
    assert (job["status"], job["vc"], job["user"], job["attempts"]) == (
        "Pass",
        "ee9e8c",
        "ce2f4c",
        2,
    )
    assert job["submitted_time"] == "2017-10-07 01:11:39"
    assert frame.attrs["format"] == "philly" and frame.attrs["skipped"] == 0


def test_philly_gpus_add_up_over_the_first_attempts_servers(philly):
    job = philly_job(
        "a",
        "2017-10-01 00:00:00",
        [
            ("2017-10-01 00:00:10", "2017-10-01 01:00:10", [8, 8]),
            ("2017-10-01 02:00:00", "2017-10-01 03:00:00", [4]),
        ],
    )
    assert read(philly([job]), format="philly")["num_gpus"].tolist() == [16]


def test_philly_jobs_are_sorted_and_time_starts_at_the_first_submission(philly):
    run = [("2017-10-02 00:00:00", "2017-10-02 00:10:00", [1])]
    later = philly_job("later", "2017-10-01 12:00:30", run)
    first = philly_job("first", "2017-10-01 12:00:00", run)
    frame = read(philly([later, first]), format="philly")
    assert frame["job_id"].tolist() == ["first", "later"]
    assert frame["submit_time_s"].tolist() == [0.0, 30.0]


@pytest.mark.parametrize(
    "attempts, reason",
    [
        ([], "never started"),
        ([(None, "2017-10-01 01:00:00", [1])], "no start time recorded"),
        ([("None", "2017-10-01 01:00:00", [1])], "no start time recorded"),
        ([("2017-10-01 00:10:00", None, [1])], "still running at the end of the trace"),
        ([("2017-10-01 00:10:00", "2017-10-01 01:00:00", [])], "no GPUs"),
        ([("2017-10-01 00:10:00", "2017-10-01 00:10:00", [1])], "ran 0 s"),
    ],
)
def test_philly_jobs_aryl_cannot_replay_are_left_out_and_counted(
    philly, attempts, reason
):
    keep = philly_job("keep", T0, GOOD_RUN)
    path = philly([keep, philly_job("out", T0, attempts)])
    frame, said = quiet(read, path, format="philly")
    assert frame["job_id"].tolist() == ["keep"]
    assert frame.attrs["skipped"] == 1
    assert frame.attrs["skip_reasons"] == Counter({reason: 1})
    assert said == [
        f"{path}: left out 1 record(s) of 2 that are not GPU jobs aryl can replay: "
        f"{{'{reason}': 1}}"
    ]


def without(job, key):
    return {k: v for k, v in job.items() if k != key}


@pytest.mark.parametrize(
    "job, problem",
    [
        ("not a job", "key 'row': not a JSON object (got 'str')"),
        (without(philly_job("x", T0, GOOD_RUN), "jobid"), "key 'jobid': missing"),
        (philly_job("", T0, GOOD_RUN), "key 'jobid': not a non-empty string (got '')"),
        (
            philly_job("x", "2017-10-01", GOOD_RUN),
            "key 'submitted_time': not a time (YYYY-MM-DD HH:MM:SS) (got '2017-10-01')",
        ),
        ({**philly_job("x", T0, []), "attempts": {}}, "key 'attempts': not a list"),
        (
            {**philly_job("x", T0, []), "attempts": [3]},
            "key 'attempts[0]': not a JSON object (got 'int')",
        ),
        (
            philly_job("x", T0, [("2017-10-01 00:00:01", "2017-13-01 00:00:05", [1])]),
            "key 'attempts[0].end_time': not a time (YYYY-MM-DD HH:MM:SS)",
        ),
        (
            philly_job(
                "x",
                T0,
                [*GOOD_RUN, ("2017-10-01 00:00:09", "2017-09-30 00:00:05", [1])],
            ),
            "key 'attempts[1].end_time': before attempts[0].start_time",
        ),
        (
            {**philly_job("x", T0, GOOD_RUN), "attempts": [{"detail": [{"ip": "m1"}]}]},
            "key 'attempts[0].detail[0].gpus': not a list",
        ),
        (philly_job("first", T0, GOOD_RUN), "column 'jobid': duplicate jobid 'first'"),
    ],
)
def test_philly_bad_jobs_name_the_file_row_line_and_key(philly, job, problem):
    first = philly_job("first", T0, GOOD_RUN)
    # one job a line: the second job (row 2) is on line 3
    path = philly(text=f"[\n{json.dumps(first)},\n{json.dumps(job)}\n]\n")
    message = fails(
        re.escape(f"{path}: row 2 (line 3), {problem}"), path, format="philly"
    )
    assert message.startswith(str(path))
    frame, _ = quiet(read, path, format="philly", drop_invalid=True)
    assert frame["job_id"].tolist() == ["first"] and frame.attrs["dropped"] == 1


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"jobid": "a"}', "not a JSON array of jobs"),
        ("[\n", "line 2 column 1: not valid JSON"),
        ('[\n  {"jobid": "a",\n   "x": }\n]', "line 3 column 9: not valid JSON"),
        (
            f"[{json.dumps(PHILLY_EXAMPLE)}\n {json.dumps(PHILLY_EXAMPLE)}]",
            "line 2: expected ',' or ']' after row 1",
        ),
        ("[]", "an empty JSON array, no jobs"),
        ("[] []", "text after the end of the JSON array"),
    ],
)
def test_philly_text_that_is_not_a_json_array_of_jobs_fails(philly, text, match):
    fails(match, philly(text=text), format="philly")


def test_philly_gzip_file_reads_the_same(tmp_path, philly):
    plain = philly([PHILLY_EXAMPLE])
    packed = tmp_path / "cluster_job_log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    pd.testing.assert_frame_equal(
        read(packed, format="philly"), read(plain, format="philly")
    )


# ---- Alibaba PAI 2020: pai_job_table.csv + pai_task_table.csv (no header lines) ----------

#: pai_job_table rows: job_name,inst_id,user,status,start_time,end_time (start = submission)
PAI_JOBS = [
    "4b3f04b66a525d2df903eb16,8cb3bec23d14,58540f191766,Terminated,4550879.0,4551416.0",
    "j2,i2,u2,Failed,4550800.0,4560000.0",
]
#: pai_task_table rows: job_name,task_name,inst_num,status,start_time,end_time,
#: plan_cpu,plan_mem,plan_gpu,gpu_type
PAI_TASKS = [
    "4b3f04b66a525d2df903eb16,ps,1.0,Terminated,4550900.0,4551400.0,600.0,29.296875,,MISC",
    "4b3f04b66a525d2df903eb16,worker,3.0,Terminated,4550910.0,4551410.0,400.0,20.0,50.0,V100M32",
    "j2,tensorflow,1.0,Failed,4550850.0,4559000.0,600.0,29.296875,800.0,V100",
]


@pytest.fixture
def pai(tmp_path):
    """pai(jobs, tasks) -> path of pai_job_table.csv, pai_task_table.csv beside it."""

    def write(jobs=PAI_JOBS, tasks=PAI_TASKS):
        (tmp_path / "pai_task_table.csv").write_text("".join(t + "\n" for t in tasks))
        path = tmp_path / "pai_job_table.csv"
        path.write_text("".join(j + "\n" for j in jobs))
        return path

    return write


def test_pai_jobs_map_from_both_tables(pai):
    frame = read(pai(), format="alibaba-pai")
    assert frame["job_id"].tolist() == [
        "j2",
        "4b3f04b66a525d2df903eb16",
    ]  # by submission
    assert frame["submit_time_s"].tolist() == [0.0, 79.0]  # job start_time, re-based
    # 3 workers x 50% of a GPU = 1.5 GPUs -> 2; the ps task (plan_gpu empty) has none
    assert frame["num_gpus"].tolist() == [8, 2]
    assert frame["trace_gpus"].tolist() == [8.0, 1.5]
    # the first task's launch to the last task's end
    assert frame["duration_s"].tolist() == [4559000 - 4550850, 4551410 - 4550900]
    assert frame["tasks"].tolist() == [1, 2]
    assert (frame["status"].tolist(), frame["user"].tolist()) == (
        ["Failed", "Terminated"],
        ["u2", "58540f191766"],
    )
    assert frame["start_time"].tolist() == [4550800.0, 4550879.0]  # as released


@pytest.mark.parametrize(
    "types, aryl, kept",
    [
        (["V100M32"], "V100", "V100M32"),
        (["V100", "V100M32"], "V100", "V100+V100M32"),
        (["T4"], "T4", "T4"),
        (["T4", "V100"], "unknown", "T4+V100"),
        (["V100", "P100"], "unknown", "P100+V100"),
        (["MISC"], "unknown", "MISC"),
        ([""], "unknown", "unrecorded"),
    ],
)
def test_pai_gpu_type_is_aryls_when_every_gpu_task_ran_on_that_type(
    pai, types, aryl, kept
):
    tasks = [f"j2,t{i},1,Terminated,10,20,100,1,100,{t}" for i, t in enumerate(types)]
    frame = read(pai(PAI_JOBS[1:], tasks), format="alibaba-pai")
    assert frame["gpu_type"].tolist() == [aryl]
    assert frame["trace_gpu_type"].tolist() == [kept]


@pytest.mark.parametrize(
    "tasks, reason",
    [
        ([], "no task in the task table"),
        (["out,t,1,Terminated,10,20,600,1,,"], "no GPUs"),
        (["out,t,1,Waiting,0,0,600,1,100,V100"], "never started"),
        (
            ["out,t,1,Running,10,0,600,1,100,V100"],
            "still running at the end of the trace",
        ),
        (
            ["out,t,1,Running,10,,600,1,100,V100"],
            "still running at the end of the trace",
        ),
        (["out,t,1,Terminated,10,10,600,1,100,V100"], "ran 0 s"),
    ],
)
def test_pai_jobs_aryl_cannot_replay_are_left_out_and_counted(pai, tasks, reason):
    jobs = ["keep,i,u,Terminated,5,30", "out,i,u,Terminated,5,30"]
    frame, said = quiet(
        read,
        pai(jobs, ["keep,t,1,Terminated,10,20,600,1,100,T4", *tasks]),
        format="alibaba-pai",
    )
    assert frame["job_id"].tolist() == ["keep"]
    assert frame.attrs["skip_reasons"] == Counter({reason: 1})
    assert len(said) == 1 and f"'{reason}': 1" in said[0]


def test_pai_task_rows_of_no_job_are_counted(pai):
    tasks = [
        *PAI_TASKS,
        "ghost,t,1,Terminated,1,2,600,1,100,T4",
        "ghost,u,1,Terminated,1,2,0,1,,",
    ]
    frame, _ = quiet(read, pai(tasks=tasks), format="alibaba-pai")
    assert len(frame) == 2
    assert frame.attrs["skip_reasons"] == Counter(
        {"task rows of no job in the job table": 2}
    )


@pytest.mark.parametrize(
    "jobs, tasks, where",
    [
        (
            [PAI_JOBS[0], "j2,i2,u2,Failed,soon,4560000.0"],
            PAI_TASKS,
            "pai_job_table.csv: row 2 (line 2), column 'start_time': not a number (got 'soon')",
        ),
        (
            [PAI_JOBS[0], "j2,i2,u2,Failed,,4560000.0"],
            PAI_TASKS,
            "pai_job_table.csv: row 2 (line 2), column 'start_time': empty value",
        ),
        (
            [PAI_JOBS[0], ",i2,u2,Failed,4550800.0,4560000.0"],
            PAI_TASKS,
            "pai_job_table.csv: row 2 (line 2), column 'job_name': empty value",
        ),
        (
            [PAI_JOBS[0], "j2,i2,u2,Failed,4550800.0"],
            PAI_TASKS,
            "pai_job_table.csv: row 2 (line 2): 5 fields, the header has 6",
        ),
        (
            [PAI_JOBS[0], PAI_JOBS[0]],
            PAI_TASKS,
            "pai_job_table.csv: row 2 (line 2), column 'job_name': duplicate job_name",
        ),
        (
            PAI_JOBS,
            [
                *PAI_TASKS[:2],
                "j2,tensorflow,1.0,Failed,4550850.0,4559000.0,600.0,29.3,-800.0,V100",
            ],
            "pai_task_table.csv: row 3 (line 3), column 'plan_gpu': negative (got '-800.0')",
        ),
        (
            PAI_JOBS,
            [
                *PAI_TASKS[:2],
                "j2,tensorflow,one,Failed,4550850.0,4559000.0,600.0,29.3,800.0,V100",
            ],
            "pai_task_table.csv: row 3 (line 3), column 'inst_num': not a number (got 'one')",
        ),
        (
            PAI_JOBS,
            [
                *PAI_TASKS[:2],
                "j2,tensorflow,1,Failed,4550850.0,4550000.0,600.0,29.3,800.0,V100",
            ],
            "pai_task_table.csv: row 3 (line 3), column 'end_time': before start_time",
        ),
        (
            PAI_JOBS,
            [
                *PAI_TASKS[:2],
                "j2,tensorflow,1100,Failed,4550850,4559000,600,29.3,100000,V100",
            ],
            "pai_job_table.csv: row 2 (line 2), column 'job_name': tasks ask for above "
            "1.04858e+06 GPUs",
        ),
    ],
)
def test_pai_bad_rows_name_the_file_row_line_and_column(pai, jobs, tasks, where):
    path = pai(jobs, tasks)
    fails(re.escape(where), path, format="alibaba-pai")
    frame, _ = quiet(read, path, format="alibaba-pai", drop_invalid=True)
    assert frame["job_id"].tolist() == ["4b3f04b66a525d2df903eb16"]
    assert frame.attrs["dropped"] >= 1


def test_pai_a_job_with_an_invalid_task_row_is_dropped_with_it(pai):
    tasks = [*PAI_TASKS, "j2,evaluator,1,Failed,4550850,4559000,600,29.3,x,V100"]
    frame, _ = quiet(read, pai(tasks=tasks), format="alibaba-pai", drop_invalid=True)
    assert frame["job_id"].tolist() == ["4b3f04b66a525d2df903eb16"]
    assert frame.attrs["drop_reasons"] == Counter(
        {
            "task plan_gpu: not a number": 1,
            "job_name: a task row of the job is invalid": 1,
        }
    )


def test_pai_tasks_of_a_dropped_invalid_job_are_not_counted_as_of_no_job(pai):
    jobs = [PAI_JOBS[0], "j2,i2,u2,Failed,soon,4560000.0"]
    frame, _ = quiet(read, pai(jobs), format="alibaba-pai", drop_invalid=True)
    assert frame.attrs["drop_reasons"] == Counter({"start_time: not a number": 1})
    assert frame.attrs["skipped"] == 0


def test_pai_gzip_tables_are_found_and_read_the_same(pai, tmp_path):
    path = pai()
    packed = tmp_path / "packed"
    packed.mkdir()
    for name in ("pai_job_table.csv", "pai_task_table.csv"):
        data = gzip.compress((tmp_path / name).read_bytes())
        (packed / f"{name}.gz").write_bytes(data)
    pd.testing.assert_frame_equal(
        read(packed / "pai_job_table.csv.gz", format="alibaba-pai"),
        read(path, format="alibaba-pai"),
    )


def test_pai_task_table_is_found_beside_the_job_table_or_given(pai, tmp_path):
    path = pai()
    other = tmp_path / "jobs.csv"
    other.write_bytes(path.read_bytes())
    fails("does not contain pai_job_table", other, format="alibaba-pai")
    pd.testing.assert_frame_equal(
        read_alibaba_pai(other, tmp_path / "pai_task_table.csv"),
        read(path, format="alibaba-pai"),
    )
    (tmp_path / "pai_task_table.csv").unlink()
    fails("pai_task_table.csv does not exist", path, format="alibaba-pai")
    with pytest.raises(ValueError, match="needs its task table"):
        read_alibaba_pai(io.StringIO(PAI_JOBS[0]))


# ---- Alibaba GPU 2023: openb_pod_list_*.csv -------------------------------------------

OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
#: The README's three sample rows, with a pending pod and a CPU pod of the default list.
OPENB_ROWS = [
    "openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497",
    "openb-pod-0022,4000,15258,1,220,,BE,Running,9679175,9973826,9679175",
    "openb-pod-0035,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063",
]


#: A pod still there when the release was taken: deleted at the trace's end (the
#: release's collection time), so censored, as the release's own 34 are; without it
#: a file's last-deleted pod would mark the end.
OPENB_END = "openb-pod-end,1000,1000,1,1000,,LS,Running,0,12902960,0"
#: Its count, in the warning that a read says it in.
AT_THE_END = "ignore:.*still running at the end of the trace"


@pytest.fixture
def openb(tmp_path):
    def write(rows=OPENB_ROWS, header=OPENB_HEADER):
        path = tmp_path / "openb_pod_list_default.csv"
        path.write_text(header + "".join(r + "\n" for r in [*rows, OPENB_END]))
        return path

    return write


@pytest.mark.filterwarnings(AT_THE_END)
def test_alibaba_2023_pods_map_onto_jobs(openb):
    frame = read(openb(), format="alibaba-2023")
    assert frame["job_id"].tolist() == [
        "openb-pod-0017",
        "openb-pod-0022",
        "openb-pod-0035",
    ]
    assert frame["submit_time_s"].tolist() == [
        0.0,
        9679175 - 9437497,
        9967058 - 9437497,
    ]
    # a share of one GPU (gpu_milli 220) is one whole GPU
    assert frame["num_gpus"].tolist() == [8, 1, 1]
    assert frame["gpu_milli"].tolist() == [1000, 220, 1000]
    # deletion_time - scheduled_time
    assert frame["duration_s"].tolist() == [
        10769854 - 9437497,
        9973826 - 9679175,
        9968575 - 9967063,
    ]
    # gpu_spec V100M16|V100M32: a V100 of either memory
    # an empty gpu_spec is the release's "any type will do"
    assert frame["gpu_type"].tolist() == ["any", "any", "V100"]
    assert frame["creation_time"].tolist() == [9437497, 9679175, 9967058]


@pytest.mark.filterwarnings(AT_THE_END)
@pytest.mark.parametrize(
    "spec, aryl",
    [
        ("V100M32", "V100"),
        ("T4", "T4"),
        ("P100", "unknown"),
        ("P100|T4|V100M16|V100M32", "unknown"),
        ("T4|V100M16|V100M32", "unknown"),
        ("G2", "unknown"),
        ("nan", "unknown"),
    ],
)
def test_alibaba_2023_gpu_type_is_aryls_when_the_spec_allows_only_that_type(
    openb, spec, aryl
):
    row = f"p,1000,1000,1,1000,{spec},LS,Succeeded,0,100,10"
    assert read(openb([row]), format="alibaba-2023")["gpu_type"].tolist() == [aryl]


@pytest.mark.parametrize(
    "row, reason",
    [
        ("out,20000,65536,0,0,,LS,Running,2759674,12902960,2759676", "no GPUs"),
        ("out,11908,47104,1,1000,,BE,Pending,10001278,10001403,", "never started"),
        (
            "out,11908,47104,1,1000,,BE,Running,10001278,,10001278",
            "still running at the end of the trace",
        ),
        ("out,11908,47104,1,1000,,BE,Failed,10001278,10001300,10001300", "ran 0 s"),
    ],
)
def test_alibaba_2023_pods_aryl_cannot_replay_are_left_out_and_counted(
    openb, row, reason
):
    frame, said = quiet(read, openb([OPENB_ROWS[0], row]), format="alibaba-2023")
    assert frame["job_id"].tolist() == ["openb-pod-0017"]
    end = Counter({"still running at the end of the trace": 1})  # OPENB_END
    assert frame.attrs["skip_reasons"] == Counter({reason: 1}) + end
    assert len(said) == 1


@pytest.mark.parametrize(
    "row, where",
    [
        (
            "p,1,1,1.5,1000,,LS,Running,0,100,10",
            "column 'num_gpu': not an integer (got '1.5')",
        ),
        ("p,1,1,-1,1000,,LS,Running,0,100,10", "column 'num_gpu': negative (got '-1')"),
        ("p,1,1,1,1000,,LS,Running,,100,10", "column 'creation_time': empty value"),
        ("p,1,1,1,1000,,LS,Running,0,100,ten", "column 'scheduled_time': not a number"),
        (
            "p,1,1,1,1000,,LS,Running,0,5,10",
            "column 'deletion_time': before scheduled_time",
        ),
        (",1,1,1,1000,,LS,Running,0,100,10", "column 'name': empty value"),
        (
            "openb-pod-0017,1,1,1,1000,,LS,Running,0,100,10",
            "column 'name': duplicate name 'openb-pod-0017' (first at row 1)",
        ),
        (
            "p,1,1,1,1000,,LS,Running,0,100",
            "10 fields, the header has 11",
        ),
    ],
)
def test_alibaba_2023_bad_rows_name_the_file_row_line_and_column(openb, row, where):
    path = openb([OPENB_ROWS[0], row])
    fails(
        re.escape(f"{path}: row 2 (line 3)") + ".*" + re.escape(where),
        path,
        format="alibaba-2023",
    )
    frame, _ = quiet(read, path, format="alibaba-2023", drop_invalid=True)
    assert (
        frame["job_id"].tolist() == ["openb-pod-0017"] and frame.attrs["dropped"] == 1
    )


def test_alibaba_2023_missing_column_is_named(openb):
    fails(
        "missing column\\(s\\) scheduled_time",
        openb(header=OPENB_HEADER.replace(",scheduled_time", "")),
        format="alibaba-2023",
    )


# ---- SenseTime Helios: cluster_log.csv ------------------------------------------------

HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
    "duration,queue\n"
)
#: The README's three example rows.
HELIOS_ROWS = [
    "1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0",
    "1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0",
    "1425513,uzqls,vcpDC,1,1,1,CANCELLED,2020-06-09 18:41:28,2020-06-09 18:41:28,2020-06-17 14:15:21,675233,0",
]


@pytest.fixture
def helios(tmp_path):
    def write(rows=HELIOS_ROWS):
        path = tmp_path / "cluster_log.csv"
        path.write_text(HELIOS_HEADER + "".join(r + "\n" for r in rows))
        return path

    return write


def test_helios_readme_rows_map_onto_jobs(helios):
    frame = read(helios(), format="helios")
    assert frame["job_id"].tolist() == ["1425511", "1425512", "1425513"]
    assert frame["submit_time_s"].tolist() == [0.0, 26.0, 27.0]
    assert frame["num_gpus"].tolist() == [1, 4, 1]
    assert frame["duration_s"].tolist() == [36848.0, 249.0, 675233.0]
    assert frame["gpu_type"].tolist() == ["unknown"] * 3
    # every state is kept, with the other columns as released
    assert frame["state"].tolist() == ["COMPLETED", "FAILED", "CANCELLED"]
    assert frame["submit_time"].tolist()[0] == "2020-06-09 18:41:01"
    assert frame["vc"].tolist() == ["vcJkd", "vchbv", "vcpDC"]


def test_helios_jobs_are_sorted_by_submission(helios):
    frame = read(helios(HELIOS_ROWS[::-1]), format="helios")
    assert frame["job_id"].tolist() == ["1425511", "1425512", "1425513"]


@pytest.mark.parametrize(
    "row, reason",
    [
        (
            "9,u,vc,0,4,1,COMPLETED,2020-06-09 18:42:00,2020-06-09 18:42:00,2020-06-09 18:43:00,60,0",
            "no GPUs",
        ),
        (
            "9,u,vc,8,4,1,CANCELLED,2020-06-09 18:42:00,2020-06-09 18:42:00,2020-06-09 18:42:00,0,0",
            "ran 0 s",
        ),
    ],
)
def test_helios_jobs_aryl_cannot_replay_are_left_out_and_counted(helios, row, reason):
    frame, said = quiet(read, helios([HELIOS_ROWS[0], row]), format="helios")
    assert frame["job_id"].tolist() == ["1425511"]
    assert frame.attrs["skip_reasons"] == Counter({reason: 1}) and len(said) == 1


@pytest.mark.parametrize(
    "row, where",
    [
        (
            "9,u,vc,1,1,1,COMPLETED,2020-06-09,x,x,60,0",
            "column 'submit_time': not a time (YYYY-MM-DD HH:MM:SS) (got '2020-06-09')",
        ),
        ("9,u,vc,1,1,1,COMPLETED,,x,x,60,0", "column 'submit_time': empty value"),
        (
            "9,u,vc,1,1,1,COMPLETED,2020-06-09 18:42:00,x,x,-60,0",
            "column 'duration': negative",
        ),
        (
            "9,u,vc,two,1,1,COMPLETED,2020-06-09 18:42:00,x,x,60,0",
            "column 'gpu_num': not a number",
        ),
        (
            ",u,vc,1,1,1,COMPLETED,2020-06-09 18:42:00,x,x,60,0",
            "column 'job_id': empty value",
        ),
        (
            "1425511,u,vc,1,1,1,COMPLETED,2020-06-09 18:42:00,x,x,60,0",
            "column 'job_id': duplicate job_id '1425511'",
        ),
    ],
)
def test_helios_bad_rows_name_the_file_row_line_and_column(helios, row, where):
    path = helios([HELIOS_ROWS[0], row])
    fails(re.escape(f"{path}: row 2 (line 3), {where}"), path, format="helios")
    frame, _ = quiet(read, path, format="helios", drop_invalid=True)
    assert frame["job_id"].tolist() == ["1425511"] and frame.attrs["dropped"] == 1


# ---- read(format=...) ------------------------------------------------------------------


def test_read_of_format_aryl_is_read_jobs(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,submit_time_s,num_gpus,duration_s,gpu_type\na,0,1,10,V100\n"
    )
    pd.testing.assert_frame_equal(read(path), read_jobs(path))
    assert TRACE_FORMATS == ("aryl", "philly", "alibaba-pai", "alibaba-2023", "helios")


def test_read_refuses_an_unknown_format(tmp_path):
    with pytest.raises(
        ValueError, match="unknown trace format 'sge'; expected one of aryl"
    ):
        read(tmp_path / "x", format="sge")
    with pytest.raises(TypeError, match="format must be a str"):
        read(tmp_path / "x", format=None)


def test_a_file_of_nothing_but_left_out_jobs_fails_naming_the_counts(helios):
    row = "9,u,vc,0,4,1,COMPLETED,2020-06-09 18:42:00,x,x,60,0"
    fails(
        "no job aryl can replay among 1 records \\({'no GPUs': 1}\\)",
        helios([row]),
        format="helios",
    )


@pytest.mark.filterwarnings(AT_THE_END)
def test_imported_jobs_become_aryl_jobs(helios, openb):
    frame = read(openb(), format="alibaba-2023")
    jobs = to_jobs(frame, any_type_share=0.0)
    assert [j.gpu_type for j in jobs] == [None, None, "V100"]  # any type, then V100
    assert [j.id for j in jobs] == frame["job_id"].tolist()


# ---- aryl simulate / compare --trace-format ----------------------------------------------

SMALL = ["--training-servers", "4", "--inference-servers", "4", "--plot-format", "png"]


def simulated_jobs(path, trace_format, out, capsys, command="simulate"):
    """Run ``aryl <command> PATH --trace-format F``; (job ids it wrote, stderr).

    The output goes to ``out/out``: ``out`` holds the trace (aryl refuses to write
    into a folder with files it did not write)."""
    out = out / "out"
    argv = [
        command,
        str(path),
        "--trace-format",
        trace_format,
        *SMALL,
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    if command == "compare":
        return None, err
    return pd.read_csv(out / "jobs.csv")["id"].astype(str).tolist(), err


def test_simulate_philly(philly, tmp_path, capsys):
    late = philly_job("late", "2017-10-07 02:00:00", GOOD_RUN)
    never = philly_job("never", "2017-10-07 02:00:00", [])
    ids, err = simulated_jobs(
        philly([PHILLY_EXAMPLE, late, never]), "philly", tmp_path, capsys
    )
    assert sorted(ids) == ["application_1506638472019_14199", "late"]
    assert "aryl: left out 1 record of " in err and "(never started: 1)" in err


def test_simulate_alibaba_pai(pai, tmp_path, capsys):
    ids, _ = simulated_jobs(pai(), "alibaba-pai", tmp_path, capsys)
    assert sorted(ids) == ["4b3f04b66a525d2df903eb16", "j2"]


def test_simulate_alibaba_2023(openb, tmp_path, capsys):
    ids, _ = simulated_jobs(openb(), "alibaba-2023", tmp_path, capsys)
    assert sorted(ids) == ["openb-pod-0017", "openb-pod-0022", "openb-pod-0035"]


def test_simulate_helios(helios, tmp_path, capsys):
    ids, _ = simulated_jobs(helios(), "helios", tmp_path, capsys)
    assert sorted(ids) == ["1425511", "1425512", "1425513"]


def test_compare_takes_the_trace_format_too(helios, tmp_path, capsys):
    simulated_jobs(helios(), "helios", tmp_path, capsys, command="compare")
    assert len(pd.read_csv(tmp_path / "out" / "compare.csv")) > 1


def test_trace_format_needs_a_file_and_a_readable_one(helios, tmp_path, capsys):
    assert main(["simulate", "--trace-format", "helios", *SMALL]) == 2
    assert (
        capsys.readouterr().err
        == "aryl: error: --trace-format helios needs a JOBS file\n"
    )
    path = helios(["9,u,vc,1,1,1,COMPLETED,soon,x,x,60,0"])
    assert main(["simulate", str(path), "--trace-format", "helios", *SMALL]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aryl: error: {path}: row 1 (line 2), column 'submit_time'")


def test_the_parser_offers_every_trace_format():
    from aryl.cli.parser import _parser

    simulate = next(
        a
        for a in _parser()._subparsers._group_actions[0].choices["simulate"]._actions
        if a.dest == "trace_format"
    )
    assert tuple(simulate.choices) == TRACE_FORMATS
