"""Frequent itemsets over the stored reports of a MASK attribute (chunked, bounded memory).

Mining reads the reports once per itemset length from 2 on. So that every pass sees the
same reports while new ones keep arriving, the attribute's packed bits are first copied
into a :class:`ReportSpool` (a snapshot: in memory up to :data:`SPOOL_MEMORY_BYTES`, then
in a temporary file that is deleted afterwards), and
:func:`ldp_shared.analyses.itemsets.mine_frequent_itemsets` reads it chunk by chunk. Peak memory
is the spool's memory part plus one chunk, whatever the number of reports.

The singletons come from the sufficient statistics (the per-item sums kept at
ingestion) when the number of reports was the same before and after the snapshot, so
that the statistics are those of exactly the snapshot's reports; otherwise the column
sums are recomputed from the snapshot.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import IO, Self

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine

from ldp_aggregator.release import central_of
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.reports import iter_report_bits
from ldp_aggregator.storage.stats import Stats, read_stats
from ldp_shared.analyses.itemsets import (
    AssociationRule,
    BitChannel,
    FrequentItemsets,
    ProgressCallback,
    association_rules,
    column_sums,
    interval,
    mine_frequent_itemsets,
)
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.wire.itemsets import (
    ItemsetEstimate,
    ItemsetQuery,
    ItemsetResult,
    LevelInfo,
    RuleEstimate,
    check_mining_query,
    mask_privacy,
)

SPOOL_MEMORY_BYTES = 64 * 2**20
"""Snapshot bytes kept in memory; beyond this the snapshot goes to a temporary file."""

SPOOL_CHUNK_ROWS = 65_536
"""Rows per chunk read back from a spool."""

READ_CHUNK = 10_000
"""Reports per database fetch while taking the snapshot."""

MAX_RESULT_ITEMSETS = 100_000
"""More frequent itemsets than this fail the job (422): the result would be tens of MB."""


class ReportSpool:
    """Packed rows of one attribute, appended once and read back in chunks, many times.

    Rows live in memory up to ``memory_bytes``; past that, all of them move to an
    anonymous temporary file (deleted on :meth:`close`). Implements
    :class:`ldp_shared.analyses.itemsets.PackedSource`.
    """

    def __init__(
        self,
        row_bytes: int,
        memory_bytes: int = SPOOL_MEMORY_BYTES,
        chunk_rows: int = SPOOL_CHUNK_ROWS,
    ) -> None:
        self._row_bytes = row_bytes
        self._memory_bytes = memory_bytes
        self._chunk_rows = chunk_rows
        self._parts: list[NDArray[np.uint8]] = []
        self._in_memory = 0
        self._file: IO[bytes] | None = None
        self._rows = 0

    @property
    def n_rows(self) -> int:
        return self._rows

    @property
    def row_bytes(self) -> int:
        return self._row_bytes

    @property
    def on_disk(self) -> bool:
        """Whether the rows went to a temporary file."""
        return self._file is not None

    def append(self, rows: NDArray[np.uint8]) -> None:
        block = np.ascontiguousarray(rows, dtype=np.uint8)
        if block.ndim != 2 or block.shape[1] != self._row_bytes:
            raise ValueError(f"rows must be n x {self._row_bytes} bytes")
        self._rows += block.shape[0]
        if self._file is None and self._in_memory + block.nbytes <= self._memory_bytes:
            self._parts.append(block)
            self._in_memory += block.nbytes
            return
        if self._file is None:
            # closed by close() (the spool is a context manager)
            self._file = tempfile.TemporaryFile(prefix="ldpcollect-spool-")  # noqa: SIM115
            for part in self._parts:
                self._file.write(part.tobytes())
            self._parts = []
            self._in_memory = 0
        self._file.write(block.tobytes())

    def chunks(self) -> Iterator[NDArray[np.uint8]]:
        if self._file is None:
            pending: list[NDArray[np.uint8]] = []
            held = 0
            for part in self._parts:
                pending.append(part)
                held += part.shape[0]
                if held >= self._chunk_rows:
                    yield np.concatenate(pending, axis=0)
                    pending, held = [], 0
            if pending:
                yield np.concatenate(pending, axis=0)
            return
        self._file.flush()
        self._file.seek(0)
        step = self._chunk_rows * self._row_bytes
        while True:
            data = self._file.read(step)
            if not data:
                return
            yield np.frombuffer(data, dtype=np.uint8).reshape(-1, self._row_bytes)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._parts = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def basket_attribute(config: CollectionConfig, name: str | None) -> AttributeConfig:
    """The MASK attribute ``name`` (or the only one when ``name`` is ``None``)."""
    baskets = [a for a in config.attributes if config.spec_of(a).is_basket]
    if name is None:
        if not baskets:
            used = ", ".join(f"{a.name} ({a.mechanism})" for a in config.attributes)
            raise InvalidQueryError(
                f"collection {config.name!r} has no MASK attribute, so no itemsets can be"
                f" mined from it; its attributes are {used}"
            )
        if len(baskets) > 1:
            raise InvalidQueryError(
                f"collection {config.name!r} has {len(baskets)} MASK attributes; name one of"
                f" {', '.join(a.name for a in baskets)}"
            )
        return baskets[0]
    for attribute in config.attributes:
        if attribute.name == name:
            if not config.spec_of(attribute).is_basket:
                raise InvalidQueryError(
                    f"attribute {name!r} is not a basket (mechanism {attribute.mechanism!r}); "
                    "itemsets are mined from MASK attributes"
                )
            return attribute
    raise InvalidQueryError(
        f"collection {config.name!r} has no attribute {name!r}; its attributes are "
        f"{', '.join(a.name for a in config.attributes)}"
    )


def check_itemset_query(config: CollectionConfig, query: ItemsetQuery) -> AttributeConfig:
    """Validate a query against a collection (:class:`InvalidQueryError`); its attribute."""
    attribute = basket_attribute(config, query.attribute)
    check_mining_query(
        query.min_support,
        query.max_size,
        query.support_reduction,
        query.min_confidence,
        query.confidence,
    )
    query.check_ranges()
    return attribute


def _stats(engine: Engine, collection: StoredCollection) -> Stats:
    with engine.connect() as connection:
        return read_stats(
            connection,
            collection.id,
            collection.config.stats_length,
            collection.config.float_stats_length,
        )


def check_release(engine: Engine, collection: StoredCollection) -> int:
    """The number of reports, or :class:`InsufficientReportsError` below the release minimum."""
    n = _stats(engine, collection).n_reports
    _release(collection.config, n)
    return n


def _release(config: CollectionConfig, n: int) -> None:
    minimum = config.spec.release.min_reports
    if n < minimum:
        raise InsufficientReportsError(
            f"collection {config.name!r} has {n} reports; its release policy needs at "
            f"least {minimum}"
        )


def snapshot(
    engine: Engine,
    collection: StoredCollection,
    attribute: AttributeConfig,
    progress: ProgressCallback | None = None,
    memory_bytes: int = SPOOL_MEMORY_BYTES,
) -> ReportSpool:
    """Copy the attribute's packed bits of every stored report into a new spool."""
    config = collection.config
    width = config.report_bytes
    segment = slice(attribute.byte_offset, attribute.byte_offset + attribute.byte_length)
    spool = ReportSpool(attribute.byte_length, memory_bytes)
    try:
        with engine.connect() as connection:
            for rows in iter_report_bits(connection, collection.id, READ_CHUNK):
                matrix = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(-1, width)
                spool.append(matrix[:, segment])
                if progress is not None:
                    progress(f"snapshot: {spool.n_rows:,} reports read")
    except BaseException:
        spool.close()
        raise
    return spool


def rule_estimate(rule: AssociationRule, names: Sequence[str]) -> RuleEstimate:
    """One mined rule for the wire, items by name, with its intervals clipped to the
    ranges (confidence in [0, 1], lift ≥ 0; :mod:`ldp_shared.analyses.itemsets.rules`)."""
    return RuleEstimate(
        antecedent=[names[i] for i in rule.antecedent],
        consequent=[names[i] for i in rule.consequent],
        support=rule.support,
        confidence=rule.confidence,
        lift=rule.lift,
        antecedent_support=rule.antecedent_support,
        consequent_support=rule.consequent_support,
        confidence_stderr=rule.confidence_stderr,
        confidence_ci_low=rule.confidence_ci_low,
        confidence_ci_high=rule.confidence_ci_high,
        lift_stderr=rule.lift_stderr,
        lift_ci_low=rule.lift_ci_low,
        lift_ci_high=rule.lift_ci_high,
        informative=rule.informative,
    )


def itemset_result(
    config: CollectionConfig,
    attribute: AttributeConfig,
    query: ItemsetQuery,
    mined: FrequentItemsets,
    average_support: float,
    seconds: float,
) -> ItemsetResult:
    """The released result: itemsets with intervals, rules, privacy and cost, and for a
    shuffled collection the central guarantee of the mined reports."""
    names = attribute.values
    itemsets: list[ItemsetEstimate] = []
    for level in mined.levels:
        low, high = interval(mined, level)
        for row, support, stderr, lo, hi in zip(
            level.items.tolist(),
            level.support.tolist(),
            level.stderr.tolist(),
            low.tolist(),
            high.tolist(),
            strict=True,
        ):
            itemsets.append(
                ItemsetEstimate(
                    items=[names[i] for i in row],
                    support=min(support, 1.0),  # into [0, 1]: ŝ ≥ threshold > 0 already
                    stderr=stderr,
                    ci_low=lo,
                    ci_high=hi,
                )
            )
    rules = association_rules(mined, query.min_confidence)
    s0 = min(max(average_support, 1e-6), 1.0 - 1e-6)
    return ItemsetResult(
        collection=config.name,
        attribute=attribute.name,
        n_reports=mined.n,
        keep_probability=attribute.bit_channel[0],
        min_support=mined.min_support,
        support_reduction=mined.support_reduction,
        threshold=mined.threshold,
        max_size=mined.max_size,
        min_confidence=query.min_confidence,
        confidence=mined.confidence,
        itemsets=itemsets,
        by_length={str(k): v for k, v in mined.by_length.items()},
        rules=[rule_estimate(rule, names) for rule in rules[: query.max_rules]],
        rules_total=len(rules),
        privacy=mask_privacy(attribute, s0, query.privacy_weight),
        levels=[
            LevelInfo(
                length=s.k,
                candidates=s.candidates,
                frequent=s.frequent,
                method=s.method,
                seconds=s.seconds,
            )
            for s in mined.stats
        ],
        seconds=seconds,
        central=central_of(config, mined.n),
    )


def mine_collection(
    engine: Engine,
    collection: StoredCollection,
    query: ItemsetQuery,
    progress: ProgressCallback | None = None,
    memory_bytes: int = SPOOL_MEMORY_BYTES,
) -> ItemsetResult:
    """Mine the frequent itemsets and rules of a collection's MASK attribute.

    Raises :class:`InvalidQueryError` for a bad query (or a level with too many
    candidates) and :class:`InsufficientReportsError` below the release minimum.
    """
    started = time.perf_counter()
    config = collection.config
    attribute = check_itemset_query(config, query)
    before = _stats(engine, collection)
    _release(config, before.n_reports)
    with snapshot(engine, collection, attribute, progress, memory_bytes) as spool:
        _release(config, spool.n_rows)
        after = _stats(engine, collection)
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.d)
        if before.n_reports == spool.n_rows == after.n_reports and attribute.count_offset is None:
            # no report arrived while the snapshot was taken (reports are only ever added,
            # each with its statistics in one transaction): the sufficient statistics are
            # those of exactly the snapshot's reports
            n, sums = spool.n_rows, before.sums[block].astype(np.int64)
        else:
            if progress is not None:
                progress("level 1: summing the columns of the snapshot")
            n, sums = column_sums(spool, attribute.d)
        channel = BitChannel(*attribute.bit_channel)
        mined = mine_frequent_itemsets(
            spool,
            attribute.d,
            channel,
            query.min_support,
            max_size=query.max_size,
            support_reduction=query.support_reduction,
            statistics=(n, sums),
            confidence=query.confidence,
            progress=progress,
        )
    if len(mined) > MAX_RESULT_ITEMSETS:
        raise InvalidQueryError(
            f"{len(mined):,} itemsets reach support {mined.threshold:g} (at most "
            f"{MAX_RESULT_ITEMSETS:,} are released at once); raise min_support or lower max_size"
        )
    average_support = float(np.mean((channel.a * sums + channel.b * n) / n))
    return itemset_result(
        config, attribute, query, mined, average_support, time.perf_counter() - started
    )
