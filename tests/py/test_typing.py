"""The typed surface: the committed ``aryl._core`` stubs match the extension, and
mypy (strict, pyproject.toml's ``[tool.mypy]``) accepts the package and a user
script over the public API while refusing its deliberate mistakes.

Both checks need development tools (the ``test`` extra installs them); without
them they skip with a message rather than fail.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

import aryl
import aryl.typing as aryl_typing
from aryl import defaults, validation
from aryl.engine import pollux_runs, scenarios, simulation
from aryl.studies.sweep_engines import ENGINES

ROOT = Path(__file__).resolve().parents[2]


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install '.[test]')")


def _need_source() -> None:
    """The stub and mypy checks read the repository (scripts/, python/aryl); a run
    against an installed wheel (scripts/build-wheel) has only the tests."""
    if not (ROOT / "python" / "aryl").is_dir() or not (ROOT / "scripts").is_dir():
        pytest.skip("needs the source tree (run from a checkout)")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_core_stub_matches_the_extension():
    _need_source()
    _need("pybind11_stubgen")
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", "scripts/check-stubs"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_on_package_and_user_script():
    _need_source()
    _need("mypy")
    # The files and the strict settings come from pyproject.toml; the user script's
    # `type: ignore`s fail as unused if a mistake there ever type-checks.
    done = _run(sys.executable, "-m", "mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def test_user_script_runs(tmp_path):
    path = ROOT / "tests/typing/user_script.py"
    spec = importlib.util.spec_from_file_location("user_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)


@pytest.mark.parametrize(
    "names, literal",
    [
        (defaults.SCHEDULE_POLICIES, aryl_typing.AllocationPolicy),
        (defaults.PLACEMENTS, aryl_typing.Placement),
        (defaults.RECLAIM_POLICIES, aryl_typing.ReclaimPolicy),
        (pollux_runs.GOODPUT_POLICIES, aryl_typing.GoodputPolicy),
        (simulation.RECLAIM_POLICIES, aryl_typing.SimulationReclaimPolicy),
        (scenarios.SCENARIOS, aryl_typing.ScenarioName),
        (ENGINES, aryl_typing.SweepEngine),
        (validation.SCALINGS, aryl_typing.Scaling),
        (aryl.model.POOLS, aryl_typing.Pool),
    ],
)
def test_runtime_choices_are_the_literal_types(names, literal):
    assert tuple(names) == get_args(literal) and len(set(names)) == len(names)


def test_runtime_validation_is_unchanged():
    servers, jobs = [aryl.Server("t0")], [aryl.Job("a", 1, 1, 1, 60.0)]
    with pytest.raises(ValueError, match="unknown policy 'FIFO'"):
        aryl.schedule(jobs, servers, policy="FIFO")
    with pytest.raises(ValueError, match="unknown reclaim policy 'exact'"):
        aryl.sim.simulate(jobs, aryl.sim.Cluster(1, 0), reclaim="exact")
    with pytest.raises(ValueError, match="unknown scenario"):
        aryl.sim.scenario(jobs, "Basic")
