"""The device's side of the longitudinal mechanisms: their secret, and what they cost.

A collection with a longitudinal attribute (L-GRR, L-OSUE, dBitFlipPM;
:mod:`ldp_shared.mechanisms.longitudinal`) needs the device's ledger twice:

* its **secret**: the permanent randomization of each value is derived from a secret the
  ledger keeps per collection (:meth:`~ldp_client.ledger.Ledger.permanent_secret`), so a
  value reported again repeats it, across runs and processes. Without a ledger the SDK
  refuses the collection (:class:`~ldp_shared.errors.ConfigurationError`): every run
  would draw new permanent responses, and averaging them would undo the memoisation;
* its **charges**: the ledger charges ε∞ once per distinct memoised key of each such
  attribute (a value for L-GRR and L-OSUE, a bucket vector for dBitFlipPM), in table
  ``distinct_values``, and nothing for the repeats (``docs/longitudinal.md``).

The keys are stored as keyed hashes (HMAC-SHA256 with the ledger's key), never as
values; what that protects depends on where the key is kept, as for the memo
(:mod:`ldp_client.ledger`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import numpy as np

from ldp_shared.codec import Columns
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms.longitudinal import LongitudinalRandomizer, attribute_key

__all__ = ["DeviceSecrets", "ValueCharge", "permanent_key", "value_charges"]


class DeviceSecrets(Protocol):
    """What these functions read from the device's ledger (:class:`ldp_client.ledger.Ledger`,
    which calls them: typed by what they need, so that neither module imports the other)."""

    def permanent_secret(self, config_hash: str) -> bytes: ...

    def value_key(self, config_hash: str, attribute: str, memo_key: int) -> bytes: ...


@dataclass(frozen=True)
class ValueCharge:
    """The distinct memoised keys of one longitudinal attribute in a batch of reports,
    as the ledger's keyed hashes, each costing ``epsilon`` (ε∞) the first time."""

    attribute: str
    epsilon: float
    keys: tuple[bytes, ...]


def permanent_key(ledger: DeviceSecrets | None, config: CollectionConfig) -> bytes | None:
    """The device's secret for the collection's permanent randomization (``None`` when it
    has no longitudinal attribute); refuses a longitudinal collection without a ledger."""
    longitudinal = config.privacy.longitudinal
    if not longitudinal:
        return None
    if ledger is None:
        names = ", ".join(f"{e.spec.name!r} ({e.spec.mechanism})" for e in longitudinal)
        raise ConfigurationError(
            f"collection {config.name!r} has longitudinal attribute(s) {names}: their"
            " permanent randomization is memoised in the device's ledger, so a client"
            " needs one to report to it (ledger=path)"
        )
    return ledger.permanent_secret(config.config_hash)


def value_charges(
    ledger: DeviceSecrets | None,
    config: CollectionConfig,
    secret: bytes | None,
    columns: Callable[[], Columns],
) -> list[ValueCharge]:
    """The distinct memoised keys of each longitudinal attribute in the records of
    ``columns()`` (called only for a longitudinal collection), as ledger keys."""
    if ledger is None or secret is None:
        return []
    data = columns()
    charges: list[ValueCharge] = []
    for entry in config.privacy.longitudinal:
        randomizer = entry.randomizer
        assert isinstance(randomizer, LongitudinalRandomizer) and entry.permanent is not None
        name = entry.spec.name
        encoded = entry.spec.encode(data[name])
        keys = np.unique(randomizer.memo_keys(encoded, attribute_key(secret, name)))
        hashed = tuple(ledger.value_key(config.config_hash, name, int(k)) for k in keys)
        charges.append(ValueCharge(name, entry.permanent, hashed))
    return charges


def unseen_values(
    db: sqlite3.Connection, config_hash: str, charges: Sequence[ValueCharge]
) -> list[tuple[str, bytes, float]]:
    """The ``(attribute, key, ε∞)`` of the charged keys the ledger has not met before."""
    out: list[tuple[str, bytes, float]] = []
    for charge in charges:
        for key in charge.keys:
            found = db.execute(
                "SELECT 1 FROM distinct_values WHERE config_hash = ? AND attribute = ?"
                " AND value_key = ?",
                (config_hash, charge.attribute, key),
            ).fetchone()
            if found is None:
                out.append((charge.attribute, key, charge.epsilon))
    return out


def epsilon_spent(db: sqlite3.Connection, config_hash: str) -> float:
    """The ε a ledger has charged so far to the collection with this config hash."""
    row = db.execute(
        "SELECT (SELECT COALESCE(SUM(epsilon), 0.0) FROM spending WHERE config_hash = ?)"
        " + (SELECT COALESCE(SUM(epsilon), 0.0) FROM distinct_values WHERE config_hash = ?)",
        (config_hash, config_hash),
    ).fetchone()
    return float(row[0])


def record_values(
    db: sqlite3.Connection, config: CollectionConfig, new: Sequence[tuple[str, bytes, float]]
) -> None:
    """Remember (and charge) the keys of :func:`unseen_values`."""
    made_at = datetime.now(UTC).isoformat(timespec="seconds")
    db.executemany(
        "INSERT INTO distinct_values (config_hash, collection, attribute, value_key, epsilon,"
        " made_at) VALUES (?, ?, ?, ?, ?, ?)",
        [(config.config_hash, config.name, a, key, eps, made_at) for a, key, eps in new],
    )
