"""The documentation and packaging checks: dangling references, the CLI reference,
the docs site's link rewriting, the sdist's contents and the shipped licences.

The checks of the source tree skip when the tests run outside a checkout (as
scripts/build-wheel runs them against the installed wheel).

check-refs: ignore-file (the dangling references below are planted on purpose)
"""

import argparse
import importlib.util
import subprocess
import sys
import tarfile
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
in_checkout = pytest.mark.skipif(
    not (ROOT / "scripts" / "check-refs").exists() or not (ROOT / ".git").exists(),
    reason="needs the source checkout",
)


def _load(name, path):
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def check_refs():
    return _load("check_refs", ROOT / "scripts" / "check-refs")


@pytest.fixture(scope="module")
def cli_reference():
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    try:
        return _load("cli_reference", ROOT / "docs" / "_hooks" / "cli_reference.py")
    finally:
        sys.path.remove(str(ROOT / "docs" / "_hooks"))


def _tree(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return sorted(files)


@in_checkout
def test_the_checker_finds_planted_dangling_references(check_refs, tmp_path):
    files = _tree(
        tmp_path,
        {
            "README.md": "See [the model](docs/model.md) and DESIGN.md §4.\n"
            "Data: `python/aryl/data/README.md`; https://x.org/a/b.md\n",
            "docs/model.md": "[README](../README.md), [gone](../docs/gone.md)\n",
            "python/aryl/data/README.md": "Licences: `pollux/LICENSE`.\n",
            "python/aryl/data/pollux/LICENSE": "Apache-2.0\n",
            "cpp/core/src/sim/rounds.cpp": "// src/sim/rounds.cpp, sim/missing.hpp\n",
            "python/aryl/x.py": '"""Reads ../shared/traces/README.md."""\n'
            "# the traces: /work/shared/traces/jobs.csv\n"
            "# output: aryl-results/summary.csv\n",
        },
    )
    found = {(d.source, d.target) for d in check_refs.check(tmp_path, files)}
    assert found == {
        ("README.md", "DESIGN.md"),
        ("docs/model.md", "../docs/gone.md"),
        ("cpp/core/src/sim/rounds.cpp", "sim/missing.hpp"),
        ("python/aryl/x.py", "../shared/traces/README.md"),
        ("python/aryl/x.py", "/work/shared/traces/jobs.csv"),
    }


@in_checkout
def test_the_checker_exits_nonzero_and_names_the_line(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "README.md").write_text("Intro.\n\nRead DESIGN.md first.\n")
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check-refs"), str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stdout == "README.md:3: DESIGN.md is not in the repository\n"


@in_checkout
def test_the_repository_has_no_dangling_references(check_refs):
    assert [str(d) for d in check_refs.check(ROOT)] == []


@in_checkout
def test_cli_reference_covers_every_command_option_and_choice(cli_reference):
    text = cli_reference.render()
    top = cli_reference.parser()
    commands = cli_reference.subcommands(top)
    assert set(commands) >= {"compare", "simulate", "sweep", "demo"}
    for name, command in {"": top, **commands}.items():
        title = f"## `aryl {name}`" if name else "## `aryl`"
        assert title in text
        section = text.split(title)[1].split("\n## ")[0]
        for action in command._actions:
            if action.help == argparse.SUPPRESS or isinstance(
                action, argparse._SubParsersAction
            ):
                continue
            for option in action.option_strings:
                assert f"`{option}" in section, (name, option)
            for choice in action.choices or []:
                assert f"`{choice}`" in section, (name, choice)


@in_checkout
def test_cli_reference_is_the_page_the_site_shows():
    page = (ROOT / "docs" / "cli.md").read_text()
    assert "<!-- aryl-cli-reference -->" in page


@in_checkout
def test_site_links_point_at_the_pages_that_show_the_files():
    pytest.importorskip("mkdocs")
    hooks = _load("aryl_docs_hooks", ROOT / "docs" / "_hooks" / "hooks.py")
    assert hooks._rewrite("docs/model.md#2-jobs", "index.md") == "model.md#2-jobs"
    assert hooks._rewrite("benchmarks/README.md", "index.md") == "benchmarks.md"
    assert (
        hooks._rewrite("notebooks/01-quick-tour.ipynb", "index.md")
        == "notebooks/01-quick-tour.ipynb"
    )
    assert hooks._rewrite("../traces.md", "api/aryl.md") == "../traces.md"
    assert hooks._rewrite("../../README.md", "api/aryl.md") == "../index.md"
    assert hooks._rewrite("https://x.org/a.md", "index.md") == "https://x.org/a.md"
    assert hooks._rewrite("scripts/setup", "index.md") == "scripts/setup"


@in_checkout
def test_sdist_holds_the_package_and_no_build_outputs(tmp_path):
    pytest.importorskip("scikit_build_core")
    build = (
        "import sys; from scikit_build_core.build import build_sdist; "
        "print(build_sdist(sys.argv[1]))"
    )
    name = subprocess.run(
        [sys.executable, "-c", build, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    with tarfile.open(tmp_path / name) as sdist:
        members = [m.split("/", 1)[1] for m in sdist.getnames() if "/" in m]
    assert {
        "pyproject.toml",
        "CMakeLists.txt",
        "LICENSE",
        "README.md",
        "python/aryl/data/pollux/LICENSE",
        "python/aryl/data/README.md",
        "cmake/FetchDeps.cmake",
    } <= set(members)
    outputs = (
        "build/",
        "wheelhouse/",
        "dist/",
        "aryl-results/",
        ".venv/",
        "site/",
        "benchmarks/results/",
    )
    assert [m for m in members if m.startswith(outputs) or "__pycache__" in m] == []
    assert not any(m.endswith(".so") for m in members)


def test_the_package_ships_its_data_with_the_licences():
    data = resources.files("aryl") / "data"
    for name in (
        "README.md",
        "pollux/LICENSE",
        "itp_cluster04_jobs.csv.gz",
        "alibaba2018_cpu_load_5min.csv.gz",
    ):
        assert (data / name).is_file(), name
    readme = (data / "README.md").read_text()
    assert "MIT" in readme and "CC-BY-4.0" in readme and "Apache-2.0" in readme
