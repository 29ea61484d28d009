"""The panels' CSV downloads: one header row, then the rows, every cell safe to open in a
spreadsheet."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from fastapi.responses import Response


def spreadsheet_cell(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula starts with a quote instead."""
    if isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r")):
        return "'" + value
    return value


def csv_response(header: Sequence[str], rows: Iterable[Sequence[Any]], filename: str) -> Response:
    """The attachment ``filename``: ``header``, then ``rows``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([spreadsheet_cell(value) for value in row] for row in rows)
    return Response(
        buffer.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
