"""Training jobs' rounds, participation tokens and the open round's reports.

A training job is a row of the ``jobs`` table (kind ``training``; its spec in
``request_json``, its model in ``result_json`` when done) plus:

* ``training_rounds``: one row per job, the open round, the reports it has received per
  role, the weights it is computed at and the running sum of the tail's iterates (its
  ``curve_json`` is no longer written: ``[]``; the curve is ``training_curve``). Every
  report's transaction updates this row with a guarded increment, so
  replicas sharing one database serialise on it (PostgreSQL's row lock, SQLite's write
  lock) and a round never takes more reports than its places.
* ``training_tokens`` (its functions: :mod:`ldp_aggregator.storage.participations`):
  the SHA-256 of each participation token issued, with its round, role, ``used`` (0: a
  place not answered yet, 1: answered, 2: a token issued beyond the places, not answered
  yet) and, while it holds a place, ``held_until``: the end of the hold rounded up to a
  multiple of the hold (``hold_end``), never the second it was issued. A token is the
  device's secret; nothing links it to a device or a network address. The report's
  transaction marks its token used and clears ``held_until`` (``use_token``): the token
  row that shares that transaction (PostgreSQL's ``xmin``) holds no time. The
  transaction that closes a round rewrites every token of the round
  (:func:`advance_round`): none holds a time afterwards, and on PostgreSQL they all
  carry its ``xmin``, not those of the reports' transactions. A token its device gives
  back unused (its record does not fit the layout, or the device refuses the job) is
  deleted (:func:`release_token`), which frees its place at once.
* ``training_reports``: the open round's perturbed reports, under random ids on a
  ``WITHOUT ROWID`` table (no arrival order on SQLite). They are deleted in the
  transaction that closes their round.
* ``training_curve``: one row per closed round, its log (JSON). A round's close adds its
  row; nothing a request or a close writes grows with the rounds already run.

Migration 0005 creates these tables; 0009 replaced the tokens' ``issued_unix`` (the
issuing second) with ``held_until``; 0011 moved the curve out of ``training_rounds``
(whose row every request of the job updates) into ``training_curve`` and indexed the
tokens by round (the open round's tokens are found without reading the earlier ones).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sqlalchemy import (
    BigInteger,
    BindParameter,
    ClauseElement,
    Column,
    Connection,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    bindparam,
    delete,
    insert,
    select,
    update,
)

from ldp_aggregator.storage.driver import DriverResult, DriverStatement, compile_for
from ldp_aggregator.storage.tables import metadata
from ldp_shared.kernel import FloatArray

training_rounds = Table(
    "training_rounds",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("round", Integer, nullable=False),
    Column("gradient_received", Integer, nullable=False),
    Column("loss_received", Integer, nullable=False),
    Column("weights", LargeBinary, nullable=False),
    Column("weight_sum", LargeBinary, nullable=False),
    Column("curve_json", Text, nullable=False),
)

training_tokens = Table(
    "training_tokens",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("token_hash", LargeBinary(32), nullable=False),
    Column("round", Integer, nullable=False),
    Column("role", String(8), nullable=False),
    Column("used", Integer, nullable=False),
    Column("held_until", BigInteger, nullable=True),
    PrimaryKeyConstraint("job_id", "token_hash"),
    Index("ix_training_tokens_round", "job_id", "round"),
    sqlite_with_rowid=False,
)

training_curve = Table(
    "training_curve",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("round", Integer, nullable=False),
    Column("log_json", Text, nullable=False),
    PrimaryKeyConstraint("job_id", "round"),
)

training_reports = Table(
    "training_reports",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("report_id", LargeBinary(16), nullable=False),
    Column("round", Integer, nullable=False),
    Column("role", String(8), nullable=False),
    Column("payload", LargeBinary, nullable=False),
    PrimaryKeyConstraint("job_id", "report_id"),
    sqlite_with_rowid=False,
)


def to_blob(vector: FloatArray) -> bytes:
    """A float vector as little-endian float64 bytes (exact)."""
    return np.asarray(vector, dtype="<f8").tobytes()


def from_blob(blob: bytes) -> FloatArray:
    """The float vector of :func:`to_blob`."""
    out: FloatArray = np.frombuffer(bytes(blob), dtype="<f8").astype(np.float64)
    return out


@dataclass(frozen=True)
class RoundCounts:
    """A job's open round and the reports it has received per role."""

    round: int
    gradient_received: int
    loss_received: int


@dataclass(frozen=True)
class RoundRow(RoundCounts):
    """A job's open round with its weights."""

    weights: FloatArray
    weight_sum: FloatArray


def insert_rounds(connection: Connection, job_id: str, dimension: int) -> None:
    """Open round 0 at the zero weights."""
    zeros = to_blob(np.zeros(dimension))
    connection.execute(
        insert(training_rounds).values(
            job_id=job_id,
            round=0,
            gradient_received=0,
            loss_received=0,
            weights=zeros,
            weight_sum=zeros,
            curve_json="[]",
        )
    )


# ------------------------------------------------------------------ a device's requests
# The statements every device's request runs, compiled once per dialect and run on the
# driver (:mod:`ldp_aggregator.storage.driver`): SQLAlchemy's per-execution work on
# them cost more CPU than the database's.


def _lock_statement() -> ClauseElement:
    t = training_rounds.c
    return (
        update(training_rounds)
        .where(t.job_id == bindparam("job"))
        .values(round=t.round)
        .returning(t.round, t.gradient_received, t.loss_received)
    )


def _claim_statement(role: str) -> ClauseElement:
    t = training_rounds.c
    column = t.gradient_received if role == "gradient" else t.loss_received
    return (
        update(training_rounds)
        .where(t.job_id == bindparam("job"), t.round == bindparam("rnd"), column < bindparam("n"))
        .values({column: column + 1})
    )


def _insert_report_statement() -> ClauseElement:
    return insert(training_reports).values(
        job_id=bindparam("job"),
        report_id=bindparam("rid"),
        round=bindparam("rnd"),
        role=bindparam("role"),
        payload=bindparam("payload"),
    )


def _release_statement() -> ClauseElement:
    t = training_tokens.c
    return (
        delete(training_tokens)
        .where(t.job_id == bindparam("job"), t.token_hash == bindparam("hash"), t.used != 1)
        .returning(t.round)
    )


def _find_token_statement() -> ClauseElement:
    t = training_tokens.c
    return select(t.round, t.role, t.used).where(
        t.job_id == bindparam("job"), t.token_hash == bindparam("hash")
    )


def _round_closing_statements() -> dict[str, Callable[[], ClauseElement]]:
    """What the report that fills a round runs once more (:func:`read_round` to
    :func:`advance_round`): a round of 20 devices closes every 20 reports."""
    t, r, k = training_rounds.c, training_reports.c, training_tokens.c
    job: BindParameter[str] = bindparam("job")
    return {
        "read-round": lambda: select(
            t.round, t.gradient_received, t.loss_received, t.weights, t.weight_sum
        ).where(t.job_id == job),
        "round-reports": lambda: select(r.role, r.payload).where(
            r.job_id == job, r.round == bindparam("rnd")
        ),
        "append-curve": lambda: insert(training_curve).values(
            job_id=job, round=bindparam("rnd"), log_json=bindparam("log")
        ),
        "advance": lambda: (
            update(training_rounds)
            .where(t.job_id == job, t.round == bindparam("rnd"))
            .values(
                round=bindparam("rnd") + 1,
                gradient_received=0,
                loss_received=0,
                weights=bindparam("weights"),
                weight_sum=bindparam("weight_sum"),
            )
        ),
        "drop-reports": lambda: delete(training_reports).where(
            r.job_id == job, r.round == bindparam("rnd")
        ),
        "untime-tokens": lambda: (
            update(training_tokens)
            .where(k.job_id == job, k.round == bindparam("rnd"))
            .values(held_until=None)
        ),
    }


_STATEMENTS: dict[str, Callable[[], ClauseElement]] = {
    **_round_closing_statements(),
    "lock": _lock_statement,
    "claim-gradient": lambda: _claim_statement("gradient"),
    "claim-loss": lambda: _claim_statement("loss"),
    "insert-report": _insert_report_statement,
    "release": _release_statement,
    "find-token": _find_token_statement,
}


@lru_cache(maxsize=64)
def _compiled(dialect: Dialect, name: str) -> DriverStatement:
    return compile_for(_STATEMENTS[name](), dialect)


def run_statement(connection: Connection, name: str, values: dict[str, object]) -> DriverResult:
    """Run the hot statement ``name`` (of this module's or a caller's registry)."""
    return _compiled(connection.dialect, name).run(connection, values)


def lock_round(connection: Connection, job_id: str) -> RoundCounts | None:
    """Take the job's round row for this transaction (PostgreSQL: its row lock; SQLite:
    the write lock) and read its open round's counts; ``None`` for a job without one."""
    row = run_statement(connection, "lock", {"job": job_id}).one_or_none()
    if row is None:
        return None
    return RoundCounts(int(row.round), int(row.gradient_received), int(row.loss_received))


def read_counts(connection: Connection, job_id: str) -> RoundCounts | None:
    """The job's open round and its counts (no weights), or ``None`` for a job that has
    none."""
    t = training_rounds.c
    row = connection.execute(
        select(t.round, t.gradient_received, t.loss_received).where(t.job_id == job_id)
    ).one_or_none()
    if row is None:
        return None
    return RoundCounts(int(row.round), int(row.gradient_received), int(row.loss_received))


def read_round(connection: Connection, job_id: str) -> RoundRow | None:
    """The job's open round with its weights, or ``None`` for a job that has none."""
    row = run_statement(connection, "read-round", {"job": job_id}).one_or_none()
    if row is None:
        return None
    return RoundRow(
        round=int(row.round),
        gradient_received=int(row.gradient_received),
        loss_received=int(row.loss_received),
        weights=from_blob(row.weights),
        weight_sum=from_blob(row.weight_sum),
    )


def append_curve(connection: Connection, job_id: str, round_: int, log_json: str) -> None:
    """Keep the log of the closed round ``round_``."""
    run_statement(connection, "append-curve", {"job": job_id, "rnd": round_, "log": log_json})


def read_curve(connection: Connection, job_id: str) -> list[str]:
    """The logs of the job's closed rounds (JSON), in round order."""
    t = training_curve.c
    rows = connection.execute(
        select(t.log_json).where(t.job_id == job_id).order_by(t.round)
    ).scalars()
    return [str(log) for log in rows]


def claim_place(connection: Connection, job_id: str, round_: int, role: str, places: int) -> bool:
    """Count one more report of ``role`` in ``round_`` if that round is open and has a free
    place; whether it did. The guarded update takes the row's lock until commit."""
    result = run_statement(connection, f"claim-{role}", {"job": job_id, "rnd": round_, "n": places})
    return result.rowcount == 1


@dataclass(frozen=True)
class FoundToken:
    """A participation token as stored: its round, role and ``used`` (0: a held place,
    1: answered, 2: issued beyond the places)."""

    round: int
    role: str
    used: int


def find_token(connection: Connection, job_id: str, token_hash: bytes) -> FoundToken | None:
    """The job's token ``token_hash`` (read only), or ``None`` if the job holds none."""
    row = run_statement(connection, "find-token", {"job": job_id, "hash": token_hash}).first()
    return None if row is None else FoundToken(int(row.round), str(row.role), int(row.used))


def release_token(connection: Connection, job_id: str, token_hash: bytes) -> bool:
    """Delete the job's token ``token_hash`` if it was never used (a held place, or one
    issued beyond the places): the device gave it back before its hold ended, so the place
    is free for another now. Whether there was such a token; a used token is kept (its
    report was counted, and a repeat of that report must still be told so)."""
    found = run_statement(connection, "release", {"job": job_id, "hash": token_hash}).first()
    return found is not None


def advance_round(
    connection: Connection,
    job_id: str,
    closed: int,
    weights: FloatArray,
    weight_sum: FloatArray,
) -> None:
    """Open round ``closed + 1`` at ``weights`` and drop round ``closed``'s reports."""
    key = {"job": job_id, "rnd": closed}
    blobs = {"weights": to_blob(weights), "weight_sum": to_blob(weight_sum)}
    run_statement(connection, "advance", {**key, **blobs})
    run_statement(connection, "drop-reports", key)
    # every token of the closed round: no time left, and (PostgreSQL) this transaction's
    # xmin on all of them instead of those of the reports' transactions
    run_statement(connection, "untime-tokens", key)


def insert_report(
    connection: Connection, job_id: str, round_: int, role: str, payload: bytes
) -> None:
    """Keep one report of the open round (under a random id)."""
    values = {
        "job": job_id,
        "rid": secrets.token_bytes(16),
        "rnd": round_,
        "role": role,
        "payload": payload,
    }
    run_statement(connection, "insert-report", values)


def round_reports(connection: Connection, job_id: str, round_: int) -> dict[str, list[bytes]]:
    """The round's stored reports per role (in the order of their random ids)."""
    rows = run_statement(connection, "round-reports", {"job": job_id, "rnd": round_})
    out: dict[str, list[bytes]] = {"gradient": [], "loss": []}
    for role, payload in rows:
        out[str(role)].append(bytes(payload))
    return out
