"""The notebooks in notebooks/: committed without outputs, executed, showing their plots.

Each runs in a fresh IPython kernel (nbclient), as a user would open it, with the sweep cache
in a temporary folder; a cell that raises fails the test, and every notebook must display at
least one figure inline (image/png) with no stderr warning.
"""

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
