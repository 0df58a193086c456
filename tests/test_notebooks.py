"""Every notebook under notebooks/ runs from top to bottom on the installed package and shows its claims."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))

EXPECTED = {
    "01_handoffs.ipynb": [
        "Done: look up item → item_132612938; execute refund → success",
        "HumanAgent › Hi",
        "resuming session durable-session with ACME repairs",
    ],
    "02_custom_handoffs.ipynb": ["handoff loop stopped", "because 'Please help me solve"],
    "03_distributed.ipynb": [
        "↪ ACME repairs has joined",
        "execute refund → success",
        "ACME operator is not available right now",
        "exited with 0",
    ],
    "04_orchestrator_workers.ipynb": ["<stdout>42\n</stdout>", "timed out after 1 s"],
}
"""Text each notebook must print, so a notebook that runs but shows the wrong thing fails."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert [o for o in outputs if o.output_type == "error"] == []
    printed = "".join(o.get("text", "") for o in outputs)
    for expected in EXPECTED.get(path.name, []):
        assert expected in printed, f"{path.name} did not print {expected!r}"
