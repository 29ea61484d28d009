"""Participation tokens of training jobs (the ``training_tokens`` table of
:mod:`ldp_aggregator.storage.training`): a place held until the coarse end of its hold,
a token issued beyond the places (:data:`SPARE`), and using a token once.

What a token row holds and why it holds no finer time is in
:mod:`ldp_aggregator.storage.training` and ``docs/training-jobs.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, and_, delete, func, insert, select, update

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


def insert_token(
    connection: Connection, job_id: str, token_hash: bytes, round_: int, role: str, held_until: int
) -> None:
    """Store an issued token's hash, holding its place until ``held_until``
    (:func:`hold_end`)."""
    connection.execute(
        insert(training_tokens).values(
            job_id=job_id,
            token_hash=token_hash,
            round=round_,
            role=role,
            used=0,
            held_until=held_until,
        )
    )


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
    t = training_tokens.c
    lapsed_now = and_(t.round == round_, t.held_until < now)
    left_before = t.round == round_ - 1
    found = connection.execute(
        select(t.round).where(t.job_id == job_id, t.used == 0, lapsed_now | left_before).limit(1)
    ).first()
    return found is not None


def _held(job_id: str, round_: int, now: int) -> list[ColumnElement[bool]]:
    """Unused tokens of ``round_`` whose place is still held at second ``now``."""
    return [
        training_tokens.c.job_id == job_id,
        training_tokens.c.round == round_,
        training_tokens.c.used == 0,
        training_tokens.c.held_until >= now,
    ]


def pending_tokens(connection: Connection, job_id: str, round_: int, now: int) -> dict[str, int]:
    """Unused tokens of ``round_`` still holding their place at second ``now``, per role."""
    rows = connection.execute(
        select(training_tokens.c.role, func.count())
        .where(*_held(job_id, round_, now))
        .group_by(training_tokens.c.role)
    ).all()
    return {str(role): int(count) for role, count in rows}


def first_held_until(connection: Connection, job_id: str, round_: int, now: int) -> int | None:
    """The stored end of the first place of ``round_`` to be freed after second ``now``;
    ``None`` when no place is held."""
    first = connection.execute(
        select(func.min(training_tokens.c.held_until)).where(*_held(job_id, round_, now))
    ).scalar_one()
    return None if first is None else int(first)


@dataclass(frozen=True)
class TokenRow:
    round: int
    role: str
    used: bool


def use_token(connection: Connection, job_id: str, token_hash: bytes) -> TokenRow | None:
    """Mark the token used and drop its time (the row now shares the report's transaction:
    it must not hold when the place was issued); what it was before (``used`` true: it had
    been used already), or ``None`` for a token this job never issued. The update is
    guarded (on the ``used`` it read): of two transactions using one token, one flips it.
    A spare (:data:`SPARE`) is used like a place."""
    key = and_(training_tokens.c.job_id == job_id, training_tokens.c.token_hash == token_hash)
    row = connection.execute(
        select(training_tokens.c.round, training_tokens.c.role, training_tokens.c.used).where(key)
    ).one_or_none()
    if row is None:
        return None
    if row.used != 1:
        flipped = connection.execute(
            update(training_tokens)
            .where(key, training_tokens.c.used == row.used)
            .values(used=1, held_until=None)
        )
        if flipped.rowcount != 1:  # another transaction used it first
            return TokenRow(int(row.round), str(row.role), True)
    return TokenRow(int(row.round), str(row.role), row.used == 1)


def drop_job_tokens(connection: Connection, job_id: str) -> None:
    """A finished job's tokens are of no further use."""
    connection.execute(delete(training_tokens).where(training_tokens.c.job_id == job_id))
