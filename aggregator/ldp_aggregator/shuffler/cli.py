"""``ldpcollect shuffle`` (run the shuffler) and ``ldpcollect sealing-keys rotate`` (the
aggregator's keyring), added to the aggregator's sub-commands.

``shuffle`` imports nothing of the aggregator but this package: it can run as a separate
party with only the shuffler's token and the aggregator's URL.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from ldp_shared.errors import ConfigurationError

__all__ = ["SHUFFLER_COMMANDS", "add_shuffler_commands", "run_shuffler_command"]

SHUFFLER_COMMANDS = ("shuffle", "sealing-keys")
TOKEN_VARIABLE = "LDPCOLLECT_SHUFFLER_TOKEN"


def add_shuffler_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    shuffle = commands.add_parser(
        "shuffle",
        help="run the shuffler: hold sealed reports, forward them in random batches",
    )
    shuffle.add_argument("--aggregator", required=True, help="the aggregator's base URL")
    shuffle.add_argument(
        "--database",
        default="./ldpcollect-shuffler.db",
        help="SQLite file of the held blobs (default: %(default)s)",
    )
    shuffle.add_argument(
        "--min-batch",
        type=int,
        default=100,
        help="forward a collection's blobs once this many are held (default: %(default)s;"
        " the aggregator's LDPCOLLECT_SHUFFLE_MIN_BATCH must not be larger)",
    )
    shuffle.add_argument(
        "--interval", type=float, default=5.0, help="seconds between forwarding rounds"
    )
    shuffle.add_argument(
        "--check-seconds",
        type=float,
        default=30.0,
        help="how long the aggregator's answer on whether a collection takes shuffled"
        " batches is trusted (default: %(default)s)",
    )
    shuffle.add_argument("--host", default="127.0.0.1", help="address to listen on")
    shuffle.add_argument("--port", type=int, default=8100, help="TCP port (default: 8100)")

    keys = commands.add_parser("sealing-keys", help="the aggregator's sealing keyring")
    keys.add_argument(
        "action",
        choices=("init", "rotate", "show"),
        help="init: make a keyring with one key unless there is one, then show it; rotate:"
        " add a new current key; show: list the keys that open reports",
    )
    keys.add_argument(
        "--file",
        help="the keyring (default: $LDPCOLLECT_SEALING_KEYS_FILE or"
        " ./ldpcollect-sealing-keys.json)",
    )
    keys.add_argument(
        "--grace-days",
        type=int,
        default=7,
        help="days the older keys still open reports after a rotation (default: 7)",
    )


def _shuffle(args: argparse.Namespace) -> int:
    import uvicorn

    from ldp_aggregator.shuffler.app import ShufflerSettings, create_shuffler_app

    token = os.environ.get(TOKEN_VARIABLE, "")
    if not token:
        raise ConfigurationError(f"set {TOKEN_VARIABLE} to the token the aggregator expects")
    if args.min_batch < 2:
        raise ConfigurationError(f"--min-batch must be at least 2, got {args.min_batch}")
    if not 0 < args.interval < math.inf:
        raise ConfigurationError(f"--interval must be a finite number > 0, got {args.interval}")
    if not 0 < args.check_seconds < math.inf:
        raise ConfigurationError(
            f"--check-seconds must be a finite number > 0, got {args.check_seconds}"
        )
    settings = ShufflerSettings(
        aggregator_url=args.aggregator,
        token=token,
        database=Path(args.database),
        min_batch=args.min_batch,
        interval=args.interval,
        check_seconds=args.check_seconds,
    )
    print(f"ldpcollect: shuffler at http://{args.host}:{args.port}", file=sys.stderr)
    # no access log, no server or date header: nothing about a sender is written anywhere
    uvicorn.run(
        create_shuffler_app(settings),
        host=args.host,
        port=args.port,
        access_log=False,
        server_header=False,
        date_header=False,
        proxy_headers=False,
    )
    return 0


def _sealing_keys(args: argparse.Namespace) -> int:
    from ldp_aggregator.sealing_keys import ensure_keyring, read_keyring, rotate

    default = os.environ.get("LDPCOLLECT_SEALING_KEYS_FILE", "./ldpcollect-sealing-keys.json")
    path = Path(args.file or default)
    if args.action == "rotate":
        if args.grace_days < 0:
            raise ConfigurationError(f"--grace-days must be >= 0, got {args.grace_days}")
        print(f"ldpcollect: new current sealing key {rotate(path, args.grace_days)}")
        return 0
    # init makes one if there is none; show only reads (no file: one line)
    keyring = ensure_keyring(path) if args.action == "init" else read_keyring(path)
    current = keyring.current().key_id
    for key_id in keyring.opening_keys():
        print(f"{key_id}{'  (current)' if key_id == current else ''}")
    return 0


def run_shuffler_command(args: argparse.Namespace) -> int:
    if args.command == "shuffle":
        return _shuffle(args)
    return _sealing_keys(args)
