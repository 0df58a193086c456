"""Durable engines around the same agents: the engine-neutral agent step; Temporal in ``temporal/``.

Nothing here is imported by the in-process or gRPC engines; ``temporal/`` needs the ``[temporal]`` extra.
"""

from handoffs_runtime.durable.fenced import FenceError
from handoffs_runtime.durable.step import AgentSteps, StepOutcome, StepRequest, TransientStepError

__all__ = ["AgentSteps", "FenceError", "StepOutcome", "StepRequest", "TransientStepError"]
