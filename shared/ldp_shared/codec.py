"""Records to packed perturbed reports (client side) and reports to statistics (server side).

Report layout (see ``docs/wire-format.md``): one byte string per record, the attributes'
segments one after the other in the config's order, each starting on a byte boundary.
What a segment holds is its mechanism's business (:class:`~ldp_shared.mechanisms.base.
Randomizer`: ``encode`` → ``perturb`` → ``pack`` on the device, ``unpack`` →
``accumulate`` on the server); this module only lays the segments out and adds up the
statistics, so it works for any registered mechanism.

Sufficient statistics: one int64 vector of ``config.stats_length`` counters and one
float64 vector of ``config.float_stats_length``; each attribute's blocks (its
``stats_layout``) sit at its ``stats_offset`` and ``float_offset``.

Label collections (Yilmaz et al., arXiv:1905.01039, 2019): a feature with value ``x`` in a
record of class ``c`` is perturbed as cell ``x·k + c`` among ``d·k`` cells, so its
counters are the joint counts the naive Bayes model is trained from.

Budget ``sample``: each report starts with a ``selector_bytes`` big-endian selector ``s``,
drawn uniformly from the sampled attributes on the device (independently of the
record), then the segment of attribute ``s``, zero-padded to the longest segment. The
statistics add one counter per sampled attribute: the number ``n_j`` of reports that
carried it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InvalidRecordError, InvalidReportError
from ldp_shared.mechanisms.base import Randomizer
from ldp_shared.mechanisms.categorical import domain_indices, pack_rows, read_index
from ldp_shared.mechanisms.longitudinal import LongitudinalRandomizer, attribute_key
from ldp_shared.rand import resolve_rng

__all__ = [
    "DEFAULT_CHUNK",
    "Columns",
    "DecodedBatch",
    "Privatizer",
    "Record",
    "decode_reports",
    "domain_indices",
    "encode_columns",
    "pack_rows",
    "records_to_columns",
]

Record = Mapping[str, Any]
Columns = Mapping[str, Sequence[Any] | NDArray[Any]]

DEFAULT_CHUNK = 16_384


def records_to_columns(config: CollectionConfig, records: Sequence[Record]) -> dict[str, list[Any]]:
    """Turn a list of records into one column per attribute (label included), checking keys.

    Plain dicts with exactly the attribute names as keys (every well-formed batch) are
    read in C-level passes (types, the columns by ``itemgetter``, the sizes); anything
    else goes record by record, which names the first bad record.
    """
    names = config.record_names
    if names and set(map(type, records)) == {dict}:
        try:
            if len(names) == 1:
                fast = {names[0]: list(map(itemgetter(names[0]), records))}
            else:
                rows = zip(*map(itemgetter(*names), records), strict=True)
                fast = {name: list(column) for name, column in zip(names, rows, strict=True)}
        except KeyError:  # a missing attribute: the loop below says which record
            pass
        else:  # each name found and no other key: the keys are exactly the names
            if set(map(len, records)) == {len(names)}:
                return fast
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
    """The true values each attribute's randomizer perturbs, in layout order (validated).

    Each attribute's spec encodes its column (a value index per record, a basket matrix
    for MASK, ...); a feature of a label collection becomes the joint cell ``x·k + c``.
    """
    _check_columns(config, columns)
    classes = _label_indices(config, columns)
    specs = {a.name: a for a in config.spec.attributes}
    encoded: list[NDArray[Any]] = []
    for attribute in config.attributes:
        values = specs[attribute.name].encode(columns[attribute.name])
        if attribute.is_feature:
            assert classes is not None
            values = values * attribute.classes + classes
        encoded.append(values)
    return encoded


@dataclass(frozen=True)
class Privatizer:
    """Turns raw records into packed perturbed reports for one collection (pure, no I/O).

    ``secret``: the device's secret for the collection (its ledger keeps it), from which
    longitudinal attributes derive their memoised permanent randomization
    (:mod:`ldp_shared.mechanisms.longitudinal`); ``None``: every record is a fresh
    device's (simulations).
    """

    config: CollectionConfig
    secret: bytes | None = None

    def _key(self, attribute: AttributeConfig) -> bytes | None:
        return None if self.secret is None else attribute_key(self.secret, attribute.name)

    def privatize_columns(
        self, columns: Columns, rng: np.random.Generator | None = None, chunk: int = DEFAULT_CHUNK
    ) -> NDArray[np.uint8]:
        """Packed reports (``n × report_bytes`` uint8) for columnar records."""
        n = _check_columns(self.config, columns)
        gen = resolve_rng(rng)
        randomizers = self.config.randomizers
        encoded = encode_columns(self.config, columns)
        out = np.zeros((n, self.config.report_bytes), dtype=np.uint8)
        sampled = self.config.sampled
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            chosen = _draw_selectors(self.config, stop - start, gen) if sampled else None
            if chosen is not None:
                _write_selectors(self.config, out[start:stop], chosen)
            for attribute, randomizer, values in zip(
                self.config.attributes, randomizers, encoded, strict=True
            ):
                segment = slice(
                    attribute.byte_offset, attribute.byte_offset + attribute.byte_length
                )
                if attribute.sample_index is None:
                    out[start:stop, segment] = _perturb_segment(
                        randomizer, values[start:stop], gen, self._key(attribute)
                    )
                    continue
                assert chosen is not None
                rows = np.flatnonzero(chosen == attribute.sample_index)
                out[start + rows, segment] = _perturb_segment(
                    randomizer, values[start:stop][rows], gen, self._key(attribute)
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
    randomizer: Randomizer,
    values: NDArray[Any],
    rng: np.random.Generator,
    key: bytes | None = None,
) -> NDArray[np.uint8]:
    if key is not None and isinstance(randomizer, LongitudinalRandomizer):
        return randomizer.pack(randomizer.perturb_memoised(values, key, rng))
    return randomizer.perturb_packed(values, rng)


@dataclass(frozen=True)
class DecodedBatch:
    """Server-side view of a batch of packed reports: which are valid, why the others are
    not, and the statistics the valid ones add (``sums`` int64, ``floats`` float64)."""

    valid: NDArray[np.bool_]
    reasons: list[str | None]
    sums: NDArray[np.int64]
    floats: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))


def decode_reports(config: CollectionConfig, reports: NDArray[np.uint8]) -> DecodedBatch:
    """Check each packed report against the layout and sum the valid ones' statistics.

    A report is invalid when one of its segments holds bytes its mechanism never sends
    (a value index outside the domain, a padding bit set, ...); under the ``sample``
    budget also when its selector names no attribute or a byte after the carried
    attribute's segment is not zero. The statistics count the valid reports only.

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
        chosen = read_index(matrix[:, : config.selector_bytes])
        count = len(config.sampled)
        mark(chosen >= count, f"selector outside [0, {count}): names no attribute")
    randomizers = config.randomizers
    parts: list[tuple[AttributeConfig, NDArray[np.bool_], NDArray[Any]]] = []
    for attribute, randomizer in zip(config.attributes, randomizers, strict=True):
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
        unpacked = randomizer.unpack(segment)
        mark(rows & unpacked.bad, f"attribute {attribute.name!r}: {unpacked.problem}")
        parts.append((attribute, rows, unpacked.values))
    sums = np.zeros(config.stats_length, dtype=np.int64)
    floats = np.zeros(config.float_stats_length, dtype=np.float64)
    for (attribute, rows, values), randomizer in zip(parts, randomizers, strict=True):
        carried = rows & valid
        if attribute.count_offset is not None:
            sums[attribute.count_offset] = int(carried.sum())
        delta = randomizer.accumulate(values[carried])
        int_at, float_at = attribute.stats_offset, attribute.float_offset or 0
        for block in randomizer.stats_layout:
            if block.dtype == "int64":
                sums[int_at : int_at + block.length] = delta[block.name]
                int_at += block.length
            else:
                floats[float_at : float_at + block.length] = delta[block.name]
                float_at += block.length
    return DecodedBatch(valid=valid, reasons=reasons, sums=sums, floats=floats)


def _payload_bytes(config: CollectionConfig) -> int:
    """Budget ``sample``: the bytes after the selector that hold the carried segment."""
    return max((a.byte_length for a in config.sampled), default=0)
