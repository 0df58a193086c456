"""The handoffs loop on Temporal: one workflow per session, one activity per agent step.

The workflow (:mod:`.workflow`) holds only small state; the activities (:mod:`.activities`) run the
engine-neutral agent step of :mod:`handoffs_runtime.durable.step`; :mod:`.worker` serves them,
:mod:`.client` sends a person's messages, :mod:`.devserver` runs the pinned dev server.
"""

from handoffs_runtime.durable.temporal.client import TemporalSessions
from handoffs_runtime.durable.temporal.connect import Cluster, TemporalUnreachableError, connect
from handoffs_runtime.durable.temporal.values import Answered
from handoffs_runtime.durable.temporal.worker import run_worker

__all__ = ["Answered", "Cluster", "TemporalSessions", "TemporalUnreachableError", "connect", "run_worker"]
