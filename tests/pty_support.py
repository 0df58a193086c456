"""A pseudo-terminal standing in for a person's terminal: keys typed in, the screen's bytes read out.

Like a real terminal it answers the cursor-position requests (``ESC[6n``) that line editors send.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time

from .cli_support import cli_env

LEFT = "\x1b[D"
UP = "\x1b[A"
CTRL_C = "\x03"
CTRL_D = "\x04"

# Python, started in a session of its own whose controlling terminal is the pseudo-terminal, so that
# Ctrl-C typed there is a signal, as on a person's terminal.
_ON_ITS_TERMINAL = (
    "import os, sys; os.setsid(); os.close(os.open(os.ttyname(0), os.O_RDWR)); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


class Terminal:
    """The person's side (``master``) of a pseudo-terminal of 24 rows and 80 columns."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.screen = b""
        self._seen = 0  # read_until looks for text after this position

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def read_until(self, text: str, timeout: float = 30) -> str:
        """Read until ``text`` appears after the previous match; return what came up to and including it."""
        start = self._seen
        wanted = text.encode()
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(wanted, start)) < 0:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen shows {self.screen[start:]!r}")
            self.read_some(0.1)
        self._seen = found + len(wanted)
        return self.screen[start : self._seen].decode(errors="replace")

    def read_some(self, wait: float) -> bool:
        """Read what is there within ``wait`` seconds; False when nothing came (or the other side closed)."""
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # the other side closed
            return False
        if b"\x1b[6n" in chunk:
            os.write(self.master, b"\x1b[1;1R")
        self.screen += chunk
        return bool(chunk)

    def wait(self, proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
        """Wait for ``proc`` to end, reading (and answering) the screen meanwhile, as a terminal does."""
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running; the screen shows {self.screen[-2000:]!r}")
            self.read_some(0.1)
        return proc.returncode

    def drain(self) -> str:
        """Everything still waiting to be read."""
        while self.read_some(0.2):
            pass
        return self.screen.decode(errors="replace")

    def close(self) -> None:
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)


def start_on(terminal: Terminal, *args: str) -> subprocess.Popen[bytes]:
    """``handoffs ARGS`` with ``terminal`` as its terminal (stdin, stdout, stderr and controlling)."""
    return python_on(terminal, "-m", "handoffs_runtime", *args)


def python_on(terminal: Terminal, *args: str) -> subprocess.Popen[bytes]:
    """``python ARGS`` with ``terminal`` as its terminal (stdin, stdout, stderr and controlling)."""
    return subprocess.Popen(
        [sys.executable, "-c", _ON_ITS_TERMINAL, *args],
        stdin=terminal.slave,
        stdout=terminal.slave,
        stderr=terminal.slave,
        env=cli_env({"TERM": "xterm"}),
    )
