"""The ``handoffs`` command: the parser, the logging, and the one place errors become exit status 2.

Thin: each command (one module here each) declares its options and sets ``run``, which calls the
library; the options several commands share are declared once, in ``handoffs_runtime.cli.options``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import version

from handoffs_runtime.cli import (
    a2a,
    chat,
    credentials,
    graph,
    helptext,
    host,
    serve,
    sessions,
    temporal,
    worker,
)
from handoffs_runtime.errors import HandoffsError
from handoffs_runtime.models.redaction import install_redaction
from handoffs_runtime.text import PrintableFormatter, printable

__version__ = version("handoffs-runtime")


def parser() -> argparse.ArgumentParser:
    """Every command and its options."""
    handoffs = argparse.ArgumentParser(
        prog="handoffs", description="A multi-agent handoffs runtime on autogen-core."
    )
    handoffs.add_argument("--version", action="version", version=f"handoffs-runtime {__version__}")
    sub = handoffs.add_subparsers(dest="command", required=True)
    for command in (chat, graph, sessions, serve, host, worker, temporal, credentials, a2a):
        command.add_parser(sub)
    helptext.describe(sub.choices)
    return handoffs


def main(argv: Sequence[str] | None = None) -> int:
    handoffs = parser()
    args, unknown = handoffs.parse_known_args(argv)
    if unknown:  # said by the command's own parser, with its usage (argparse's top level would show its own)
        _command_parser(handoffs, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    _configure_logging(getattr(args, "verbose", 0))
    try:
        status: int = args.run(args)
    except HandoffsError as exc:
        print(f"handoffs: {printable(str(exc))}", file=sys.stderr)
        return 2
    return status


def _command_parser(handoffs: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command (and action: ``sessions export``) that ``args`` were parsed by."""
    found = handoffs
    while True:
        sub = next((a for a in found._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or name not in sub.choices:
            return found
        found = sub.choices[name]


def _configure_logging(verbose: int) -> None:
    level = {0: logging.CRITICAL, 1: logging.WARNING}.get(verbose, logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    install_redaction()  # the API key and tokens never reach the log, whatever echoes them
    if verbose < 2:
        logging.getLogger("autogen_core").setLevel(logging.ERROR if verbose else logging.CRITICAL)


if __name__ == "__main__":
    sys.exit(main())
