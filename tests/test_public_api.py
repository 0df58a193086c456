"""The package re-exports its public API, and ``__all__`` lists exactly what it exports."""

from __future__ import annotations

import handoffs_runtime


def test_all_lists_every_public_name_and_each_resolves() -> None:
    public = {n for n in vars(handoffs_runtime) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(handoffs_runtime, n)).__name__ == "module"}
    assert set(handoffs_runtime.__all__) == public - modules
    for name in handoffs_runtime.__all__:
        assert getattr(handoffs_runtime, name) is not None
