"""Reports: what a device sends, and what the aggregator answers for each.

A report carries only a client-chosen random id, the config hash and the packed
perturbed bits (base64). There is no field in which a raw value could travel.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Annotated, Any, Literal, overload

import numpy as np
from numpy.typing import NDArray
from pydantic import (
    ConfigDict,
    Field,
    TypeAdapter,
    ValidatorFunctionWrapHandler,
    field_serializer,
    field_validator,
)

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
    "ReportRows",
    "ReportStatus",
    "decode_bits",
    "decode_bits_column",
    "encode_bits",
    "ids_match_pattern",
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


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = np.full(256, 64, dtype=np.uint8)  # 64: not a base64 digit
_B64_VALUE[np.frombuffer(_B64_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_ID_CHARACTER = np.zeros(256, dtype=bool)  # the characters of REPORT_ID_PATTERN
_ID_CHARACTER[np.frombuffer(_B64_ALPHABET[:62] + b"_-", np.uint8)] = True
_ID_LENGTHS = (8, 64)
_REPORT_ID = re.compile(REPORT_ID_PATTERN)
_IDS_BY_COLUMN = 16


def ids_match_pattern(ids: Sequence[str]) -> bool:
    """Whether every id matches :data:`REPORT_ID_PATTERN`: from 16 ids, in a few passes
    over the whole column (whose fixed cost, about 10 µs of numpy calls, fewer ids do
    not repay); below that, one regular expression per id."""
    if len(ids) < _IDS_BY_COLUMN:
        return all(_REPORT_ID.fullmatch(i) is not None for i in ids)
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    if lengths.min() < _ID_LENGTHS[0] or lengths.max() > _ID_LENGTHS[1]:
        return False
    joined = "".join(ids)
    return joined.isascii() and bool(_ID_CHARACTER[np.frombuffer(joined.encode(), np.uint8)].all())


def decode_bits_column(texts: Sequence[str], width: int) -> NDArray[np.uint8] | None:
    """:func:`decode_bits` of every text at once, when each is the canonical base64 of
    exactly ``width`` bytes: their bytes as an ``n × width`` matrix. ``None`` when any
    text is not (then :func:`decode_bits` of each says which and why).

    The texts accepted are exactly those :func:`decode_bits` turns into ``width`` bytes:
    ``4⌈width/3⌉`` characters, the last ``(3 − width mod 3) mod 3`` of them ``=`` and the
    others digits of the standard alphabet, and the unused low bits of the last digit
    zero (RFC 4648 §3.5)."""
    n, groups = len(texts), -(-width // 3)
    chars = 4 * groups
    padding = (3 - width % 3) % 3
    if n == 0 or set(map(len, texts)) != {chars}:
        return None
    joined = "".join(texts)
    if not joined.isascii():
        return None
    matrix = np.frombuffer(joined.encode(), dtype=np.uint8).reshape(n, chars)
    values = _B64_VALUE[matrix[:, : chars - padding]]
    if (values == 64).any() or (matrix[:, chars - padding :] != ord("=")).any():
        return None
    if padding and (values[:, -1] & (0b1111 if padding == 2 else 0b11)).any():
        return None  # a padding bit set: not canonical
    sextets = np.zeros((n, chars), dtype=np.uint8)
    sextets[:, : chars - padding] = values
    quads = sextets.reshape(n, groups, 4)
    out = np.empty((n, groups, 3), dtype=np.uint8)
    out[..., 0] = (quads[..., 0] << 2) | (quads[..., 1] >> 4)
    out[..., 1] = ((quads[..., 1] & 0b1111) << 4) | (quads[..., 2] >> 2)
    out[..., 2] = ((quads[..., 2] & 0b11) << 6) | quads[..., 3]
    return np.ascontiguousarray(out.reshape(n, 3 * groups)[:, :width])


class Report(RequestModel):
    """One perturbed record.

    The members' types are the request's shape (a batch with a report of another shape
    is refused whole); their values are judged report by report, each answering an
    outcome of its own (``id`` must match :data:`REPORT_ID_PATTERN`).
    """

    id: str = Field(description="client-chosen random id; retries reuse it")
    config_hash: str = Field(description="the collection's config hash")
    bits: str = Field(description="packed perturbed bits, canonical base64 with padding")


_REPORT_LIST = TypeAdapter(
    Annotated[list[Report], Field(min_length=1, max_length=MAX_BATCH)],
    config=ConfigDict(strict=True),
)
_FIELD_NAMES = dict.fromkeys(Report.model_fields).keys()
_FIELDS_OF = itemgetter(*Report.model_fields)


class ReportRows(Sequence[Report]):
    """The reports of a received batch as three columns of strings (``ids``,
    ``config_hashes``, ``bits``), which the aggregator judges whole
    (:func:`ldp_aggregator.ingest.judge_batch`). A sequence of :class:`Report`: an item is
    built when asked for (or is the object the batch was made of), a slice is rows
    again, and it equals any sequence of the same reports."""

    __slots__ = ("_reports", "bits", "config_hashes", "ids")
    __hash__ = None  # type: ignore[assignment]  # compared as its reports, like a list

    def __init__(
        self,
        ids: list[str],
        config_hashes: list[str],
        bits: list[str],
        reports: list[Report] | None = None,
    ) -> None:
        self.ids = ids
        self.config_hashes = config_hashes
        self.bits = bits
        self._reports = reports

    @classmethod
    def of(cls, reports: Sequence[Report]) -> ReportRows:
        """The rows of validated reports (kept, and given back as they are)."""
        if isinstance(reports, ReportRows):
            return reports
        kept = list(reports)
        ids = [report.id for report in kept]
        return cls(ids, [r.config_hash for r in kept], [r.bits for r in kept], kept)

    @classmethod
    def of_plain(cls, value: Any) -> ReportRows | None:
        """The rows of a batch's ``reports`` as parsed from JSON, when it is plainly valid:
        a list of 1 to :data:`MAX_BATCH` dicts, each with exactly the three members, each
        a ``str``. ``None`` otherwise (then the model's own validation judges it, and
        names what is wrong). No Python object is made per report."""
        if type(value) is not list or not 1 <= len(value) <= MAX_BATCH:
            return None
        try:
            if not all(map(_FIELD_NAMES.__eq__, map(dict.keys, value))):
                return None
        except TypeError:  # an item that is not a dict
            return None
        columns = [list(column) for column in zip(*map(_FIELDS_OF, value), strict=True)]
        if any(set(map(type, column)) != {str} for column in columns):
            return None
        ids, config_hashes, bits = columns
        return cls(ids, config_hashes, bits)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Report: ...

    @overload
    def __getitem__(self, index: slice) -> ReportRows: ...

    def __getitem__(self, index: int | slice) -> Report | ReportRows:
        if isinstance(index, slice):
            reports = None if self._reports is None else self._reports[index]
            return ReportRows(self.ids[index], self.config_hashes[index], self.bits[index], reports)
        if self._reports is not None:
            return self._reports[index]
        return Report.model_construct(
            id=self.ids[index], config_hash=self.config_hashes[index], bits=self.bits[index]
        )

    def __iter__(self) -> Iterator[Report]:
        if self._reports is not None:
            return iter(self._reports)
        construct = Report.model_construct
        return (
            construct(id=i, config_hash=h, bits=b)
            for i, h, b in zip(self.ids, self.config_hashes, self.bits, strict=True)
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"ReportRows({len(self)} reports)"


class ReportBatch(RequestModel):
    # ``reports`` is ReportRows once validated: a batch parsed from plainly valid JSON is read
    # into its columns without a Report per report (the same batches the per-report
    # validation would accept, with the same values); anything else is validated report
    # by report, which names each error (``model_construct`` keeps what it is given;
    # ``rows`` makes the columns then). No docstring: it would be the OpenAPI
    # document's description of the body.

    reports: Sequence[Report] = Field(min_length=1, max_length=MAX_BATCH)

    @field_validator("reports", mode="wrap")
    @classmethod
    def _as_rows(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> ReportRows:
        rows = ReportRows.of_plain(value)
        if rows is not None:
            return rows
        # validated as ``list[Report]``, whose errors it answers word for word (not by
        # ``handler``: a Sequence's length errors say "Value" where a list's say "List")
        return ReportRows.of(_REPORT_LIST.validate_python(value))

    @field_serializer("reports")
    def _as_list(self, reports: Sequence[Report]) -> list[Report]:
        return list(reports)

    @property
    def rows(self) -> ReportRows:
        """The reports as columns (made here for a batch built without validation,
        ``model_construct``, which holds whatever sequence it was given)."""
        reports = self.reports
        return reports if isinstance(reports, ReportRows) else ReportRows.of(reports)


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
