"""The device's side of a client: its privacy policy, its ledger, its memoised collections.

Both clients privatize through :class:`Device`: the policy is checked first (nothing is
perturbed for a refused collection), records are validated and perturbed, then the
ledger charges the reports in one transaction (report limit, memoisation, ε) before the
client may send them. Without a policy and a ledger it is exactly
:mod:`ldp_client.privatize`.

Memoisation (permanent randomized response, Erlingsson, Pihur and Korolova, "RAPPOR",
CCS 2014): for a collection the owner lists, a record the device has reported before
(same canonical record, same config hash) is sent again as the very report first made
for it, under a fresh report id. Repeats then reveal nothing the first report did not,
and the ledger charges them no ε.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_client.ledger import Ledger
from ldp_client.longitudinal import ValueCharge, permanent_key, value_charges
from ldp_client.one_record import record_path
from ldp_client.policy import DevicePolicy
from ldp_client.privatize import check_records, reports_from_packed
from ldp_client.reports import ReportColumns, one_report
from ldp_shared.codec import Columns, Privatizer, Record, records_to_columns
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.rand import resolve_rng
from ldp_shared.wire.reports import Report

__all__ = ["Device", "canonical_record"]

LedgerArgument = Ledger | str | os.PathLike[str] | None


class Device:
    """What a client enforces and remembers on the device (see :meth:`make`)."""

    def __init__(
        self,
        policy: DevicePolicy | None,
        ledger: Ledger | None,
        memoize: frozenset[str],
        owns_ledger: bool,
    ) -> None:
        self.policy = policy
        self.ledger = ledger
        self.memoize = memoize
        self._owns_ledger = owns_ledger

    @classmethod
    def make(
        cls,
        policy: DevicePolicy | None,
        ledger: LedgerArgument,
        memoize: Iterable[str],
    ) -> Device:
        """Check the client's privacy arguments; :class:`ConfigurationError` names a bad one.

        A ledger without a policy gets ``DevicePolicy()`` (the documented defaults); no
        ledger and no policy enforces nothing (simulators, server-side tools). A report
        limit or memoisation needs a ledger to count and remember across runs.
        """
        if policy is not None and not isinstance(policy, DevicePolicy):
            raise ConfigurationError("policy must be a DevicePolicy or None")
        if isinstance(memoize, str) or not all(isinstance(name, str) for name in memoize):
            raise ConfigurationError("memoize must be a collection of collection names")
        memoised = frozenset(memoize)
        if ledger is None:
            if memoised:
                raise ConfigurationError(
                    "memoize needs a ledger: the first report of each record is kept there"
                )
            if policy is not None and policy.max_reports_per_collection is not None:
                raise ConfigurationError(
                    "max_reports_per_collection needs a ledger to count reports across runs"
                )
            if policy is not None and policy.max_epsilon_per_collection is not None:
                raise ConfigurationError(
                    "max_epsilon_per_collection needs a ledger to add up ε across runs"
                )
            return cls(policy, None, memoised, owns_ledger=False)
        if isinstance(ledger, Ledger):
            opened, owned = ledger, False
        elif isinstance(ledger, str | os.PathLike):
            opened, owned = Ledger(ledger), True
        else:
            raise ConfigurationError("ledger must be a path, a Ledger or None")
        return cls(policy or DevicePolicy(), opened, memoised, owns_ledger=owned)

    def close(self) -> None:
        """Close the ledger if the client opened it from a path."""
        if self._owns_ledger and self.ledger is not None:
            self.ledger.close()

    # ------------------------------------------------------------------ privatizing

    def privatize(
        self, config: CollectionConfig, record: Record, rng: np.random.Generator | None
    ) -> Report:
        """The report of one record, checked against the policy and charged to the ledger."""
        if not isinstance(record, Mapping):
            raise InvalidRecordError("a record must be a mapping of attribute name to value")
        path = record_path(config)
        if path is not None:  # GRR/unary encoding: no numpy per record
            self._check(config)
            packed = path.packed(record, resolve_rng(rng))
            if packed is not None:
                if self.ledger is None:
                    return one_report(config.config_hash, packed)
                row = np.frombuffer(packed, dtype=np.uint8).reshape(1, -1)
                return self._charge(config, row, lambda: [record])[0]
        return self.privatize_many(config, [record], rng)[0]

    def privatize_many(
        self, config: CollectionConfig, records: Iterable[Record], rng: np.random.Generator | None
    ) -> ReportColumns:
        """One report per record, in order, checked against the policy and charged."""
        rows = check_records(records)
        self._check(config)
        secret = permanent_key(self.ledger, config)  # longitudinal attributes need a ledger
        packed = Privatizer(config, secret).privatize_many(rows, rng)
        values = value_charges(
            self.ledger, config, secret, lambda: records_to_columns(config, rows)
        )
        return self._charge(config, packed, lambda: rows, values)

    def privatize_columns(
        self, config: CollectionConfig, columns: Columns, rng: np.random.Generator | None
    ) -> ReportColumns:
        """Reports of columnar records, checked against the policy and charged."""
        if not isinstance(columns, Mapping):
            raise InvalidRecordError("columns must be a mapping of attribute name to values")
        self._check(config)
        secret = permanent_key(self.ledger, config)
        packed = Privatizer(config, secret).privatize_columns(columns, rng)
        values = value_charges(self.ledger, config, secret, lambda: columns)
        return self._charge(config, packed, lambda: _rows_of(columns, len(packed)), values)

    def _check(self, config: CollectionConfig) -> None:
        if self.policy is not None:
            self.policy.check_collection(config)

    def _charge(
        self,
        config: CollectionConfig,
        packed: NDArray[np.uint8],
        records: Callable[[], Sequence[Record]],
        values: Sequence[ValueCharge] = (),
    ) -> ReportColumns:
        """Charge validated, perturbed reports to the ledger; the reports to send.

        ``records()`` gives the rows' records; it is called for memoised collections only.
        ``values``: the longitudinal attributes' distinct keys, charged ε∞ when new.
        """
        if self.ledger is None:
            return reports_from_packed(config, packed)
        keys = None
        if config.name in self.memoize:
            keys = [
                self.ledger.record_key(config.config_hash, canonical_record(config, record))
                for record in records()
            ]
        sent = self.ledger.reserve(
            config, packed, record_keys=keys, policy=self.policy, values=values
        )
        return reports_from_packed(config, sent)


def canonical_record(config: CollectionConfig, record: Record) -> bytes:
    """The record as canonical JSON (UTF-8): keys sorted, each basket as its sorted items,
    each number as what its mechanism perturbs (clipped and scaled, as a float's repr).

    Two records the mechanisms cannot tell apart (a basket given as a set, a list or in
    another order; ``5`` and ``5.0``; two values clipped to the same bound; a hashed string
    in NFC and in NFD, by its key) give the same bytes. Call it on validated records only.
    """
    document: dict[str, Any] = {}
    for spec in config.spec.attributes:
        value = record[spec.name]
        own = spec.canonical_value(value)
        if own is not None:
            document[spec.name] = own
        elif spec.is_basket:
            document[spec.name] = sorted({str(item) for item in value})
        elif spec.values:
            document[spec.name] = str(value)
        else:
            document[spec.name] = repr(float(spec.encode([value])[0]))
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def _rows_of(columns: Columns, n: int) -> Sequence[Record]:
    """The records of validated columns, one mapping per row."""
    return [{name: values[row] for name, values in columns.items()} for row in range(n)]
