"""``ldpcollect report``: perturb records on this machine and print a ready-to-POST body.

For people who try the REST API with curl: they cannot perturb a record by hand, and a
report must carry the collection's config hash. The command fetches the public config,
perturbs each record given as JSON with the SDK (the raw values never leave this
process), and prints ``{"reports": [...]}`` for ``POST .../reports``. It spends the
device's privacy like any client without a ledger: each printed report is one
contribution of the record's ε.

A record that cannot be reported is one line naming it: ``record N`` counts the records
given, and one read from stdin also names its line there (``record 3 (stdin line 5)``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ldp_shared.errors import InvalidRecordError
from ldp_shared.wire.reports import MAX_BATCH, ReportBatch

STDIN = "-"


def add_report_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report URL COLLECTION RECORD...`` to the sub-commands."""
    report = commands.add_parser(
        "report",
        help="perturb records locally and print a report body to POST with curl",
        description="Fetch a collection's public config, perturb each RECORD (a JSON object,"
        " or '-' to read one JSON object per line from stdin) and print"
        ' {"reports": [...]} for POST /v1/collections/COLLECTION/reports.',
    )
    report.add_argument("url", help="the aggregator's base URL, e.g. http://localhost:8000")
    report.add_argument("collection", help="the collection's name")
    report.add_argument("records", nargs="+", metavar="RECORD", help="a record as JSON, or -")


@dataclass(frozen=True)
class GivenRecord:
    """A record as parsed, and where it came from (for the error that names it)."""

    where: str
    record: dict[str, Any]


def _numbered_lines(texts: Sequence[str]) -> Iterator[tuple[str, int | None]]:
    """Each RECORD argument, or each line of stdin for ``-``, with its stdin line number."""
    for text in texts:
        if text == STDIN:
            yield from ((line, number) for number, line in enumerate(sys.stdin, 1))
        else:
            yield text, None


def parse_records(texts: Sequence[str]) -> list[GivenRecord]:
    """The JSON objects given as RECORD arguments and on stdin (``-``), blank lines skipped."""
    records: list[GivenRecord] = []
    for line, stdin_line in _numbered_lines(texts):
        if not line.strip():
            continue
        where = f"record {len(records) + 1}"
        if stdin_line is not None:
            where += f" (stdin line {stdin_line})"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidRecordError(
                f"{where}: not valid JSON ({error.msg} at column {error.colno})"
            ) from None
        if not isinstance(record, dict):
            raise InvalidRecordError(f"{where}: must be a JSON object, got {line.strip()!r}")
        records.append(GivenRecord(where, record))
    if not records:
        raise InvalidRecordError(
            "no records on stdin (write one JSON object per line)"
            if STDIN in texts
            else "no records: every RECORD is blank"
        )
    return records


_BATCH_INDEX = re.compile(r"^record \d+\b")


def name_record(where: str, detail: str) -> str:
    """The SDK's message about one record, named as the command counts records.

    The SDK privatizes the record alone, so a message that names it by its index in
    that batch ("record 0: missing attributes ...") gets ``where`` in place of that
    index, not a second number ("record 1: record 0: ..."); any other message is
    prefixed with ``where``.
    """
    if _BATCH_INDEX.match(detail):
        return _BATCH_INDEX.sub(where, detail, count=1)
    return f"{where}: {detail}"


def run_report(args: argparse.Namespace) -> int:
    """Print the perturbed reports of the given records as one upload body."""
    from ldp_client import LDPClient

    records = parse_records(args.records)
    if len(records) > MAX_BATCH:
        raise InvalidRecordError(
            f"{len(records):,} records: one upload body holds at most {MAX_BATCH:,} reports;"
            f" give them in parts (for example `split -l {MAX_BATCH}` of a file read with -)"
        )
    reports = []
    with LDPClient(args.url) as client:
        for given in records:
            try:
                reports.append(client.privatize(args.collection, given.record))
            except InvalidRecordError as error:
                raise InvalidRecordError(name_record(given.where, error.detail)) from None
    print(ReportBatch(reports=reports).model_dump_json())
    return 0
