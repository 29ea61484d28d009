"""Participation tokens of training jobs (the ``training_tokens`` table of
:mod:`ldp_aggregator.storage.training`): a place held until the coarse end of its hold,
a token issued beyond the places (:data:`SPARE`), and using a token once.

What a token row holds and why it holds no finer time is in
:mod:`ldp_aggregator.storage.training` and ``docs/training-jobs.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy import (
    ClauseElement,
    Connection,
    Dialect,
    and_,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)

from ldp_aggregator.storage.driver import DriverResult, DriverStatement, compile_for
from ldp_aggregator.storage.training import training_tokens

SPARE = 2
"""``used`` of an over-issued token not answered yet: it holds no place (no
``held_until``); the round closes at its first ``round_size`` reports, whichever tokens
they come on (docs/training-jobs.md, "Place-squatting")."""


def hold_end(now: int, hold: int) -> int:
    """When a place issued at second ``now`` and held ``hold`` seconds is freed, as stored:
    ``now + hold`` rounded up to a multiple of ``hold``. The place is held at least
    ``hold`` seconds and less than twice that; the stored value tells only in which
    window of ``hold`` seconds it was issued, which every place issued then shares."""
    return -(-(now + hold) // hold) * hold


def _statements() -> dict[str, ClauseElement]:
    t = training_tokens.c
    key = and_(t.job_id == bindparam("job"), t.token_hash == bindparam("hash"))
    held = [t.job_id == bindparam("job"), t.round == bindparam("rnd"), t.used == 0]
    return {
        "insert": insert(training_tokens).values(
            job_id=bindparam("job"),
            token_hash=bindparam("hash"),
            round=bindparam("rnd"),
            role=bindparam("role"),
            used=0,
            held_until=bindparam("until"),
        ),
        "pending": select(t.role, func.count().label("n"))
        .where(*held, t.held_until >= bindparam("now"))
        .group_by(t.role),
        "first-held": select(func.min(t.held_until).label("first")).where(
            *held, t.held_until >= bindparam("now")
        ),
        # a place of the open round lapsed unanswered, or one of the round before left
        "lapsed": select(t.round)
        .where(
            t.job_id == bindparam("job"),
            t.used == 0,
            and_(t.round == bindparam("rnd"), t.held_until < bindparam("now"))
            | (t.round == bindparam("rnd") - 1),
        )
        .limit(1),
        # used once: the guarded update flips an unused token (a place or a spare)
        "use": update(training_tokens)
        .where(key, t.used != 1)
        .values(used=1, held_until=None)
        .returning(t.round, t.role),
        "find": select(t.round, t.role).where(key),
    }


@lru_cache(maxsize=16)
def _compiled(dialect: Dialect) -> dict[str, DriverStatement]:
    return {name: compile_for(query, dialect) for name, query in _statements().items()}


def _run(connection: Connection, name: str, values: dict[str, object]) -> DriverResult:
    return _compiled(connection.dialect)[name].run(connection, values)


def insert_token(
    connection: Connection, job_id: str, token_hash: bytes, round_: int, role: str, held_until: int
) -> None:
    """Store an issued token's hash, holding its place until ``held_until``
    (:func:`hold_end`)."""
    values = {"job": job_id, "hash": token_hash, "rnd": round_, "role": role}
    _run(connection, "insert", {**values, "until": held_until})


def insert_spare(
    connection: Connection, job_id: str, token_hash: bytes, round_: int, role: str
) -> None:
    """Store an over-issued token's hash: it holds no place and no time."""
    connection.execute(
        insert(training_tokens).values(
            job_id=job_id, token_hash=token_hash, round=round_, role=role, used=SPARE
        )
    )


def places_lapsed(connection: Connection, job_id: str, round_: int, now: int) -> bool:
    """Whether a place of the open round ``round_`` has lapsed unanswered by second
    ``now``, or the previous round closed with a place never answered: a holder that
    does not report, which honest devices rarely are."""
    values = {"job": job_id, "rnd": round_, "now": now}
    return _run(connection, "lapsed", values).first() is not None


def pending_tokens(connection: Connection, job_id: str, round_: int, now: int) -> dict[str, int]:
    """Unused tokens of ``round_`` still holding their place at second ``now``, per role."""
    rows = _run(connection, "pending", {"job": job_id, "rnd": round_, "now": now}).all()
    return {str(row.role): int(row.n) for row in rows}


def first_held_until(connection: Connection, job_id: str, round_: int, now: int) -> int | None:
    """The stored end of the first place of ``round_`` to be freed after second ``now``;
    ``None`` when no place is held."""
    row = _run(connection, "first-held", {"job": job_id, "rnd": round_, "now": now}).first()
    return None if row is None or row.first is None else int(row.first)


@dataclass(frozen=True)
class TokenRow:
    round: int
    role: str
    used: bool


def use_token(connection: Connection, job_id: str, token_hash: bytes) -> TokenRow | None:
    """Mark the token used and drop its time (the row now shares the report's transaction:
    it must not hold when the place was issued); what it was before (``used`` true: it had
    been used already), or ``None`` for a token this job never issued. The update is
    guarded (``used`` not 1): of two transactions using one token, one flips it. A spare
    (:data:`SPARE`) is used like a place."""
    values: dict[str, object] = {"job": job_id, "hash": token_hash}
    flipped = _run(connection, "use", values).one_or_none()
    if flipped is not None:
        return TokenRow(int(flipped.round), str(flipped.role), False)
    found = _run(connection, "find", values).one_or_none()
    if found is None:
        return None
    return TokenRow(int(found.round), str(found.role), True)


def drop_job_tokens(connection: Connection, job_id: str) -> None:
    """A finished job's tokens are of no further use."""
    connection.execute(delete(training_tokens).where(training_tokens.c.job_id == job_id))
