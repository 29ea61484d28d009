"""Wire types: what travels between the SDK and the aggregator.

A report carries only a client-chosen random id, the config hash and the packed
perturbed bits (base64). There is no field in which a raw value could travel.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ldp_shared.errors import InvalidReportError

REPORT_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"
MAX_BATCH = 10_000


def new_report_id() -> str:
    """A fresh random report id (128 bits, URL-safe base64)."""
    return secrets.token_urlsafe(16)


def encode_bits(packed: bytes) -> str:
    """Standard base64 (RFC 4648 §4, with padding) of a packed report."""
    return base64.b64encode(packed).decode("ascii")


def decode_bits(text: str) -> bytes:
    """Strict inverse of :func:`encode_bits`; :class:`InvalidReportError` on anything else."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise InvalidReportError("bits are not valid base64") from None


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Report(_Wire):
    """One perturbed record."""

    id: str = Field(max_length=128, description="client-chosen random id; retries reuse it")
    config_hash: str = Field(max_length=128)
    bits: str = Field(max_length=1_000_000, description="packed perturbed bits, base64")


class ReportBatch(_Wire):
    reports: list[Report] = Field(min_length=1, max_length=MAX_BATCH)


ReportStatus = Literal["accepted", "duplicate", "rejected"]


class ReportOutcome(_Wire):
    id: str
    status: ReportStatus
    reason: str | None = None


class BatchResult(_Wire):
    accepted: int
    duplicate: int
    rejected: int
    outcomes: list[ReportOutcome]


class FrequencyResult(_Wire):
    """Frequency estimates of one attribute, as released to an analyst."""

    collection: str
    attribute: str
    mechanism: str
    n_reports: int
    epsilon: float = Field(description="exact ε spent on this attribute per record")
    record_epsilon: float = Field(description="exact ε of a whole record")
    confidence: float
    postprocess: Literal["none", "norm-sub", "simplex"]
    values: list[str]
    estimate: list[float] = Field(description="raw unbiased frequencies (always included)")
    counts: list[float] = Field(description="raw unbiased counts, n_reports · estimate")
    stderr: list[float]
    ci_low: list[float]
    ci_high: list[float]
    postprocessed: list[float] | None = Field(
        default=None, description="the estimate after the requested post-processing"
    )
