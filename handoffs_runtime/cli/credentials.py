"""``handoffs credentials create|rotate|renew``: the TLS files and tokens of a distributed deployment.

Each action is a pair: ``_add_<action>`` declares it (through :func:`_action`, which gives it the
directory argument and its runner) and ``_<action>`` runs it; a new action adds one pair and one line
in :func:`add_parser`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from handoffs_runtime.cli.options import Subcommands
from handoffs_runtime.distributed.credentials import (
    ROLES,
    create_credentials,
    renew_host_certificate,
    rotate_token,
)


def add_parser(sub: Subcommands) -> None:
    credentials = sub.add_parser("credentials", help="create or rotate the credentials of a deployment")
    actions = credentials.add_subparsers(dest="credentials_command", required=True)
    _add_create(actions)
    _add_rotate(actions)
    _add_renew(actions)


def _action(
    actions: Subcommands, name: str, *, help_text: str, run: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """The parser of one action on the credentials in ``DIR``."""
    parser = actions.add_parser(name, help=help_text)
    parser.add_argument("directory", metavar="DIR")
    parser.set_defaults(run=run)
    return parser


def _add_create(actions: Subcommands) -> None:
    create = _action(
        actions,
        "create",
        help_text="write ca.pem, host.pem, host.key, worker.token, frontend.token (mode 0600) into DIR",
        run=_create,
    )
    _add_host_names(create)


def _create(args: argparse.Namespace) -> int:
    written = create_credentials(args.directory, args.host_name)
    print(f"wrote {', '.join(p.name for p in written)} to {args.directory} (readable by you only)")
    print(
        "the host needs host.pem, host.key, worker.token and frontend.token; each worker ca.pem and "
        "worker.token; each chat front end ca.pem and frontend.token; keep ca.key safe (no process "
        "needs it) for `handoffs credentials renew`"
    )
    return 0


def _add_rotate(actions: Subcommands) -> None:
    rotate = _action(
        actions,
        "rotate",
        help_text="replace one role's token in DIR (then restart who uses it)",
        run=_rotate,
    )
    rotate.add_argument("--role", choices=ROLES, required=True)


def _rotate(args: argparse.Namespace) -> int:
    path = rotate_token(args.directory, args.role)
    print(f"wrote a new {path.name}: restart the host and every {args.role} with it")
    return 0


def _add_renew(actions: Subcommands) -> None:
    renew = _action(
        actions,
        "renew",
        help_text="a new host certificate from the same CA in DIR (tokens kept)",
        run=_renew,
    )
    _add_host_names(renew)


def _renew(args: argparse.Namespace) -> int:
    renew_host_certificate(args.directory, args.host_name)
    print(f"wrote a new host.pem and host.key to {args.directory}: restart the host (nothing else)")
    return 0


def _add_host_names(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a DNS name or IP address workers use to reach the host (repeatable; loopback is always in)",
    )
