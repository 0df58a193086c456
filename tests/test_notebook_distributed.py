"""notebooks/03_distributed.ipynb runs top to bottom: a host and two workers started from the notebook."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parent.parent / "notebooks" / "03_distributed.ipynb"


def test_distributed_notebook_runs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert [o for o in outputs if o.output_type == "error"] == []
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "TriageAgent handed the conversation to IssuesAndRepairsAgent" in text
    assert "execute refund → success" in text
    assert "HumanAgent is not available right now" in text
    assert text.count("exited with 0") == 3
