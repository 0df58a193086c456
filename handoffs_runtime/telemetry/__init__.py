"""OpenTelemetry traces and metrics of turns, agents, model calls, tools and handoffs.

Off by default and free when off: with no ``Telemetry`` given to ``register_team`` and none installed
(:func:`install`), nothing is wrapped. With one, the team's models, tools and agents are wrapped (see
:mod:`.instrument`); :func:`telemetry_from_environment` builds one from the standard ``OTEL_*``
variables (needs the ``otel`` extra).

Example::

    from opentelemetry.sdk.trace import TracerProvider
    telemetry = Telemetry(tracer_provider=TracerProvider())
    await register_team(runtime, team, model=model, channel=channel, telemetry=telemetry)
"""

from __future__ import annotations

from handoffs_runtime.telemetry.conventions import CAPTURE_CONTENT_ENV
from handoffs_runtime.telemetry.core import Telemetry
from handoffs_runtime.telemetry.installed import install, installed
from handoffs_runtime.telemetry.setup import telemetry_from_environment

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "Telemetry",
    "install",
    "installed",
    "telemetry_from_environment",
]
