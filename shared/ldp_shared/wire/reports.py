"""Reports: what a device sends, and what the aggregator answers for each.

A report carries only a client-chosen random id, the config hash and the packed
perturbed bits (base64). There is no field in which a raw value could travel.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Literal

from pydantic import Field

from ldp_shared.errors import InvalidReportError
from ldp_shared.request_model import RequestModel
from ldp_shared.wire.base import WireModel

__all__ = [
    "MAX_BATCH",
    "REPORT_ID_PATTERN",
    "BatchResult",
    "Report",
    "ReportBatch",
    "ReportOutcome",
    "ReportStatus",
    "decode_bits",
    "encode_bits",
    "new_report_id",
]

REPORT_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"
MAX_BATCH = 10_000


def new_report_id() -> str:
    """A fresh random report id (128 bits, URL-safe base64)."""
    return secrets.token_urlsafe(16)


def encode_bits(packed: bytes) -> str:
    """Standard base64 (RFC 4648 §4, with padding) of a packed report."""
    return base64.b64encode(packed).decode("ascii")


def decode_bits(text: str) -> bytes:
    """Strict inverse of :func:`encode_bits`; :class:`InvalidReportError` on anything else.

    Besides the alphabet and padding, the encoding must be canonical (RFC 4648 §3.5): the
    unused bits before the padding are zero, so each byte string has one accepted text.
    """
    try:
        encoded = text.encode("ascii")
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise InvalidReportError("bits are not valid base64") from None
    if base64.b64encode(raw) != encoded:
        raise InvalidReportError("bits are not canonical base64 (padding bits are set)")
    return raw


class Report(RequestModel):
    """One perturbed record.

    The members' types are the request's shape (a batch with a report of another shape
    is refused whole); their values are judged report by report, each answering an
    outcome of its own (``id`` must match :data:`REPORT_ID_PATTERN`).
    """

    id: str = Field(description="client-chosen random id; retries reuse it")
    config_hash: str = Field(description="the collection's config hash")
    bits: str = Field(description="packed perturbed bits, canonical base64 with padding")


class ReportBatch(RequestModel):
    reports: list[Report] = Field(min_length=1, max_length=MAX_BATCH)


ReportStatus = Literal["accepted", "duplicate", "rejected"]


class ReportOutcome(WireModel):
    id: str
    status: ReportStatus
    reason: str | None = None


class BatchResult(WireModel):
    accepted: int
    duplicate: int
    rejected: int
    outcomes: list[ReportOutcome]
