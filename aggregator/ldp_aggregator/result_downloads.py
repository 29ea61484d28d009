"""Results to take away: the CSV (or JSON) of a released result, the same for the API's
analysis routes and the dashboard's download links.

The CSV's columns are :func:`ldp_shared.tabular.columns` of the result, the columns of the
SDK's ``to_frame()``, so the three agree: one header row, then one row per value, rule,
period or point. A cell holding a set (an itemset's items) or a list is its members
joined by ``"; "``; a missing or non-finite number is an empty cell; a date is ISO 8601.
Every text cell is safe to open in a spreadsheet (:func:`spreadsheet_cell`).

An API route answers CSV when asked with ``?format=csv`` or with ``Accept: text/csv``
(preferred over ``application/json``); JSON stays the default.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from ldp_shared import tabular

CSV_MEDIA_TYPE = "text/csv"

ResultT = TypeVar("ResultT", bound=BaseModel)

FormatParam = Annotated[
    Literal["json", "csv"] | None,
    Query(
        alias="format",
        description=(
            "json (the default) or csv: one header row, then one row per value, rule,"
            " period or point (the columns of the SDK's to_frame()); `Accept: text/csv`"
            " asks for CSV too"
        ),
    ),
]
"""The ``format`` query parameter of the analysis routes."""

CSV_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {CSV_MEDIA_TYPE: {"schema": {"type": "string"}}}}
}
"""The OpenAPI entry saying that a route's 200 may also be CSV."""


def spreadsheet_cell(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula starts with a quote instead."""
    if isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r")):
        return "'" + value
    return value


def csv_cell(value: Any) -> Any:
    """One cell: a set or list as its members joined by ``"; "``, nothing for a missing
    or non-finite number, a date in ISO 8601, text made spreadsheet-safe."""
    if isinstance(value, frozenset | set):
        value = "; ".join(sorted(str(item) for item in value))
    elif isinstance(value, list | tuple):
        value = "; ".join(str(item) for item in value)
    elif isinstance(value, datetime | date):
        value = value.isoformat()
    elif value is None or (isinstance(value, float) and not math.isfinite(value)):
        value = ""
    return spreadsheet_cell(value)


def csv_response(header: Sequence[str], rows: Iterable[Sequence[Any]], filename: str) -> Response:
    """The attachment ``filename``: ``header``, then ``rows``, each cell by :func:`csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([csv_cell(value) for value in row] for row in rows)
    return Response(
        buffer.getvalue(),
        media_type=f"{CSV_MEDIA_TYPE}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def table_rows(table: tabular.Columns) -> tuple[list[str], list[list[Any]]]:
    """The header and rows of ``table`` (columns of equal length)."""
    header = list(table)
    return header, [list(row) for row in zip(*table.values(), strict=True)]


def result_csv(result: BaseModel, filename: str) -> Response:
    """``result``'s rows (:func:`ldp_shared.tabular.columns`) as the CSV ``filename``."""
    header, rows = table_rows(tabular.columns(result))
    return csv_response(header, rows, filename)


def results_csv(results: Sequence[BaseModel], key: str, filename: str) -> Response:
    """Several results of one kind in one CSV: each result's rows after a first column
    ``key`` holding that result's field ``key`` (e.g. the attribute of each mean); the
    header is the union of the results' columns, in order of appearance."""
    header: list[str] = []
    tables = [tabular.columns(result) for result in results]
    for table in tables:
        header.extend(name for name in table if name not in header)
    rows = []
    for result, table in zip(results, tables, strict=True):
        length = len(next(iter(table.values()), []))
        for i in range(length):
            cells = [table[name][i] if name in table else None for name in header]
            rows.append([getattr(result, key), *cells])
    return csv_response([key, *header], rows, filename)


def _accepts_csv(accept: str) -> bool:
    """Whether the ``Accept`` header prefers CSV to JSON (by its q-values, then order)."""
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(accept.split(",")):
        media, *params = (piece.strip() for piece in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, number = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(number)
                except ValueError:
                    quality = 0.0
        ranked.append((-quality, position, media.lower()))
    for quality, _position, media in sorted(ranked):
        if quality == 0:
            return False
        if media == CSV_MEDIA_TYPE:
            return True
        if media in ("application/json", "application/*", "*/*"):
            return False
    return False


def wants_csv(request: Request, fmt: str | None) -> bool:
    """CSV for ``?format=csv``, JSON for ``?format=json``; else as ``Accept`` prefers."""
    if fmt is not None:
        return fmt == "csv"
    return _accepts_csv(request.headers.get("accept", ""))


def answer(request: Request, fmt: str | None, result: ResultT, filename: str) -> ResultT | Response:
    """``result`` itself (JSON through the route's model) or its CSV ``filename``."""
    if wants_csv(request, fmt):
        return result_csv(result, filename)
    return result


def filename(*parts: str, ext: str = "csv") -> str:
    """A download's file name from its parts (collection, attribute, what): characters
    other than letters, digits, ``-``, ``_`` and ``.`` become ``_``."""
    text = "-".join(part for part in parts if part)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return f"{safe}.{ext}"
