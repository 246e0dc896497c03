import subprocess
import sys

from aryl.cli import main


def test_demo_prints_a_table(capsys):
    assert main(["demo", "--training-servers", "4", "--loaned-servers", "10", "--reclaim", "3"]) == 0
    out = capsys.readouterr().out
    assert "jobs preempted" in out
    for policy in ("aryl", "scf", "random", "exact"):
        assert f" {policy} " in out


def test_user_errors_exit_2_without_a_traceback(capsys):
    assert main(["demo", "--loaned-servers", "4", "--reclaim", "9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aryl: error: asked to reclaim 9 servers") and "Traceback" not in err


def test_help_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "aryl", "demo", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--reclaim" in out
