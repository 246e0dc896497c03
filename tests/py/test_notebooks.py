"""The notebooks in notebooks/: committed without outputs, executed, showing their plots.

Each runs in a fresh IPython kernel (nbclient), as a user would open it, with the sweep cache
in a temporary folder; a cell that raises fails the test, and every notebook must display at
least one figure inline (image/png) with no stderr warning. Their prose carries no numbers:
every figure a reader is told is printed by a cell, so text and output cannot disagree.
"""

import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name}: strip the outputs before committing (e.g. `nbstripout`)"
            )


# A number in prose: not inside a word or a name (cluster04, Alibaba-2018), not in `code`.
NUMBER = re.compile(r"(?<![\w.\-/])\d(?:[\d,]*\d)?(?:\.\d+)?%?")
# Numbers that are names, not results: the paper's algorithm, figure and section numbers,
# and the confidence level of an interval.
NAMES = re.compile(r"(?:Algorithm|Figure|Table|Appendix|§)\s*\d+|\b95% interval")


def prose_numbers(text):
    """The numbers a reader would take for results in a markdown cell."""
    text = re.sub(r"`[^`]*`", "", text)  # code spans say what the code does
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    return NUMBER.findall(NAMES.sub("", text))


def test_prose_numbers_are_found():
    assert prose_numbers("makes 5% of the jobs elastic; 24 servers, `iloc[:3000]`") == [
        "5%",
        "24",
    ]
    assert prose_numbers("ITP cluster04, Alibaba-2018, Algorithm 1, Figure 3") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_prose_states_no_number_a_cell_does_not_print(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found = prose_numbers(cell.source)
            assert not found, (
                f"{path.name}, cell {i}: {found} in prose; print it from a code cell "
                "so that it is computed, not written by hand"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_shows_its_plots(path, tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("ARYL_CACHE_DIR", str(tmp_path / "cache"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs), (
        f"{path.name} shows no figure"
    )
    warnings = [
        o.text
        for o in outputs
        if o.output_type == "stream" and o.name == "stderr" and "Warning" in o.text
    ]
    assert not warnings, f"{path.name} warned: {warnings}"
