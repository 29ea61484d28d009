"""The ``ldpcollect`` command: ``serve``, ``migrate``, ``demo``, ``simulate``, ``train``,
``report``, ``frequencies``, ``heavy-hitters`` and ``plan`` (the planner, no server).

Why the command lives here: ``demo`` and ``simulate`` drive real clients against real
aggregators, so they need both ``ldp_client`` and ``ldp_aggregator``, while neither of
those may import this package. The one place that can offer all four sub-commands is
therefore the package on top. The aggregator keeps its own part of the command line in
:mod:`ldp_aggregator.cli` (the ``serve`` and ``migrate`` sub-commands, how they run, and
the one-line error reporting); this module adds ``demo`` and ``simulate`` beside them
and hands ``serve`` and ``migrate`` back to that module. ``simulate --periods N`` is the
one simulation that runs no server: a drifting population needs its reports counted in
past days, which a running aggregator never does (it counts each report in the current
period), so it counts them in-process (:mod:`ldp_simulation.drift`). The ``ldpcollect`` console
script points at :func:`main`; ``python -m ldp_aggregator.cli serve`` still runs a
server without this package.

Errors are one readable line on stderr and a non-zero exit status. Each sub-command
imports what it runs only when it runs, so ``ldpcollect --help`` and every sub-command's
``--help`` work on any install, and a sub-command whose extra is missing says which one
to install (:data:`COMMAND_EXTRAS`) instead of failing with a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata

from pydantic import ValidationError

from ldp_aggregator.cli import (
    DESCRIPTION,
    PROG,
    SERVER_COMMANDS,
    SERVER_EXTRAS,
    add_server_commands,
    run_reporting_errors,
    run_server_command,
)
from ldp_shared.errors import AuthenticationError
from ldp_shared.mechanisms.base import mechanism_names, spec_class
from ldp_shared.mechanisms.gradient_mechanisms import gradient_mechanism_names
from ldp_simulation.plan_command import add_plan_command
from ldp_simulation.query_command import QUERY_COMMANDS, add_query_commands
from ldp_simulation.report_command import add_report_command

COMMAND_EXTRAS: Mapping[str, str] = {
    **SERVER_EXTRAS,
    "report": "client",
    "frequencies": "client",
    "heavy-hitters": "client",
    "demo": "demo",
    "simulate": "demo",
    "train": "demo",
}
"""The extra (``pip install -e ".[extra]"``) each sub-command needs beyond the core."""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _confidence(text: str) -> float:
    value = _positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return value


MIN_DEMO_CLIENTS = 10_000
"""Below this, the demo's collections would release nothing: each attribute of the
naive-Bayes and numeric collections needs 1,000 reports (a third or less of the clients
under the ``sample`` budget)."""


def _demo_clients(text: str) -> int:
    value = _positive_int(text)
    if value < MIN_DEMO_CLIENTS:
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_DEMO_CLIENTS:,}: below that the demo's collections release"
            f" nothing (each attribute needs 1,000 reports), got {value:,}"
        )
    return value


def frequency_demo_mechanisms() -> list[str]:
    """The registered mechanisms the frequency demo can run: those whose estimates are a
    distribution and whose spec needs nothing but a domain (``oue``, ``sue``, ``grr``)."""
    usable = []
    for name in mechanism_names():
        candidate = spec_class(name)
        if not candidate.is_distribution or not candidate.takes_budget:
            continue
        try:
            candidate.model_validate({"name": "probe", "mechanism": name, "domain": ["a", "b"]})
        except ValidationError:
            continue
        usable.append(name)
    return usable


def installed_version() -> str:
    """The installed ``ldpcollect`` distribution's version (what ``--version`` prints)."""
    try:
        return metadata.version("ldpcollect")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        from ldp_shared import __version__

        return f"{__version__} (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The whole ``ldpcollect`` command line."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_server_commands(commands)
    add_report_command(commands)
    add_query_commands(commands)
    add_plan_command(commands)

    demo = commands.add_parser("demo", help="simulate 100,000 clients against a real aggregator")
    simulate = commands.add_parser(
        "simulate",
        help="simulate a fleet of clients against running aggregators, or (--periods N) a"
        " population that drifts over N days, counted in-process, against the truth",
    )
    where = simulate.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--url",
        action="append",
        help="an aggregator's base URL; repeat to deal batches to several replicas",
    )
    where.add_argument(
        "--periods",
        type=_positive_int,
        help="instead of --url: N days of a population whose os shares and minutes of use"
        " drift, the --clients spread evenly over the days, each day's reports counted in"
        " that day by an aggregator run in-process on a temporary SQLite file (a running"
        " server counts every report today); prints the trend against the truth",
    )
    _add_token_options(simulate, "create the demo collections")
    simulate.add_argument(
        "--fresh",
        action="store_true",
        help="delete the demo collections first, with all their reports, models and jobs,"
        " and create them again (admin token): a rerun with another ε, mechanism or"
        " budget starts clean instead of failing on 'exists with another configuration'",
    )
    for sub in (demo, simulate):
        sub.add_argument(
            "--epsilon", type=_positive_float, default=4.0, help="ε per record (default 4)"
        )
        sub.add_argument(
            "--clients",
            type=_demo_clients,
            default=100_000,
            help=f"at least this many clients (default 100,000; at least {MIN_DEMO_CLIENTS:,})",
        )
        sub.add_argument(
            "--mechanism",
            choices=frequency_demo_mechanisms(),
            default="oue",
            help="how the car data's frequencies are perturbed (default: %(default)s); the"
            " naive Bayes collection uses it when it is a unary encoding (oue, sue) and OUE"
            " otherwise, since it reports each feature jointly with the class, which only"
            " unary encoding does; the Adult collection picks its own mechanisms",
        )
        sub.add_argument(
            "--confidence",
            type=_confidence,
            default=0.95,
            help="level of the frequencies' and means' intervals, in (0, 1) (default: %(default)s)",
        )
        sub.add_argument(
            "--budget",
            choices=["sample", "split"],
            default="sample",
            help="how the naive Bayes and the Adult (means) collections spend ε: one random"
            " attribute per record with all of it (sample, the default) or ε/m on each of"
            " m attributes (split)",
        )
        sub.add_argument(
            "--seed", type=int, default=None, help="seed the clients' noise (simulation only)"
        )
        sub.add_argument(
            "--json", action="store_true", help="print one JSON object instead of tables"
        )
    _add_train_command(commands)
    return parser


def _add_train_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    train = commands.add_parser(
        "train",
        help="a simulated fleet trains a logistic regression from perturbed gradients",
        description="Create a training job on the bundled UCI breast-cancer data and let"
        " DEVICES simulated devices (the training records, replicated) each send one"
        " perturbed gradient or loss report; then score the released model on held-out"
        " records. Without --url it starts its own aggregator on a temporary SQLite file.",
    )
    train.add_argument(
        "--url", action="append", help="a running aggregator's base URL (repeat for replicas)"
    )
    _add_token_options(train, "create the training job")
    train.add_argument(
        "--devices", type=_positive_int, default=10_000, help="devices (default 10,000)"
    )
    train.add_argument(
        "--epsilon", type=_positive_float, default=4.0, help="ε per device (default 4)"
    )
    train.add_argument(
        "--mechanism",
        choices=gradient_mechanism_names(),
        default="sampled-piecewise",
        help="how each device perturbs its gradient (default: %(default)s)",
    )
    train.add_argument(
        "--round-size",
        type=_positive_int,
        default=None,
        help="devices per round (default: planned from the devices and ε)",
    )
    train.add_argument(
        "--rounds",
        type=_positive_int,
        default=None,
        help="rounds of gradient descent (default: planned from the devices and ε)",
    )
    train.add_argument(
        "--concurrency", type=_positive_int, default=16, help="devices at once (default 16)"
    )
    train.add_argument("--seed", type=int, default=None, help="seed the devices' noise")
    train.add_argument("--json", action="store_true", help="print one JSON object")


def _add_token_options(command: argparse.ArgumentParser, admin_does: str) -> None:
    """``--admin-token`` and ``--analyst-token``, read from the environment by default."""
    command.add_argument(
        "--admin-token",
        default=os.environ.get("LDPCOLLECT_ADMIN_TOKEN"),
        help=f"the aggregator's admin token, to {admin_does} (default: $LDPCOLLECT_ADMIN_TOKEN)",
    )
    command.add_argument(
        "--analyst-token",
        default=os.environ.get("LDPCOLLECT_ANALYST_TOKEN"),
        help="the aggregator's analyst token, to read the results"
        " (default: $LDPCOLLECT_ANALYST_TOKEN)",
    )


def _train(args: argparse.Namespace) -> int:
    from ldp_simulation.train_fleet import (
        TrainOptions,
        format_result,
        run_training_demo,
        simulate_training,
    )

    options = TrainOptions(
        devices=args.devices,
        epsilon=args.epsilon,
        mechanism=args.mechanism,
        round_size=args.round_size,
        rounds=args.rounds,
        concurrency=args.concurrency,
        seed=args.seed,
        progress=not args.json or sys.stderr.isatty(),
    )
    if args.url:
        if not args.admin_token or not args.analyst_token:
            raise AuthenticationError(
                "train --url needs --admin-token and --analyst-token "
                "(or LDPCOLLECT_ADMIN_TOKEN and LDPCOLLECT_ANALYST_TOKEN)"
            )
        result = simulate_training(args.url, args.admin_token, args.analyst_token, options)
    else:
        result = run_training_demo(options)
    print(json.dumps(result.to_json()) if args.json else format_result(result))
    return 0


def _drift(args: argparse.Namespace) -> int:
    from ldp_simulation.drift import DriftOptions, format_drift, simulate_drift

    options = DriftOptions(
        periods=args.periods,
        clients=args.clients,
        epsilon=args.epsilon,
        mechanism=args.mechanism,
        confidence=args.confidence,
        budget=args.budget,
        seed=args.seed,
    )
    result = simulate_drift(options)
    print(json.dumps(result.to_json()) if args.json else format_drift(result, f"{PROG} simulate"))
    return 0


def _demo(args: argparse.Namespace) -> int:
    if getattr(args, "periods", None) is not None:
        return _drift(args)
    from ldp_simulation.demo import format_table, run_demo, simulate
    from ldp_simulation.fleet import DemoOptions
    from ldp_simulation.progress import ProgressBars

    options = DemoOptions(
        epsilon=args.epsilon,
        clients=args.clients,
        mechanism=args.mechanism,
        confidence=args.confidence,
        seed=args.seed,
        budget=args.budget,
        fresh=getattr(args, "fresh", False),
    )
    show_progress = not args.json or sys.stderr.isatty()
    progress = ProgressBars() if show_progress else None
    if args.command == "simulate":
        if not args.admin_token or not args.analyst_token:
            raise AuthenticationError(
                "simulate needs --admin-token and --analyst-token "
                "(or LDPCOLLECT_ADMIN_TOKEN and LDPCOLLECT_ANALYST_TOKEN)"
            )
        result = simulate(args.url, args.admin_token, args.analyst_token, options, progress)
    else:
        result = run_demo(options, progress)
    if progress is not None:
        progress.close()
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(format_table(result, f"{PROG} {args.command}"))
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.command in SERVER_COMMANDS:
        return run_server_command(args)
    if args.command == "report":
        from ldp_simulation.report_command import run_report

        return run_report(args)
    if args.command in QUERY_COMMANDS:
        from ldp_simulation.query_command import run_query

        return run_query(args)
    if args.command == "train":
        return _train(args)
    if args.command == "plan":
        from ldp_simulation.plan_command import run_plan

        return run_plan(args)
    return _demo(args)


def main(argv: Sequence[str] | None = None) -> int:
    """``ldpcollect``: parse the command line, run the sub-command, return the exit status."""
    return run_reporting_errors(_run, build_parser().parse_args(argv), COMMAND_EXTRAS)


if __name__ == "__main__":
    sys.exit(main())
