"""Ctrl-C in the first seconds of a sweep or a comparison on Ray (the audit's N17):
exit 130 with one line, no traceback, no crash, and no Ray process left behind; SIGTERM
alike, with 143.

The command runs in its own session, as from a terminal, and the signal goes to its
whole process group (as Ctrl-C does). It is sent at a moment the command has said it
reached, never after a sleep: the wrapper below marks where Ray's start begins and
ends and where the runs are in flight.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

pytest.importorskip("ray")
pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups"),
]

# `aryl` with marks on stdout around Ray's start and once runs are in flight.
WRAPPER = """
import sys
import ray
from aryl.cli import main

init, wait = ray.init, ray.wait

def marked_init(*args, **kwargs):
    print("MARK init starts", flush=True)
    out = init(*args, **kwargs)
    print("MARK init returned", flush=True)
    return out

def marked_wait(*args, **kwargs):
    print("MARK runs in flight", flush=True)
    return wait(*args, **kwargs)

ray.init, ray.wait = marked_init, marked_wait
sys.exit(main(sys.argv[1:]))
"""
#: Signalled once ray.init has started a first Ray process, before it returns.
WHILE_RAY_STARTS = "MARK init starts"
SWEEP = ["sweep", "--first-jobs", "3000", "--training-servers", "24"]
SWEEP += ["--inference-servers", "24", "--grid", "seed=0,1,2,3,4,5", "--engine", "ray"]
COMPARE = ["compare", "--engine", "ray", "--seeds", "2"]
COMPARE += ["--rows", "Baseline (FIFO)", "--rows", "Aryl Basic"]


def left_behind(session, marker):
    """Pids of the processes still in the command's ``session`` (Ray's services and
    workers, unless they left it) or naming ``marker`` (Ray's temp dir) in their
    command line."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                named = marker.encode() in f.read()
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == session or named:  # fields: state, ppid, pgrp, session
            found.append(int(pid))
    return found


def interrupted(tmp_path, argv, mark, signum=signal.SIGINT):
    """Run ``aryl argv``, signal it once ``mark`` is printed; (status, stderr).

    SIGINT goes to the whole process group, as Ctrl-C does; SIGTERM to the command's
    process only, as ``kill`` or a job's time limit sends it (Ray's processes are then
    the command's to stop)."""
    # Ray's session files (its processes name this folder); short, as Ray's socket
    # paths must fit in 107 bytes
    temp = tempfile.mkdtemp(prefix="aryl-ray-")
    try:
        return _interrupted(tmp_path, argv, mark, temp, signum)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _interrupted(tmp_path, argv, mark, temp, signum):
    env = {**os.environ, "RAY_TMPDIR": temp, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [sys.executable, "-c", WRAPPER, *argv, "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    ) as process:
        try:
            for line in process.stdout:
                if line.startswith(mark):
                    break
            else:
                pytest.fail(f"{argv[0]} ended before {mark!r}: {process.stderr.read()}")
            if mark == WHILE_RAY_STARTS:  # and once its first services run
                while not (process.poll() or left_behind(-1, f"{temp}/")):
                    time.sleep(0.01)
            if signum == signal.SIGINT:
                os.killpg(process.pid, signum)  # Ctrl-C: the whole process group
            else:
                os.kill(process.pid, signum)
            _, stderr = process.communicate(timeout=180)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    left = left_behind(process.pid, temp)
    for _ in range(60):  # Ray's processes stop on their own after the driver's exit
        if not left:
            break
        time.sleep(0.5)
        left = left_behind(process.pid, temp)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"Ray processes left behind: {left}"
    return process.returncode, stderr


def sweep_interrupted(tmp_path):
    """The line an interrupted sweep of ``interrupted`` ends with."""
    cache = tmp_path / "out" / "cache"
    return (
        f"aryl: sweep interrupted; the finished runs are cached in {cache}: run it "
        "again to resume"
    )


def assert_one_line(status, stderr, line, signum=signal.SIGINT):
    ours = [s for s in stderr.splitlines() if s.startswith("aryl:")]
    assert status == 128 + signum, stderr
    assert ours == [line], stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


@pytest.mark.parametrize(
    "mark",
    ["Sweeping ", WHILE_RAY_STARTS, "MARK init returned", "MARK runs in flight"],
    ids=["before-ray-starts", "while-ray-starts", "ray-just-started", "runs-in-flight"],
)
def test_ctrl_c_in_a_ray_sweep_exits_130_with_one_line(tmp_path, mark):
    status, stderr = interrupted(tmp_path, SWEEP, mark)
    assert_one_line(status, stderr, sweep_interrupted(tmp_path))


def test_ctrl_c_while_ray_starts_in_a_compare_exits_130_with_one_line(tmp_path):
    status, stderr = interrupted(tmp_path, COMPARE, WHILE_RAY_STARTS)
    assert_one_line(status, stderr, "aryl: interrupted")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".aryl-output"]


@pytest.mark.parametrize(
    "mark",
    [WHILE_RAY_STARTS, "MARK runs in flight"],
    ids=["while-ray-starts", "runs-in-flight"],
)
def test_sigterm_in_a_ray_sweep_stops_ray_and_exits_143(tmp_path, mark):
    """``kill`` (or a job's time limit) on the command alone: Ray stopped all the same."""
    status, stderr = interrupted(tmp_path, SWEEP, mark, signal.SIGTERM)
    assert_one_line(status, stderr, sweep_interrupted(tmp_path), signal.SIGTERM)
