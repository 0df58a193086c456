"""The one exception tree of handoffs-runtime.

::

    HandoffsError
    ├── TeamConfigError      a team, agent or handoff is misconfigured (raised when the team is built)
    ├── ModelConfigError     the model could not be set up from the given options
    ├── ModelProtocolError   a model server's answer broke the chat-completions protocol (a stream that
    │                        ended before the answer did); the agent tells the person, the session goes on
    ├── ContextOverflowError the latest message is longer than the model can read, even with the earlier
    │                        conversation left out; the agent tells the person, the session goes on
    ├── ScriptError          a scripted test model ran out of steps or has steps left
    ├── StoreError           the session store cannot be opened, read or written
    │   ├── UnknownSessionError   no session with that id in the store
    │   ├── SessionBusyError      another live process holds the session (its lease is in force)
    │   ├── SessionTakenOverError this store lost the session to another holder; it stops writing
    │   ├── StoreConflictError    the session changed between a read and a compare-and-set write
    │   └── CorruptEntryError     a stored transcript entry's body is not what its kind says
    ├── OutputFileError      a file named on the command line cannot or may not be written
    ├── DistributedError     a distributed deployment is misconfigured or its host cannot be reached
    │   ├── AlreadyRunningError   a worker runtime was started twice (a ValueError, as autogen-ext's)
    │   └── OtherTeamError        a front end's team is not the one its host serves
    ├── TelemetryConfigError  tracing or metrics were asked for but cannot be set up
    └── WorkerError          (tools.workers) a worker could not be created or could not answer; the
                             tool that called it turns it into an error result for the model

Bad output from a model is never raised: it becomes a tool result or a message to the person.
"""

from __future__ import annotations


class HandoffsError(Exception):
    """Base class of every error this package raises on purpose."""


class TeamConfigError(HandoffsError, ValueError):
    """A team, agent or handoff is misconfigured; the message says what to change."""


class ModelConfigError(HandoffsError, ValueError):
    """The model options are incomplete or inconsistent; the message says what to set."""


class ModelProtocolError(HandoffsError):
    """A model server's answer broke the protocol, e.g. a stream that ended with no finish reason and no
    ``[DONE]``: a failed call, not an empty answer. Raised inside the model client; never reaches a session.
    """


class ContextOverflowError(HandoffsError):
    """What a turn must send (the person's latest message, and what the turn's tools returned) is longer
    than the model's context even with every earlier message left out. Raised from the server's refusal;
    never reaches a session: the person is told to say it in fewer words."""


class ScriptError(HandoffsError, AssertionError):
    """A scripted model was called more often than scripted, or not as often."""


class StoreError(HandoffsError, RuntimeError):
    """The session store cannot be used (corrupt, locked, newer schema, disk full); nothing overwritten."""


class UnknownSessionError(StoreError, LookupError):
    """No session with that id in the store; ``handoffs sessions list`` shows the ids it holds."""


class SessionBusyError(StoreError):
    """Another live process holds the session; the message names it (pid and host) and how to take over."""


class SessionTakenOverError(StoreError):
    """This store no longer holds the session (another process took it over): nothing was written."""


class StoreConflictError(StoreError):
    """The session gained entries since it was read; nothing was written, read it again and retry."""


class CorruptEntryError(StoreError):
    """A stored entry's body is not what its kind says (a person or a bug wrote over it); the message
    names the session and the entry, and says what to do. Nothing was changed in the store."""

    def __init__(self, session_id: str, seq: int, reason: str) -> None:
        super().__init__(
            f"entry {seq} of session {session_id!r} is damaged in the store ({reason}); the store was left "
            f"as is: repair or remove that entry, or delete the session (`handoffs sessions delete "
            f"{session_id}`)"
        )
        self.session_id = session_id
        self.seq = seq
        self.reason = reason

    def __reduce__(self) -> tuple[type[CorruptEntryError], tuple[str, int, str]]:
        return (type(self), (self.session_id, self.seq, self.reason))


class OutputFileError(HandoffsError, OSError):
    """A file to write exists, is the session store's own, or its directory is missing; nothing written."""


class DistributedError(HandoffsError, RuntimeError):
    """A host, worker or front end is misconfigured or cannot reach its host; the message says what to do.

    A ``RuntimeError``, as autogen-ext's worker runtime raises for the same cases (stop when not running,
    start twice), so handlers written for it catch ours too."""


class AlreadyRunningError(DistributedError, ValueError):
    """``start()`` on a worker runtime that is running; a ``ValueError``, as autogen-ext's worker raises."""


class OtherTeamError(DistributedError):
    """A front end joined a host that serves another team; ``served`` names the host's team."""

    def __init__(self, message: str, *, served: str) -> None:
        super().__init__(message)
        self.served = served


class TelemetryConfigError(HandoffsError, ValueError):
    """Tracing or metrics were asked for (``--trace``, ``OTEL_*``) but cannot be set up; says how to fix."""
