"""Records to packed perturbed reports (client side) and reports to statistics (server side).

Report layout (see ``docs/wire-format.md``): one byte string per record, the attributes'
segments one after the other in the config's order, each starting on a byte boundary.

* ``bits`` segments (SUE, OUE, MASK): the ``d`` perturbed bits, bit ``j`` for the
  ``j``-th domain value, packed most significant bit first (``numpy.packbits``'s
  ``big`` order) into ``ceil(d/8)`` bytes; the padding bits are zero.
* ``index`` segments (GRR): the reported value's index as an unsigned big-endian integer
  of 1 byte (``d <= 256``) or 2 bytes.

Sufficient statistics: per attribute, ``d`` counters: the number of reports with bit
``j`` set (bits) or reporting value ``j`` (index). The frequency estimate needs nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.collection import AttributeConfig, CollectionConfig, mechanisms_of
from ldp_shared.errors import InvalidRecordError, InvalidReportError
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, Mask, UnaryEncoding
from ldp_shared.rand import resolve_rng

Record = Mapping[str, Any]
Columns = Mapping[str, Sequence[Any] | NDArray[Any]]

DEFAULT_CHUNK = 16_384


def _value_indices(
    attribute: AttributeConfig, values: Sequence[Any] | NDArray[Any]
) -> NDArray[np.int64]:
    lookup = {v: i for i, v in enumerate(attribute.domain)}
    try:
        return np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))
    except (KeyError, TypeError):
        bad = next(v for v in values if not isinstance(v, str) or v not in lookup)
        raise InvalidRecordError(
            f"attribute {attribute.name!r}: value {bad!r} is not in its domain"
        ) from None


def _basket_matrix(
    attribute: AttributeConfig, baskets: Sequence[Any] | NDArray[Any]
) -> NDArray[np.bool_]:
    lookup = {v: i for i, v in enumerate(attribute.domain)}
    out = np.zeros((len(baskets), attribute.d), dtype=bool)
    for row, basket in enumerate(baskets):
        if isinstance(basket, str) or not isinstance(basket, Iterable):
            raise InvalidRecordError(
                f"attribute {attribute.name!r}: a basket must be a set of items"
            )
        try:
            out[row, [lookup[item] for item in basket]] = True
        except (KeyError, TypeError):
            bad = next(i for i in basket if not isinstance(i, str) or i not in lookup)
            raise InvalidRecordError(
                f"attribute {attribute.name!r}: item {bad!r} is not in the catalogue"
            ) from None
    return out


def records_to_columns(config: CollectionConfig, records: Sequence[Record]) -> dict[str, list[Any]]:
    """Turn a list of records into one column per attribute, checking the keys."""
    names = [a.name for a in config.attributes]
    expected = set(names)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for number, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InvalidRecordError(f"record {number} is not a mapping of attribute to value")
        keys = set(record)
        if keys != expected:
            missing = sorted(expected - keys)
            extra = sorted(map(str, keys - expected))
            raise InvalidRecordError(
                f"record {number}: missing attributes {missing}, unknown attributes {extra}"
            )
        for name in names:
            columns[name].append(record[name])
    return columns


def _check_columns(config: CollectionConfig, columns: Columns) -> int:
    names = {a.name for a in config.attributes}
    if set(columns) != names:
        raise InvalidRecordError(
            f"columns {sorted(columns)} do not match the attributes {sorted(names)}"
        )
    lengths = {len(columns[name]) for name in names}
    if len(lengths) != 1:
        raise InvalidRecordError("all columns must have the same length")
    return lengths.pop()


@dataclass(frozen=True)
class Privatizer:
    """Turns raw records into packed perturbed reports for one collection (pure, no I/O)."""

    config: CollectionConfig

    def privatize_columns(
        self, columns: Columns, rng: np.random.Generator | None = None, chunk: int = DEFAULT_CHUNK
    ) -> NDArray[np.uint8]:
        """Packed reports (``n × report_bytes`` uint8) for columnar records."""
        n = _check_columns(self.config, columns)
        gen = resolve_rng(rng)
        mechanisms = mechanisms_of(self.config)
        encoded: list[NDArray[Any]] = []
        for attribute in self.config.attributes:
            column = columns[attribute.name]
            if attribute.mechanism == "mask":
                encoded.append(_basket_matrix(attribute, column))
            else:
                encoded.append(_value_indices(attribute, column))
        out = np.zeros((n, self.config.report_bytes), dtype=np.uint8)
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            for attribute, mechanism, values in zip(
                self.config.attributes, mechanisms, encoded, strict=True
            ):
                segment = slice(
                    attribute.byte_offset, attribute.byte_offset + attribute.byte_length
                )
                out[start:stop, segment] = _perturb_segment(
                    attribute, mechanism, values[start:stop], gen
                )
        return out

    def privatize_many(
        self, records: Sequence[Record], rng: np.random.Generator | None = None
    ) -> NDArray[np.uint8]:
        """Packed reports for a list of records (validated first: nothing is perturbed on error)."""
        return self.privatize_columns(records_to_columns(self.config, records), rng)

    def privatize(self, record: Record, rng: np.random.Generator | None = None) -> bytes:
        """The packed report of one record."""
        packed: bytes = self.privatize_many([record], rng)[0].tobytes()
        return packed


def _perturb_segment(
    attribute: AttributeConfig,
    mechanism: UnaryEncoding | GeneralizedRandomizedResponse | Mask,
    values: NDArray[Any],
    rng: np.random.Generator,
) -> NDArray[np.uint8]:
    if isinstance(mechanism, GeneralizedRandomizedResponse):
        width = attribute.byte_length
        reported = mechanism.perturb(values, rng).astype(f">u{width}")
        return reported.view(np.uint8).reshape(-1, width)
    return np.packbits(mechanism.perturb(values, rng), axis=1)


@dataclass(frozen=True)
class DecodedBatch:
    """Server-side view of a batch of packed reports."""

    valid: NDArray[np.bool_]
    reasons: list[str | None]
    sums: NDArray[np.int64]


def decode_reports(config: CollectionConfig, reports: NDArray[np.uint8]) -> DecodedBatch:
    """Check each packed report against the layout and sum the valid ones' statistics.

    A report is invalid when an index segment holds a value outside the domain or a bits
    segment has a padding bit set. ``sums`` counts the valid reports only.

    ``reports`` is an ``n × report_bytes`` matrix, or the ``n·report_bytes`` bytes of
    the reports one after the other; any other shape raises :class:`InvalidReportError`
    (rather than being read as reports of another length).
    """
    raw = np.asarray(reports, dtype=np.uint8)
    width = config.report_bytes
    matrix_fits = raw.ndim == 2 and raw.shape[1] == width
    flat_fits = raw.ndim == 1 and raw.size % width == 0
    if not (matrix_fits or flat_fits):
        raise InvalidReportError(
            f"reports must be an n x {width} byte matrix or n*{width} bytes, got shape {raw.shape}"
        )
    matrix = raw.reshape(-1, width)
    n = matrix.shape[0]
    valid = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    parts: list[tuple[AttributeConfig, NDArray[Any]]] = []
    for attribute in config.attributes:
        segment = matrix[:, attribute.byte_offset : attribute.byte_offset + attribute.byte_length]
        if attribute.encoding == "index":
            index = segment[:, 0].astype(np.int64)
            if attribute.byte_length == 2:
                index = (index << 8) | segment[:, 1]
            bad: NDArray[np.bool_] = np.asarray(index >= attribute.d)
            parts.append((attribute, index))
            problem = f"attribute {attribute.name!r}: value index outside the domain"
        else:
            bits = np.unpackbits(segment, axis=1)
            bad = np.asarray(bits[:, attribute.d :].any(axis=1))
            parts.append((attribute, bits[:, : attribute.d]))
            problem = f"attribute {attribute.name!r}: padding bits are not zero"
        for row in np.flatnonzero(bad & valid):
            reasons[row] = problem
        valid &= ~bad
    sums = np.zeros(config.stats_length, dtype=np.int64)
    for attribute, part in parts:
        kept = part[valid]
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.d)
        if attribute.encoding == "index":
            sums[block] = np.bincount(kept, minlength=attribute.d)
        else:
            sums[block] = kept.sum(axis=0, dtype=np.int64)
    return DecodedBatch(valid=valid, reasons=reasons, sums=sums)
