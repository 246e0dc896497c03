"""The house's direction (scripts/import-graph): an import against FLOORS fails the check."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "import-graph"


def check(package: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *flags, str(package)],
        capture_output=True,
        text=True,
    )


def copy_of_package(tmp_path: Path) -> Path:
    package = tmp_path / "aryl"
    shutil.copytree(
        ROOT / "python" / "aryl",
        package,
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "data"),
    )
    return package


def test_the_landed_package_follows_the_floors():
    done = check(ROOT / "python" / "aryl")
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_engine_module_importing_a_study_fails(tmp_path):
    package = copy_of_package(tmp_path)
    with open(package / "engine" / "result.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _later():\n    from ..studies import verdict  # noqa\n")
    done = check(package)
    assert done.returncode == 1
    assert "aryl.engine.result -> aryl.studies.verdict" in done.stdout
    assert "'engine' sits below 'studies'" in done.stdout


def test_a_room_on_no_floor_fails(tmp_path):
    package = copy_of_package(tmp_path)
    (package / "newroom.py").write_text(
        "from .model import Job  # noqa\n", encoding="utf-8"
    )
    done = check(package)
    assert done.returncode == 1
    assert "room 'newroom' is on no floor" in done.stdout


def test_the_docs_map_is_the_scripts_map():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    printed = subprocess.run(
        [sys.executable, str(SCRIPT), "--map"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed in text
