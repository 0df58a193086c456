"""The process's default telemetry, which ``register_team`` uses when it is given none."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from handoffs_runtime.telemetry.core import Telemetry

_installed: Telemetry | None = None


def install(telemetry: Telemetry | None) -> None:
    """Make ``telemetry`` the process's default for ``register_team`` (``None`` switches it off again)."""
    global _installed
    _installed = telemetry


def installed() -> Telemetry | None:
    """The telemetry ``register_team`` uses when it is given none."""
    return _installed
