"""The command line's layers: only the commands hold the argparse Namespace."""

import ast
import inspect
from pathlib import Path

import aryl.cli
from aryl import sim, studies
from aryl.cli import inputs, output
from aryl.cli.console import Console
from aryl.cli.inputs import cluster_of, config_fields
from aryl.defaults import DEFAULT_GPU_SPEED

CLI = Path(aryl.cli.__file__).parent


def test_inputs_and_output_take_values_not_the_namespace():
    for module in (inputs, output):
        source = inspect.getsource(module)
        assert "Namespace" not in source and "args." not in source, module.__name__


def test_the_commands_import_no_private_names_from_the_cli_package():
    for name in ("commands.py", "replicated.py", "options.py"):
        tree = ast.parse((CLI / name).read_text())
        private = [
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1
            for alias in node.names
            if alias.name.startswith("_")
        ]
        assert not private, (name, private)


def test_config_fields_set_only_what_is_given():
    assert config_fields(0.1) == {"headroom": 0.1}
    given = config_fields(0.0, 10.0, [{"T4": 0.5}, {"T4": 0.25}])
    assert given["lend_hold"] == 10.0
    assert given["gpu_speed"] == {**DEFAULT_GPU_SPEED, "T4": 0.25}


def test_cluster_of_counts_says_it_unless_quiet(capsys):
    cluster = cluster_of(4, "auto", None, 0.8, {}, Console())
    assert cluster == sim.Cluster(4, studies.sizing.inference_count(4))
    assert "Cluster: 4 training" in capsys.readouterr().out
    cluster_of(4, 2, None, 0.8, {}, Console(quiet=True))
    assert capsys.readouterr().out == ""


def test_console_sends_lines_beside_machine_formats_to_stderr(capsys):
    Console(format="csv").say("hello")
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "hello\n"
