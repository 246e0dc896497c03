"""aryl.traces: readers (good and broken files), conversion, load helpers, generator, defaults."""

import gzip
import io
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl.sim import Cluster, simulate
from aryl.traces import (
    GPU_SECONDS_PER_JOB,
    TraceError,
    extend_load,
    load_default,
    loanable_servers,
    read_jobs,
    read_load,
    rescale_load,
    synthetic,
    to_jobs,
    worker_split,
)

HEADER = "job_id,submit_time_s,num_gpus,duration_s,gpu_type,user\n"
GOOD = HEADER + "a,0,1,100,unknown,u1\nb,10,8,3600,V100,u2\nc,10,12,50.5,,u3\n"
LOAD = "time_s,load,note\n0,0.5,x\n300,1,y\n600,0,z\n"


@pytest.fixture
def write(tmp_path):
    """write(text, name="t.csv", gz=False) -> path of a file holding text (gzip-compressed if gz)."""

    def _write(text, name="t.csv", gz=False):
        path = tmp_path / name
        path.write_bytes(gzip.compress(text.encode(), mtime=0) if gz else text.encode())
        return path

    return _write


def broken(write, rows, match):
    """read_jobs of HEADER + rows raises a TraceError matching ``match`` and naming the file."""
    path = write(HEADER + rows, name="broken.csv")
    with pytest.raises(TraceError, match=match) as info:
        read_jobs(path)
    assert "broken.csv" in str(info.value)
    return str(info.value)


# ---- read_jobs -----------------------------------------------------------------------------


def test_read_jobs_good_file(write):
    frame = read_jobs(write(GOOD))
    assert list(frame.columns) == [
        "job_id",
        "submit_time_s",
        "num_gpus",
        "duration_s",
        "gpu_type",
        "user",
    ]
    assert frame["job_id"].tolist() == ["a", "b", "c"]
    assert frame["num_gpus"].dtype == np.int64 and frame["num_gpus"].tolist() == [
        1,
        8,
        12,
    ]
    assert frame["duration_s"].tolist() == [100.0, 3600.0, 50.5]
    assert frame["submit_time_s"].dtype == float
    assert frame["gpu_type"].tolist() == ["unknown", "V100", ""]
    assert frame["user"].tolist() == ["u1", "u2", "u3"]
    assert frame.attrs["dropped"] == 0 and frame.attrs["drop_reasons"] == Counter()


def test_read_jobs_numeric_extra_columns_become_numbers(write):
    frame = read_jobs(
        write(
            "job_id,submit_time_s,num_gpus,duration_s,gpu_type,orig\na,0,1,5,unknown,7\n"
        )
    )
    assert frame["orig"].tolist() == [7]


def test_gzip_is_detected_by_magic_bytes_not_name(write):
    expected = read_jobs(write(GOOD))
    pd.testing.assert_frame_equal(
        read_jobs(write(GOOD, name="plain.csv", gz=True)), expected
    )
    pd.testing.assert_frame_equal(
        read_jobs(write(GOOD, name="not-gzip.csv.gz")), expected
    )


def test_file_objects_text_binary_and_gzip(write):
    expected = read_jobs(write(GOOD))
    for source in (
        io.StringIO(GOOD),
        io.BytesIO(GOOD.encode()),
        io.BytesIO(gzip.compress(GOOD.encode())),
    ):
        pd.testing.assert_frame_equal(read_jobs(source), expected)
    with open(write(GOOD, gz=True), "rb") as f:
        pd.testing.assert_frame_equal(read_jobs(f), expected)


def test_stream_errors_name_the_stream():
    with pytest.raises(TraceError, match=r"^<stream>: row 1 \(line 2\)"):
        read_jobs(io.StringIO(HEADER + "a,0,0,1,unknown,u\n"))


def test_missing_column(write):
    path = write(
        "job_id,submit_time_s,duration_s,gpu_type\na,0,1,unknown\n", name="broken.csv"
    )
    with pytest.raises(
        TraceError,
        match=r"broken\.csv: line 1 \(header\): missing column\(s\) num_gpus",
    ):
        read_jobs(path)


def test_non_numeric_value(write):
    broken(
        write,
        "a,0,1,100,x,u\nb,5,1,soon,x,u\n",
        r"row 2 \(line 3\), column 'duration_s': not a number \(got 'soon'\)",
    )


def test_negative_value(write):
    broken(
        write,
        "a,0,1,-5,x,u\n",
        r"row 1 \(line 2\), column 'duration_s': negative \(got '-5'\)",
    )


def test_negative_submit_time(write):
    broken(
        write, "a,-1,1,5,x,u\n", r"row 1 \(line 2\), column 'submit_time_s': negative"
    )


def test_zero_gpus(write):
    broken(
        write,
        "a,0,1,5,x,u\nb,0,0,5,x,u\n",
        r"row 2 \(line 3\), column 'num_gpus': zero GPUs \(got '0'\)",
    )


def test_fractional_gpus(write):
    broken(
        write,
        "a,0,1.5,5,x,u\n",
        r"row 1 \(line 2\), column 'num_gpus': not an integer \(got '1.5'\)",
    )


def test_nan_value(write):
    broken(
        write,
        "a,0,1,5,x,u\nb,1,1,NaN,x,u\n",
        r"row 2 \(line 3\), column 'duration_s': NaN \(got 'NaN'\)",
    )


def test_infinite_value(write):
    broken(
        write, "a,0,1,inf,x,u\n", r"row 1 \(line 2\), column 'duration_s': not finite"
    )


def test_empty_value(write):
    broken(
        write,
        "a,0,1,5,x,u\nb,,1,5,x,u\n",
        r"row 2 \(line 3\), column 'submit_time_s': empty value",
    )


def test_empty_job_id(write):
    broken(write, ",0,1,5,x,u\n", r"row 1 \(line 2\), column 'job_id': empty value")


def test_short_row(write):
    broken(
        write, "a,0,1,5,x,u\nb,0,1\n", r"row 2 \(line 3\): 3 fields, the header has 6$"
    )


def test_long_first_row(write):
    broken(
        write,
        "a,0,1,5,x,u,extra,more\nb,1,1,5,x,u\n",
        r"row 1 \(line 2\): 8 fields, the header has 6$",
    )


def test_blank_line_inside_is_an_error(write):
    broken(write, "a,0,1,5,x,u\n\nb,1,1,5,x,u\n", r"row 2 \(line 3\): blank line$")


def test_quoted_fields_and_line_numbers(write):
    rows = 'a,0,1,5,x,"two\nlines"\n"b",1,1,"5",x,u\nc,2,0,5,x,u\n'
    broken(write, rows, r"row 3 \(line 5\), column 'num_gpus': zero GPUs")
    assert read_jobs(write(HEADER + rows.replace("c,2,0", "c,2,1")))[
        "user"
    ].tolist() == ["two\nlines", "u", "u"]


def test_trailing_blank_lines_are_ignored(write):
    assert len(read_jobs(write(GOOD + "\n\n"))) == 3


def test_duplicate_id(write):
    broken(
        write,
        "a,0,1,5,x,u\nb,1,1,5,x,u\na,2,1,5,x,u\n",
        r"row 3 \(line 4\), column 'job_id': duplicate job_id 'a' \(first at row 1\)",
    )


def test_unsorted_submit_times(write):
    broken(
        write,
        "a,0,1,5,x,u\nb,20,1,5,x,u\nc,10,1,5,x,u\n",
        r"row 3 \(line 4\), column 'submit_time_s': goes back in time \(10 after 20 at row 2\)",
    )


def test_empty_file(write):
    with pytest.raises(
        TraceError, match=r"empty\.csv: empty file; expected a CSV header with job_id"
    ):
        read_jobs(write("", name="empty.csv"))


def test_whitespace_only_file_is_empty(write):
    with pytest.raises(TraceError, match="empty file"):
        read_jobs(write("\n \n", name="empty.csv"))


def test_header_only(write):
    with pytest.raises(TraceError, match=r"header\.csv: header only, no data rows"):
        read_jobs(write(HEADER, name="header.csv"))


def test_corrupt_gzip(write):
    path = write("x", name="bad.gz")
    path.write_bytes(b"\x1f\x8b" + b"garbage")
    with pytest.raises(TraceError, match=r"bad\.gz: corrupt gzip data"):
        read_jobs(path)


def test_duplicate_header_column(write):
    with pytest.raises(TraceError, match=r"line 1 \(header\): duplicate column names"):
        read_jobs(write(HEADER.strip() + ",user\na,0,1,5,x,u,v\n"))


def test_not_utf8(write):
    path = write("x")
    path.write_bytes(HEADER.encode() + b"a,0,1,5,\xff\xfe,u\n")
    with pytest.raises(TraceError, match="not UTF-8 text"):
        read_jobs(path)


def test_drop_invalid_skips_counts_and_warns(write):
    rows = (
        "a,0,1,5,x,u\n"  # kept
        "b,1,0,5,x,u\n"  # zero GPUs
        "c,2,1,-1,x,u\n"  # negative duration
        "d,,1,5,x,u\n"  # empty submit time
        "a,3,1,5,x,u\n"  # duplicate of a
        "h,4,1\n"  # too few fields
        "e,50,1,5,x,u\n"  # kept
        "f,40,1,5,x,u\n"  # goes back in time
        "g,60,2,7,x,u\n"
    )  # kept
    with pytest.warns(UserWarning, match=r"dropped 6 invalid row\(s\) of 9"):
        frame = read_jobs(write(HEADER + rows), drop_invalid=True)
    assert frame["job_id"].tolist() == ["a", "e", "g"]
    assert frame.index.tolist() == [0, 1, 2]
    assert frame.attrs["dropped"] == 6
    assert frame.attrs["drop_reasons"] == Counter(
        {
            "row: 3 fields, the header has 6": 1,
            "num_gpus: zero GPUs": 1,
            "duration_s: negative": 1,
            "submit_time_s: empty value": 1,
            "job_id: duplicate": 1,
            "submit_time_s: goes back in time": 1,
        }
    )


def test_drop_invalid_on_a_clean_file_does_not_warn(write):
    frame = read_jobs(write(GOOD), drop_invalid=True)
    assert len(frame) == 3 and frame.attrs["dropped"] == 0


def test_drop_invalid_with_nothing_left_is_an_error(write):
    with pytest.raises(TraceError, match=r"all 2 rows are invalid"):
        read_jobs(write(HEADER + "a,0,0,5,x,u\nb,1,0,5,x,u\n"), drop_invalid=True)


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_jobs(tmp_path / "nope.csv")


# ---- read_load -----------------------------------------------------------------------------


def test_read_load_good_file_plain_and_gzip(write):
    frame = read_load(write(LOAD))
    assert frame["time_s"].tolist() == [0.0, 300.0, 600.0]
    assert frame["load"].tolist() == [0.5, 1.0, 0.0]
    assert frame["note"].tolist() == ["x", "y", "z"]
    pd.testing.assert_frame_equal(read_load(write(LOAD, name="l.csv", gz=True)), frame)
    pd.testing.assert_frame_equal(read_load(io.BytesIO(LOAD.encode())), frame)


def load_error(write, text, match):
    with pytest.raises(TraceError, match=match) as info:
        read_load(write(text, name="load.csv"))
    assert "load.csv" in str(info.value)


def test_load_above_one(write):
    load_error(
        write,
        "time_s,load\n0,0.5\n300,1.2\n",
        r"row 2 \(line 3\), column 'load': above 1 \(got '1.2'\)",
    )


def test_load_negative(write):
    load_error(
        write, "time_s,load\n0,-0.1\n", r"row 1 \(line 2\), column 'load': negative"
    )


def test_load_nan(write):
    load_error(
        write, "time_s,load\n0,0.1\n300,nan\n", r"row 2 \(line 3\), column 'load': NaN"
    )


def test_load_non_numeric_time(write):
    load_error(
        write,
        "time_s,load\nnoon,0.1\n",
        r"row 1 \(line 2\), column 'time_s': not a number",
    )


def test_load_time_not_increasing(write):
    load_error(
        write,
        "time_s,load\n0,0.1\n300,0.2\n300,0.3\n",
        r"row 3 \(line 4\), column 'time_s': time does not increase \(300 after 300 at row 2\)",
    )


def test_load_missing_column(write):
    load_error(
        write, "time_s,util\n0,0.1\n", r"line 1 \(header\): missing column\(s\) load"
    )


def test_load_empty_file(write):
    load_error(write, "", "empty file; expected a CSV header with time_s, load")


def test_load_header_only(write):
    load_error(write, "time_s,load\n", "header only")


# ---- to_jobs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gpus, per, workers",
    [
        (1, 1, 1),
        (2, 2, 1),
        (4, 4, 1),
        (6, 6, 1),
        (8, 8, 1),
        (16, 8, 2),
        (64, 8, 8),
        (12, 4, 3),
        (24, 8, 3),
        (20, 4, 5),
        (9, 1, 9),
    ],
)
def test_worker_split(gpus, per, workers):
    assert worker_split(gpus) == (per, workers)
    assert per * workers == gpus


def test_worker_split_with_four_gpu_workers():
    assert worker_split(12, 4) == (4, 3)
    assert worker_split(6, 4) == (2, 3)


def test_worker_split_rejects_zero():
    with pytest.raises(ValueError, match="must be >= 1"):
        worker_split(0)


def test_to_jobs_fields(write):
    jobs = to_jobs(read_jobs(write(GOOD)), any_type_share=0.0)
    assert jobs == [  # the optional user column is the jobs' user
        aryl.Job("a", 1, 1, 1, 100.0, 0.0, gpu_type="V100", user="u1"),
        aryl.Job("b", 8, 1, 1, 3600.0, 10.0, gpu_type="V100", user="u2"),
        aryl.Job("c", 4, 3, 3, 50.5, 10.0, gpu_type="V100", user="u3"),
    ]
    assert not any(j.elastic for j in jobs)


def test_to_jobs_keeps_real_types_and_uses_training_gpu():
    frame = pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "submit_time_s": [0, 1, 2, 3],
            "num_gpus": [1, 1, 1, 1],
            "duration_s": [5, 5, 5, 5],
            "gpu_type": ["A100", "Unknown", None, " "],
        }
    )
    assert [
        j.gpu_type for j in to_jobs(frame, any_type_share=0.0, training_gpu="P100")
    ] == ["A100", "P100", "P100", "P100"]
    assert [j.gpu_type for j in to_jobs(frame, any_type_share=1.0)] == [
        "A100",
        None,
        None,
        None,
    ]


def test_any_type_share_is_exact_and_deterministic():
    jobs_frame, _ = synthetic(days=1, jobs=2000, seed=3)
    pick = [j.gpu_type is None for j in to_jobs(jobs_frame, seed=7)]
    assert sum(pick) == 420  # round(0.21 * 2000)
    assert pick == [j.gpu_type is None for j in to_jobs(jobs_frame, seed=7)]
    other = [j.gpu_type is None for j in to_jobs(jobs_frame, seed=8)]
    assert other != pick and sum(other) == 420
    assert {j.gpu_type for j in to_jobs(jobs_frame)} == {None, "V100"}


def test_any_type_share_on_the_default_trace():
    jobs, _ = load_default()
    share = np.mean([j.gpu_type is None for j in to_jobs(jobs)])
    assert share == pytest.approx(0.21, abs=0.5 / len(jobs))


def test_to_jobs_rejects_bad_input():
    with pytest.raises(ValueError, match="missing column"):
        to_jobs(pd.DataFrame({"job_id": ["a"]}))
    with pytest.raises(ValueError, match="any_type_share"):
        to_jobs(synthetic(days=1, jobs=5)[0], any_type_share=1.5)
    frame = synthetic(days=1, jobs=5)[0].astype({"num_gpus": float})
    frame.loc[2, "num_gpus"] = 2.5
    with pytest.raises(
        ValueError, match="job 'syn-000002': num_gpus must be an integer, got 2.5"
    ):
        to_jobs(frame)
    frame.loc[2, "num_gpus"] = 0
    with pytest.raises(
        ValueError, match="num_gpus and max_gpus_per_worker must be >= 1"
    ):
        to_jobs(frame)


def test_to_jobs_runs_in_the_simulator():
    jobs_frame, load = synthetic(days=1, jobs=300, seed=1)
    result = simulate(to_jobs(jobs_frame), Cluster(40, 8), inference_load=load)
    assert (
        result.summary()["jobs_finished"] + result.summary()["jobs_unfinished"] == 300
    )


# ---- load helpers --------------------------------------------------------------------------


def test_loanable_servers_follows_the_rule():
    rng = np.random.default_rng(0)
    load = pd.DataFrame({"time_s": np.arange(200) * 300.0, "load": rng.random(200)})
    load.loc[:3, "load"] = [0.0, 1.0, 0.3, 0.95]
    for n, headroom in ((10, 0.0), (7, 0.1), (0, 0.0), (48, 0.25)):
        out = loanable_servers(load, n, headroom)
        assert list(out.columns) == [
            "time_s",
            "load",
            "needed",
            "loanable",
            "lendable",
            "lent",
        ]
        expected = [
            min(n, math.ceil(min(1.0, x * (1 + headroom)) * n - 1e-9))
            for x in load["load"]
        ]
        assert out["needed"].tolist() == expected
        assert (out["loanable"] == n - out["needed"]).all()
    out = loanable_servers(load, 10)
    assert out["needed"].tolist()[:4] == [
        0,
        10,
        3,
        10,
    ]  # 0.3 * 10 is 3.0000000000000004: 3


def test_loanable_servers_matches_the_simulator():
    """The simulator lends exactly loanable_servers(...)["lent"] after each loan event."""
    rng = np.random.default_rng(1)
    load = pd.DataFrame(
        {"time_s": np.arange(40) * 300.0, "load": np.round(rng.random(40), 2)}
    )
    load.loc[3:5, "load"] = [0.3, 0.0, 1.0]
    for headroom, hold in ((0.0, 0.0), (0.1, 0.0), (0.0, 3600.0), (0.1, 900.0)):
        result = simulate(
            [aryl.Job("x", 1, 1, 1, duration=40 * 300.0)],
            Cluster(1, 10),
            inference_load=load,
            config={
                "schedule_interval": 60.0,
                "loan_interval": 300.0,
                "headroom": headroom,
                "lend_hold": hold,
            },
        )
        samples = result.timeline[result.timeline["t"] % 300 == 60]
        rows = loanable_servers(load, 10, headroom, lend_hold=hold)
        expected = rows["lent"].to_numpy()
        assert len(samples) == 40
        assert (
            samples["on_loan"].tolist()
            == expected[(samples["t"] // 300).astype(int)].tolist()
        )
        if hold == 0.0:
            assert (rows["lent"] == rows["loanable"]).all()
        else:
            assert (rows["lendable"] <= rows["loanable"]).all()
            assert (
                rows["lent"].diff().clip(lower=0).sum()
                < rows["loanable"].diff().clip(lower=0).sum()
            )


def test_rescale_load(write):
    load = read_load(write(LOAD))
    out = rescale_load(load)
    assert out["load"].tolist() == pytest.approx([0.65, 1.0, 0.3])
    assert out["note"].tolist() == ["x", "y", "z"]
    assert load["load"].tolist() == [0.5, 1.0, 0.0]  # input untouched
    assert rescale_load(load, floor=0.0)["load"].tolist() == [0.5, 1.0, 0.0]
    with pytest.raises(ValueError, match="floor"):
        rescale_load(load, floor=1.5)


def test_rescale_load_moves_the_alibaba_mean_toward_the_paper():
    _, load = load_default()
    assert load["load"].mean() == pytest.approx(0.484, abs=0.001)
    assert rescale_load(load)["load"].mean() == pytest.approx(0.639, abs=0.001)


def test_extend_load_repeats_the_series(write):
    load = read_load(write(LOAD))  # 0, 300, 600: period 900
    out = extend_load(load, 2000)
    assert out["time_s"].tolist() == [0, 300, 600, 900, 1200, 1500, 1800]
    assert out["load"].tolist() == [0.5, 1.0, 0.0] * 2 + [0.5]
    assert out["note"].tolist() == ["x", "y", "z"] * 2 + ["x"]
    assert out.index.tolist() == list(range(7))
    assert extend_load(load, 1800)["time_s"].tolist() == [0, 300, 600, 900, 1200, 1500]


def test_extend_load_keeps_a_series_that_already_covers():
    load = pd.DataFrame({"time_s": [100.0, 200.0, 300.0], "load": [0.1, 0.2, 0.3]})
    pd.testing.assert_frame_equal(extend_load(load, 50), load)
    assert extend_load(load, 650)["time_s"].tolist() == [100, 200, 300, 400, 500, 600]


def test_extend_load_covers_the_default_trace():
    jobs, load = load_default()
    out = extend_load(load, jobs["submit_time_s"].max())
    assert out["time_s"].iloc[-1] + 300 >= jobs["submit_time_s"].max()
    assert (np.diff(out["time_s"]) == 300).all()
    assert out["load"].iloc[2304:4608].tolist() == load["load"].tolist()


def test_extend_load_rejects_one_row():
    with pytest.raises(ValueError, match="at least two rows"):
        extend_load(pd.DataFrame({"time_s": [0.0], "load": [0.5]}), 100)


# ---- synthetic -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    """3 days at the paper's arrival rate (50,390 jobs in 15 days)."""
    return synthetic(days=3, jobs=10_078, seed=0)


def test_synthetic_schema_round_trips_through_the_readers(small, tmp_path):
    jobs, load = small
    jobs.to_csv(tmp_path / "jobs.csv", index=False)
    load.to_csv(tmp_path / "load.csv", index=False)
    back = read_jobs(tmp_path / "jobs.csv")
    assert (
        list(back.columns)
        == list(jobs.columns)
        == ["job_id", "submit_time_s", "num_gpus", "duration_s", "gpu_type"]
    )
    np.testing.assert_array_equal(back["duration_s"], jobs["duration_s"])
    assert list(read_load(tmp_path / "load.csv").columns) == ["time_s", "load"]


def test_synthetic_job_statistics(small):
    jobs, _ = small
    span = 3 * 86400
    assert len(jobs) == 10_078 and jobs["submit_time_s"].between(0, span - 1).all()
    gpu_seconds = jobs["num_gpus"] * jobs["duration_s"]
    assert gpu_seconds.mean() == pytest.approx(GPU_SECONDS_PER_JOB, rel=1e-3)
    assert gpu_seconds.sum() / span / 3544 == pytest.approx(
        0.82, abs=0.002
    )  # offered load
    mix = jobs["num_gpus"].value_counts(normalize=True)
    itp = {1: 0.755, 2: 0.008, 4: 0.034, 8: 0.176, 16: 0.012, 32: 0.016}
    for gpus, share in itp.items():
        assert mix.get(gpus, 0.0) == pytest.approx(share, abs=0.015), gpus
    assert set(mix.index) <= {1, 2, 4, 8, 16, 32, 64}
    assert (
        200 < jobs["duration_s"].min() and jobs["duration_s"].max() > 3 * 86400
    )  # minutes to days
    assert 3000 < jobs["duration_s"].median() < 4500


def test_synthetic_arrivals_are_diurnal(small):
    jobs, _ = small
    per_hour = (jobs["submit_time_s"] // 3600 % 24).value_counts().sort_index()
    assert 12 <= per_hour.idxmax() <= 16 and (
        per_hour.idxmin() <= 4 or per_hour.idxmin() >= 23
    )
    assert 2.2 < per_hour.max() / per_hour.min() < 4.0
    assert len(jobs) / 72 == pytest.approx(140, abs=1)  # paper: 50,390 jobs / 360 h


def test_synthetic_load_statistics(small):
    _, load = small
    assert load["time_s"].tolist() == [300.0 * i for i in range(3 * 288)]
    assert load["load"].between(0, 1).all()
    assert load["load"].mean() == pytest.approx(0.65, abs=0.03)
    hourly = load["load"].to_numpy().reshape(3, 24, 12).mean(axis=2)
    ratios = hourly.max(axis=1) / hourly.min(axis=1)
    assert np.all((1.9 < ratios) & (ratios < 2.6)) and ratios.mean() == pytest.approx(
        2.2, abs=0.15
    )
    profile = hourly.mean(axis=0)
    assert 3 <= profile.argmin() <= 7  # trough before dawn
    assert profile.argmax() >= 20 or profile.argmax() == 0  # peak at night
    assert 3 <= (profile >= 0.88).sum() <= 6  # lasting about four hours
    assert load["load"].diff().abs().max() > 0.01  # noisy, not a smooth curve


def test_synthetic_is_seeded(small):
    jobs, load = synthetic(days=3, jobs=10_078, seed=0)
    pd.testing.assert_frame_equal(jobs, small[0])
    pd.testing.assert_frame_equal(load, small[1])
    other_jobs, other_load = synthetic(days=3, jobs=10_078, seed=1)
    assert not other_jobs["duration_s"].equals(jobs["duration_s"])
    assert not other_load["load"].equals(load["load"])
    pd.testing.assert_frame_equal(
        synthetic(days=3, jobs=10, seed=0)[1], load
    )  # load: days, seed only


def test_synthetic_rejects_bad_sizes():
    with pytest.raises(ValueError, match="integers >= 1"):
        synthetic(days=0)
    with pytest.raises(ValueError, match="integers >= 1"):
        synthetic(jobs=2.5)


# ---- load_default --------------------------------------------------------------------------


def test_load_default():
    jobs, load = load_default()
    assert len(jobs) == 15_802 and len(load) == 2_304
    assert list(jobs.columns) == [
        "job_id",
        "submit_time_s",
        "num_gpus",
        "duration_s",
        "gpu_type",
        "orig_submission_time_s",
    ]
    assert list(load.columns) == ["time_s", "load", "raw_value", "imputed"]
    assert (jobs["num_gpus"] * jobs["duration_s"]).sum() / 3600 == pytest.approx(
        705_683, abs=1
    )
    assert jobs["num_gpus"].value_counts()[1] == 11_924
    assert load["load"].max() == 1.0 and load["imputed"].sum() == 62
    assert jobs.attrs["dropped"] == 0 and jobs.attrs["source"].endswith(
        "itp_cluster04_jobs.csv.gz"
    )
