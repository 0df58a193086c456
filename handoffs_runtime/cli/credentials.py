"""``handoffs credentials create|rotate|renew``: the TLS files and tokens of a distributed deployment.

Each action is a function ``_<action>`` whose docstring is its help; :func:`add_parser` declares it with
one call of :func:`_action` (which says whether it takes ``--host-name``).
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
    _action(actions, _create, host_names=True)
    _action(actions, _rotate).add_argument("--role", choices=ROLES, required=True)
    _action(actions, _renew, host_names=True)


def _action(
    actions: Subcommands, run: Callable[[argparse.Namespace], int], *, host_names: bool = False
) -> argparse.ArgumentParser:
    """The parser of the action ``run`` runs on the credentials in ``DIR`` (named after it, its docstring
    the help); ``host_names``: it takes ``--host-name``."""
    parser = actions.add_parser(run.__name__.removeprefix("_"), help=run.__doc__)
    parser.add_argument("directory", metavar="DIR")
    parser.set_defaults(run=run)
    if host_names:
        parser.add_argument(
            "--host-name",
            action="append",
            default=[],
            metavar="NAME",
            help="a DNS name or IP address workers use to reach the host (repeatable; loopback is always in)",
        )
    return parser


def _create(args: argparse.Namespace) -> int:
    """write ca.pem, host.pem, host.key, worker.token, frontend.token (mode 0600) into DIR"""
    written = create_credentials(args.directory, args.host_name)
    print(f"wrote {', '.join(p.name for p in written)} to {args.directory} (readable by you only)")
    print(
        "the host needs host.pem, host.key, worker.token and frontend.token; each worker ca.pem and "
        "worker.token; each chat front end ca.pem and frontend.token; keep ca.key safe (no process "
        "needs it) for `handoffs credentials renew`"
    )
    return 0


def _rotate(args: argparse.Namespace) -> int:
    """replace one role's token in DIR (then restart who uses it)"""
    path = rotate_token(args.directory, args.role)
    print(f"wrote a new {path.name}: restart the host and every {args.role} with it")
    return 0


def _renew(args: argparse.Namespace) -> int:
    """a new host certificate from the same CA in DIR (tokens kept)"""
    renew_host_certificate(args.directory, args.host_name)
    print(f"wrote a new host.pem and host.key to {args.directory}: restart the host (nothing else)")
    return 0
