"""``ldpcollect frequencies`` and ``ldpcollect heavy-hitters``: an analyst's two questions
about a categorical or open-domain attribute, asked of a running aggregator with the SDK.

Both print a table (value, estimate, standard error, interval) or, with ``--json``, the
API's answer as one JSON object. The analyst token comes from ``--analyst-token`` or
``$LDPCOLLECT_ANALYST_TOKEN``.
"""

from __future__ import annotations

import argparse
import os
import unicodedata
from collections.abc import Sequence

from ldp_shared.errors import AuthenticationError
from ldp_shared.wire.releases import FrequencyResult, HeavyHittersResult

QUERY_COMMANDS = ("frequencies", "heavy-hitters")


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument("url", help="the aggregator's base URL, e.g. http://localhost:8000")
    command.add_argument("collection", help="the collection's name")
    command.add_argument("attribute", help="the attribute to estimate")
    command.add_argument(
        "--analyst-token",
        default=os.environ.get("LDPCOLLECT_ANALYST_TOKEN"),
        help="the aggregator's analyst token (default: $LDPCOLLECT_ANALYST_TOKEN)",
    )
    command.add_argument(
        "--confidence", type=float, default=0.95, help="of the intervals (default 0.95)"
    )
    command.add_argument("--json", action="store_true", help="print the API's JSON answer")


def add_query_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``frequencies`` and ``heavy-hitters`` to the sub-commands."""
    frequencies = commands.add_parser(
        "frequencies",
        help="estimate an attribute's frequencies (of named values, for an open domain)",
        description="Frequencies of ATTRIBUTE with standard errors and intervals: of its"
        " whole domain, or of the values named with --values (required for an open domain).",
    )
    _common(frequencies)
    frequencies.add_argument(
        "--values",
        nargs="+",
        metavar="VALUE",
        help="estimate only these values (each one argument; commas need no escaping here)",
    )
    hitters = commands.add_parser(
        "heavy-hitters",
        help="find the most frequent values nobody listed (a pem attribute)",
        description="The K most frequent values of an open-domain ATTRIBUTE (mechanism pem),"
        " found from the collection's statistics, with intervals and the detection threshold.",
    )
    _common(hitters)
    hitters.add_argument("-k", type=int, default=20, help="how many values (default 20)")


def shown(value: str) -> str:
    """``value`` safe to print on a terminal: devices choose an open domain's strings, so
    a control character (an escape sequence, a newline, NUL) is written as its escape, and
    so is a backslash, which keeps the text unambiguous."""
    if value.isprintable() and "\\" not in value:
        return value
    return "".join("\\\\" if c == "\\" else c if c.isprintable() else repr(c)[1:-1] for c in value)


def columns_of(text: str) -> int:
    """The terminal columns ``text`` takes: two for a wide (CJK, emoji) character, none
    for a combining mark."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def format_rows(result: FrequencyResult | HeavyHittersResult) -> str:
    """The estimates as an aligned table, one value a line."""
    values = [shown(str(v)) for v in result.values]
    width = max([len("value"), *(columns_of(v) for v in values)])
    level = f"{result.confidence:.0%} interval"
    lines = [f"{'value':<{width}}  {'estimate':>9}  {'stderr':>8}  {level}"]
    for value, est, se, low, high in zip(
        values,
        result.estimate,
        result.stderr,
        result.ci_low,
        result.ci_high,
        strict=True,
    ):
        pad = " " * (width - columns_of(value))
        lines.append(f"{value}{pad}  {est:>9.5f}  {se:>8.5f}  [{low:.5f}, {high:.5f}]")
    return "\n".join(lines)


def format_heavy_hitters(result: HeavyHittersResult) -> str:
    """The table, then what the threshold means."""
    found = format_rows(result) if result.values else "(no value found yet)"
    return (
        f"{result.attribute} of {result.collection}: {result.n_reports:,} reports,"
        f" ε = {result.epsilon:g}\n{found}\n"
        f"detection threshold {result.threshold:.5f}: a value at least this frequent is found"
        f" with probability ≥ {1 - result.miss:.0%}; the list holds a value nobody holds with"
        f" probability ≤ {result.false_discovery:.0%}"
    )


def _values(given: Sequence[str] | None) -> list[str | int] | None:
    return None if given is None else list(given)


def run_query(args: argparse.Namespace) -> int:
    """Ask the aggregator and print the answer."""
    from ldp_client import LDPClient

    if not args.analyst_token:
        raise AuthenticationError(
            f"{args.command} needs --analyst-token (or LDPCOLLECT_ANALYST_TOKEN)"
        )
    with LDPClient(args.url, token=args.analyst_token) as client:
        if args.command == "heavy-hitters":
            hitters = client.heavy_hitters(
                args.collection, args.attribute, k=args.k, confidence=args.confidence
            )
            print(hitters.model_dump_json() if args.json else format_heavy_hitters(hitters))
            return 0
        result = client.frequencies(
            args.collection,
            args.attribute,
            confidence=args.confidence,
            values=_values(args.values),
        )
    print(result.model_dump_json() if args.json else format_rows(result))
    return 0
