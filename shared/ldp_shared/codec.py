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

Label collections (Yilmaz et al., arXiv:1905.01039, 2019): a feature with value ``x`` in a
record of class ``c`` is the one-hot vector of cell ``x·k + c`` among ``d·k`` cells, so
its counters are the joint counts the naive Bayes model is trained from.

Budget ``sample``: each report starts with a ``selector_bytes`` big-endian selector ``s``,
drawn uniformly from the sampled attributes on the device (independently of the
record), then the segment of attribute ``s``, zero-padded to the longest segment. The
statistics add one counter per sampled attribute: the number ``n_j`` of reports that
carried it.
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


def domain_indices(
    domain: Sequence[str], values: Sequence[Any] | NDArray[Any], error: str
) -> NDArray[np.int64]:
    """The index in ``domain`` of every value.

    A value outside the domain raises :class:`InvalidRecordError` with the message
    ``error.format(bad=repr(value))``.
    """
    lookup = {v: i for i, v in enumerate(domain)}
    try:
        return np.fromiter(map(lookup.__getitem__, values), dtype=np.int64, count=len(values))
    except (KeyError, TypeError):
        bad = next(v for v in values if not isinstance(v, str) or v not in lookup)
        raise InvalidRecordError(error.format(bad=repr(bad))) from None


def _value_indices(
    attribute: AttributeConfig, values: Sequence[Any] | NDArray[Any]
) -> NDArray[np.int64]:
    error = f"attribute {attribute.name!r}: value {{bad}} is not in its domain"
    return domain_indices(attribute.domain, values, error)


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
    """Turn a list of records into one column per attribute (label included), checking keys."""
    names = config.record_names
    expected = set(names)
    label = None if config.label is None else config.label.name
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for number, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InvalidRecordError(f"record {number} is not a mapping of attribute to value")
        keys = set(record)
        if keys != expected:
            if label is not None and label not in keys:
                raise InvalidRecordError(
                    f"record {number} has no label {label!r}: every record of collection"
                    f" {config.name!r} must carry its class"
                )
            missing = sorted(expected - keys)
            extra = sorted(map(str, keys - expected))
            raise InvalidRecordError(
                f"record {number}: missing attributes {missing}, unknown attributes {extra}"
            )
        for name in names:
            columns[name].append(record[name])
    return columns


def _check_columns(config: CollectionConfig, columns: Columns) -> int:
    names = set(config.record_names)
    if set(columns) != names:
        raise InvalidRecordError(
            f"columns {sorted(columns)} do not match the attributes {sorted(names)}"
        )
    lengths = {len(columns[name]) for name in names}
    if len(lengths) != 1:
        raise InvalidRecordError("all columns must have the same length")
    return lengths.pop()


def _label_indices(config: CollectionConfig, columns: Columns) -> NDArray[np.int64] | None:
    if config.label is None:
        return None
    label = config.label
    error = f"label {label.name!r}: {{bad}} is not one of its classes {label.domain}"
    return domain_indices(label.domain, columns[label.name], error)


def encode_columns(config: CollectionConfig, columns: Columns) -> list[NDArray[Any]]:
    """The true values each attribute's mechanism perturbs, in layout order (validated).

    A value index per record (a joint cell ``x·k + c`` for a feature), or a boolean
    basket matrix for MASK.
    """
    _check_columns(config, columns)
    classes = _label_indices(config, columns)
    encoded: list[NDArray[Any]] = []
    for attribute in config.attributes:
        column = columns[attribute.name]
        if attribute.mechanism == "mask":
            encoded.append(_basket_matrix(attribute, column))
        elif attribute.is_feature:
            assert classes is not None
            encoded.append(_value_indices(attribute, column) * attribute.classes + classes)
        else:
            encoded.append(_value_indices(attribute, column))
    return encoded


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
        encoded = encode_columns(self.config, columns)
        out = np.zeros((n, self.config.report_bytes), dtype=np.uint8)
        sampled = self.config.sampled
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            chosen = _draw_selectors(self.config, stop - start, gen) if sampled else None
            if chosen is not None:
                _write_selectors(self.config, out[start:stop], chosen)
            for attribute, mechanism, values in zip(
                self.config.attributes, mechanisms, encoded, strict=True
            ):
                segment = slice(
                    attribute.byte_offset, attribute.byte_offset + attribute.byte_length
                )
                if attribute.sample_index is None:
                    out[start:stop, segment] = _perturb_segment(
                        attribute, mechanism, values[start:stop], gen
                    )
                    continue
                assert chosen is not None
                rows = np.flatnonzero(chosen == attribute.sample_index)
                out[start + rows, segment] = _perturb_segment(
                    attribute, mechanism, values[start:stop][rows], gen
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


def _draw_selectors(
    config: CollectionConfig, n: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Budget ``sample``: each record's attribute, uniform over the sampled attributes.

    Drawn from the perturbation's random source, never from the data, so the choice
    itself reveals nothing about the record. Written into the report's selector bytes.
    """
    return rng.integers(0, len(config.sampled), size=n, dtype=np.int64)


def _write_selectors(
    config: CollectionConfig, out: NDArray[np.uint8], chosen: NDArray[np.int64]
) -> None:
    width = config.selector_bytes
    out[:, :width] = chosen.astype(f">u{width}").view(np.uint8).reshape(-1, width)


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
    return pack_rows(mechanism.perturb(values, rng))


def pack_rows(bits: NDArray[np.bool_]) -> NDArray[np.uint8]:
    """``np.packbits(bits, axis=1)``, computed as one flat pack over rows padded to bytes.

    The same bytes (most significant bit first, zero padding) but many times faster
    for short rows, where packing along axis 1 spends its time per row.
    """
    rows, cols = bits.shape
    width = (cols + 7) // 8
    if cols != 8 * width:
        padded = np.zeros((rows, 8 * width), dtype=np.bool_)
        padded[:, :cols] = bits
        bits = padded
    return np.packbits(bits.reshape(-1)).reshape(rows, width)


@dataclass(frozen=True)
class DecodedBatch:
    """Server-side view of a batch of packed reports."""

    valid: NDArray[np.bool_]
    reasons: list[str | None]
    sums: NDArray[np.int64]


def decode_reports(config: CollectionConfig, reports: NDArray[np.uint8]) -> DecodedBatch:
    """Check each packed report against the layout and sum the valid ones' statistics.

    A report is invalid when an index segment holds a value outside the domain or a bits
    segment has a padding bit set; under the ``sample`` budget also when its selector
    names no attribute or a byte after the carried attribute's segment is not zero.
    ``sums`` counts the valid reports only.

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

    def mark(bad: NDArray[np.bool_], problem: str) -> None:
        nonlocal valid
        for row in np.flatnonzero(bad & valid):
            reasons[row] = problem
        valid &= ~bad

    chosen: NDArray[np.int64] | None = None
    if config.selector_bytes:
        chosen = _read_index(matrix[:, : config.selector_bytes])
        count = len(config.sampled)
        mark(chosen >= count, f"selector outside [0, {count}): names no attribute")
    parts: list[tuple[AttributeConfig, NDArray[np.bool_], NDArray[Any]]] = []
    for attribute in config.attributes:
        # the reports that carry this attribute: all, unless it is one of the sampled ones
        rows = (
            np.ones(n, dtype=bool)
            if chosen is None or attribute.sample_index is None
            else np.asarray(chosen == attribute.sample_index)
        )
        if attribute.sample_index is not None:
            # the carried segment is zero-padded to the longest one: the rest must be 0
            tail = matrix[
                :,
                attribute.byte_offset + attribute.byte_length : config.selector_bytes
                + _payload_bytes(config),
            ]
            mark(
                rows & tail.any(axis=1),
                f"attribute {attribute.name!r}: bytes after its segment are not zero",
            )
        segment = matrix[:, attribute.byte_offset : attribute.byte_offset + attribute.byte_length]
        cells = attribute.cells
        if attribute.encoding == "index":
            value = _read_index(segment)
            bad: NDArray[np.bool_] = np.asarray(value >= cells)
            parts.append((attribute, rows, value))
            problem = f"attribute {attribute.name!r}: value index outside the domain"
        else:
            bits = np.unpackbits(segment, axis=1)
            bad = np.asarray(bits[:, cells:].any(axis=1))
            parts.append((attribute, rows, bits[:, :cells]))
            problem = f"attribute {attribute.name!r}: padding bits are not zero"
        mark(rows & bad, problem)
    sums = np.zeros(config.stats_length, dtype=np.int64)
    for attribute, rows, part in parts:
        carried = rows & valid
        kept = part[carried]
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.cells)
        if attribute.count_offset is not None:
            sums[attribute.count_offset] = int(carried.sum())
        if attribute.encoding == "index":
            sums[block] = np.bincount(kept, minlength=attribute.cells)
        else:
            sums[block] = kept.sum(axis=0, dtype=np.int64)
    return DecodedBatch(valid=valid, reasons=reasons, sums=sums)


def _read_index(segment: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Unsigned big-endian integers of 1 or 2 bytes per row."""
    index = segment[:, 0].astype(np.int64)
    if segment.shape[1] == 2:
        index = (index << 8) | segment[:, 1]
    return index


def _payload_bytes(config: CollectionConfig) -> int:
    """Budget ``sample``: the bytes after the selector that hold the carried segment."""
    return max((a.byte_length for a in config.sampled), default=0)
