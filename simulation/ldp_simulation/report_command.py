"""``ldpcollect report``: perturb records on this machine and print a ready-to-POST body.

For people who try the REST API with curl: they cannot perturb a record by hand, and a
report must carry the collection's config hash. The command fetches the public config,
perturbs each record given as JSON with the SDK (the raw values never leave this
process), and prints ``{"reports": [...]}`` for ``POST .../reports``. It spends the
device's privacy like any client without a ledger: each printed report is one
contribution of the record's ε.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ldp_client import LDPClient
from ldp_shared.errors import InvalidRecordError
from ldp_shared.wire import ReportBatch


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


def _parse_records(texts: list[str]) -> list[dict[str, Any]]:
    lines = [line for text in texts for line in (sys.stdin if text == "-" else [text])]
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidRecordError(f"a record is not valid JSON: {error}") from None
        if not isinstance(record, dict):
            raise InvalidRecordError(f"a record must be a JSON object, got {line.strip()!r}")
        records.append(record)
    return records


def run_report(args: argparse.Namespace) -> int:
    """Print the perturbed reports of the given records as one upload body."""
    records = _parse_records(args.records)
    with LDPClient(args.url) as client:
        reports = client.privatize_many(args.collection, records)
    print(ReportBatch(reports=reports).model_dump_json())
    return 0
