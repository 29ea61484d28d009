"""Records to reports: the local randomizer of the SDK (pure, no I/O).

Everything here runs on the device. A raw record goes in, a :class:`~ldp_shared.wire.reports.Report`
comes out: a fresh random id, the hash of the config it was made for, and the packed
perturbed bits (base64). The raw values are encoded and perturbed inside
:class:`ldp_shared.codec.Privatizer` and never stored, logged or returned.

The random source defaults to the process's secure generator
(:func:`ldp_shared.rand.shared_secure_rng`). One record of a GRR/unary-encoding
collection goes through :mod:`ldp_client.one_record`; batches are perturbed vectorised
and become reports without per-record validation (:mod:`ldp_client.reports`).

Records are validated before anything is perturbed: a value outside its domain, a
missing or unknown attribute raises :class:`~ldp_shared.errors.InvalidRecordError` and
no report is produced for any record of the call.

The functions trust the config they are given. A config fetched from an aggregator
must be checked with :func:`ldp_shared.collection.verify_config` first (the clients in
this package do so), so a server cannot publish weaker noise than its stated ε.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_client.one_record import record_path
from ldp_client.reports import ReportColumns, one_report
from ldp_shared.codec import Columns, Privatizer, Record
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidRecordError, InvalidReportError
from ldp_shared.rand import resolve_rng
from ldp_shared.wire.reports import Report

__all__ = [
    "check_records",
    "privatize",
    "privatize_columns",
    "privatize_many",
    "privatize_packed",
    "reports_from_packed",
]


def privatize(
    config: CollectionConfig, record: Record, rng: np.random.Generator | None = None
) -> Report:
    """The perturbed report of one record.

    ``rng`` defaults to the process's cryptographically strong generator
    (:func:`ldp_shared.rand.shared_secure_rng`); pass a seeded one only in tests and
    simulations.
    """
    return one_report(config.config_hash, privatize_packed(config, record, rng))


def privatize_packed(
    config: CollectionConfig, record: Record, rng: np.random.Generator | None = None
) -> bytes:
    """The packed perturbed bytes of one record (what a report's ``bits`` encode)."""
    if type(record) is not dict and not isinstance(record, Mapping):
        raise InvalidRecordError("a record must be a mapping of attribute name to value")
    gen = resolve_rng(rng)
    path = record_path(config)
    packed = None if path is None else path.packed(record, gen)
    if packed is None:
        packed = Privatizer(config).privatize_many(check_records([record]), gen)[0].tobytes()
    return packed


def privatize_many(
    config: CollectionConfig, records: Iterable[Record], rng: np.random.Generator | None = None
) -> ReportColumns:
    """One perturbed report per record, in order, each with a fresh random id (vectorised)."""
    packed = Privatizer(config).privatize_many(check_records(records), rng)
    return reports_from_packed(config, packed)


def check_records(records: Iterable[Record]) -> list[Record]:
    """``records`` as a list, refusing one record or a string passed in their place."""
    if isinstance(records, Mapping | str | bytes):
        raise InvalidRecordError(
            "privatize_many takes a sequence of records (mappings); use privatize for one record"
        )
    return list(records)


def privatize_columns(
    config: CollectionConfig, columns: Columns, rng: np.random.Generator | None = None
) -> ReportColumns:
    """Reports for columnar records: one sequence (or array) of values per attribute.

    The fast path for simulations: ``{"browser": array_of_n_values, ...}`` is perturbed
    without building one mapping per record.
    """
    if not isinstance(columns, Mapping):
        raise InvalidRecordError("columns must be a mapping of attribute name to values")
    packed = Privatizer(config).privatize_columns(columns, rng)
    return reports_from_packed(config, packed)


def reports_from_packed(config: CollectionConfig, packed: NDArray[Any]) -> ReportColumns:
    """Reports (with fresh ids) of an ``n × report_bytes`` uint8 matrix of perturbed rows,
    kept as columns (:class:`~ldp_client.reports.ReportColumns`)."""
    matrix = np.asarray(packed, dtype=np.uint8)
    if matrix.ndim != 2 or matrix.shape[1] != config.report_bytes:
        raise InvalidReportError(
            f"packed reports must be an n × {config.report_bytes} byte matrix,"
            f" got shape {matrix.shape}"
        )
    return ReportColumns.of_packed(config.config_hash, matrix)
