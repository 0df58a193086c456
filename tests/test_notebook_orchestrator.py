"""notebooks/04_orchestrator_workers.ipynb runs from top to bottom (its cells assert what they show)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "04_orchestrator_workers.ipynb"


def test_orchestrator_notebook_runs_and_shows_42() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    errors = [
        o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert errors == []
    printed = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    assert "<stdout>42\n</stdout>" in printed
    assert "timed out after 1 s" in printed
