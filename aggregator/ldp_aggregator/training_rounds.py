"""Training jobs driven by the devices: places in the open round, one report each, and
the round that closes at its first ``round_size`` reports.

A device asks for a place (:func:`issue_participation`) and answers once
(:func:`accept_report`). While the round's places are held by devices that answer, a
further ask waits for the round to close
(:func:`~ldp_aggregator.training_place_wait.wait_for_place`; 429 if it does not within
five seconds); once a place has lapsed unanswered, tokens are
issued beyond the places, so a client that takes places and never reports cannot stall the job
(place-squatting). The report that fills a round's last place closes it in the same
transaction (:func:`ldp_aggregator.training_close.close_if_full`). Nothing runs in the
background, so a job survives a restart, and replicas sharing one PostgreSQL database
take reports of one round side by side: every writing transaction first locks the job's
round row (:func:`_lock`), so a round never takes more reports than its places and is
closed exactly once. The routes run :func:`issue_in`, :func:`accept_in` and
:func:`release_in` (a device giving its place back) in the transactions of
:mod:`ldp_aggregator.training_commit`, many requests to a commit; each reads and checks
before it writes, so a refused request writes nothing.

See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy import Connection, Engine

from ldp_aggregator.storage import participations as tokens
from ldp_aggregator.storage import training as store
from ldp_aggregator.storage.at_rest import truncate_wal
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import refusal_to_write
from ldp_aggregator.storage.training import RoundCounts
from ldp_aggregator.training import JobMechanisms, check_report, device_job, progress_text
from ldp_aggregator.training_close import close_if_full
from ldp_aggregator.training_place_wait import round_signals
from ldp_shared.errors import (
    AlreadyParticipatedError,
    NotFoundError,
    RateLimitedError,
    RoundClosedError,
)
from ldp_shared.wire.reports import decode_bits
from ldp_shared.wire.training import (
    Participation,
    ParticipationReport,
    ParticipationResult,
)

logger = logging.getLogger("ldp_aggregator")


RETRY_SECONDS = 1
"""``Retry-After`` when every place of the open round is still held after the request
waited :data:`~ldp_aggregator.training_place_wait.PLACE_WAIT_SECONDS` for the round to
close: a held place is normally
answered within a device's round trip, which closes the round and opens the next; the
detail also states the longest wait (:func:`held_place_wait`), for a place whose device
never answers."""


def held_place_wait(first_held_until: int | None, now: int) -> int:
    """Whole seconds until the first held place of a full round is freed (at least 1).

    A place is held while ``now <= held_until`` (its stored end,
    :func:`~ldp_aggregator.storage.training.hold_end`), so it is free again at
    ``held_until + 1``.
    """
    if first_held_until is None:
        return 1
    return max(1, first_held_until + 1 - now)


def _refuse_if_closed(connection: Connection, collection: StoredCollection) -> None:
    """A closed (or deleted) collection takes no participation and no report of its jobs."""
    refusal = refusal_to_write(connection, collection)
    if refusal is not None:
        raise refusal


def _lock(connection: Connection, collection: StoredCollection, job_id: str) -> RoundCounts:
    """Take the job's round row for this transaction (PostgreSQL: its row lock; SQLite:
    the write lock), before anything is read: transactions of one job run one at a time.
    The open round's counts; :class:`NotFoundError` for a job without a round row."""
    state = store.lock_round(connection, job_id)
    if state is None:
        raise NotFoundError(f"collection {collection.name!r} has no training job {job_id!r}")
    return state


# ---------------------------------------------------------------------- devices

_SHARED_KEPT = 64
_shared: dict[tuple[str, int], bytes] = {}
"""The JSON of what every place of a round shares (its weights, layout, mechanisms), by
job and round: written once per round, not per place. A round's weights never change
once it is open, so the entry holds for as long as it is kept."""


def _shared_json(
    connection: Connection,
    collection: StoredCollection,
    job_id: str,
    round_: int,
    mechanisms: JobMechanisms,
) -> bytes:
    key = (job_id, round_)
    found = _shared.get(key)
    if found is not None:
        return found
    state = store.read_round(connection, job_id)
    assert state is not None and state.round == round_  # the round row is locked
    whole = Participation(
        job=job_id,
        collection=collection.name,
        token="x" * 43,
        round=round_,
        role="gradient",
        weights=state.weights.tolist(),
        layout=mechanisms.spec.layout,
        gradient=mechanisms.gradient_config(),
        loss=mechanisms.loss_config(),
        epsilon=mechanisms.epsilon,
        delta=mechanisms.gradient.delta,
        expires_unix=0,
    )
    text = whole.model_dump_json(exclude={"token", "role", "expires_unix"}).encode("utf-8")
    if len(_shared) >= _SHARED_KEPT:
        _shared.pop(next(iter(_shared)), None)
    _shared[key] = text
    return text


def _participation_json(shared: bytes, token: str, role: str, held_until: int) -> bytes:
    """A place's JSON: its own fields, then those the round's places share."""
    own = f'{{"token":"{token}","role":"{role}","expires_unix":{held_until},'
    return own.encode("ascii") + shared[1:]


def issue_in(
    connection: Connection,
    collection: StoredCollection,
    job_id: str,
    *,
    overissue: bool = True,
    randbelow: Callable[[int], int] = secrets.randbelow,
) -> bytes:
    """:func:`issue_participation` in the caller's transaction (a group's,
    :mod:`ldp_aggregator.training_commit`), as the JSON of the :class:`Participation` the
    route answers (the round's shared part serialised once per round): it reads and
    checks first and writes last, so a refusal writes nothing."""
    token = secrets.token_urlsafe(32)
    state = _lock(connection, collection, job_id)
    mechanisms = device_job(connection, collection, job_id)
    _refuse_if_closed(connection, collection)
    if state.round >= mechanisms.plan.rounds:
        raise RoundClosedError(f"training job {job_id!r} has finished; it takes no reports")
    spec = mechanisms.spec
    now = int(time.time())
    pending = tokens.pending_tokens(connection, job_id, state.round, now)
    received = {"gradient": state.gradient_received, "loss": state.loss_received}
    free = {
        role: places - received[role] - pending.get(role, 0)
        for role, places in mechanisms.places.items()
    }
    held_until = tokens.hold_end(now, math.ceil(spec.participation_seconds))
    total = sum(max(0, n) for n in free.values())
    if total > 0:
        role = _draw_role(free, total, randbelow)
        tokens.insert_token(connection, job_id, _hash(token), state.round, role, held_until)
    elif overissue and tokens.places_lapsed(connection, job_id, state.round, now):
        # a holder that never reports (a squatter, or a device gone) must not stall
        # the round: issue beyond the places, the first reports close it
        needed = {role: places - received[role] for role, places in mechanisms.places.items()}
        role = _draw_role(needed, sum(max(0, n) for n in needed.values()), randbelow)
        tokens.insert_spare(connection, job_id, _hash(token), state.round, role)
    else:
        # the places are held by devices computing their reports; the round closes
        # (and the next opens) as soon as those arrive, or a place is freed when it
        # expires: a device asks again soon, and the detail states the longest wait
        first = tokens.first_held_until(connection, job_id, state.round, now)
        wait = held_place_wait(first, now)
        raise RateLimitedError(
            f"every place of round {state.round} of training job {job_id!r} is held by a"
            f" device that has not answered yet; try again in {RETRY_SECONDS} s: the"
            f" round closes as soon as those devices answer, and the first held place"
            f" is freed in {wait} s at the latest",
            retry_after=RETRY_SECONDS,
        )
    shared = _shared_json(connection, collection, job_id, state.round, mechanisms)
    return _participation_json(shared, token, role, held_until)


def issue_participation(
    engine: Engine,
    collection: StoredCollection,
    job_id: str,
    *,
    overissue: bool = True,
    randbelow: Callable[[int], int] = secrets.randbelow,
) -> Participation:
    """A place in the open round, its role drawn among the free places; or, while every
    place is held and one has lapsed unanswered (:func:`tokens.places_lapsed`), an
    over-issued token (``overissue``; docs/training-jobs.md, "Place-squatting").

    Raises :class:`RoundClosedError` when the job has finished, and
    :class:`RateLimitedError` (with ``Retry-After``) while every place of the round is
    held and none has lapsed (the route first waits for the round to close:
    :func:`wait_for_place`). A place is held for ``participation_seconds`` rounded up to
    whole seconds, its end then rounded up to a multiple of that (:func:`tokens.hold_end`):
    the token's row keeps no finer time of when it was issued. The round closes at its
    first ``round_size`` reports, whichever tokens they come on. Roles are drawn with
    ``randbelow`` (the CSPRNG unless a test injects a seeded source).
    """
    with engine.begin() as connection:
        body = issue_in(connection, collection, job_id, overissue=overissue, randbelow=randbelow)
    return Participation.model_validate_json(body)


def _draw_role(free: dict[str, int], total: int, randbelow: Callable[[int], int]) -> str:
    """``gradient`` or ``loss``, in proportion to the free (positive) counts."""
    return "gradient" if randbelow(total) < max(0, free["gradient"]) else "loss"


def accept_report(
    engine: Engine,
    collection: StoredCollection,
    job_id: str,
    token: str,
    body: ParticipationReport,
) -> ParticipationResult:
    """Keep the one report of the participation ``token``; close the round if it was the
    round's last place. Nothing is stored when any check fails."""
    payload = decode_bits(body.report)
    with engine.begin() as connection:
        accepted = accept_in(connection, collection, job_id, token, payload)
    after_report(engine, accepted)
    return accepted.result


@dataclass(frozen=True)
class Accepted:
    """A kept report: the answer, and whether it closed its job's round (and the last)."""

    result: ParticipationResult
    finished: bool


def accept_in(
    connection: Connection,
    collection: StoredCollection,
    job_id: str,
    token: str,
    payload: bytes,
) -> Accepted:
    """:func:`accept_report` in the caller's transaction (a group's,
    :mod:`ldp_aggregator.training_commit`), the report already decoded; it reads and
    checks first and writes last, so a refusal writes nothing. Once the transaction has
    committed, :func:`after_report`."""
    state = _lock(connection, collection, job_id)
    mechanisms = device_job(connection, collection, job_id)
    _refuse_if_closed(connection, collection)
    if state.round >= mechanisms.plan.rounds:  # its tokens are gone: say why
        raise RoundClosedError(f"training job {job_id!r} has finished; the report was not kept")
    found = store.find_token(connection, job_id, _hash(token))
    if found is None:
        raise NotFoundError(f"training job {job_id!r} issued no such participation")
    if found.used == 1:
        raise AlreadyParticipatedError("this participation has sent its report already")
    if found.round != state.round:
        now = progress_text(mechanisms.spec, state.round)
        raise RoundClosedError(
            f"round {found.round} of training job {job_id!r} is closed (the job is at"
            f" {now}); the report was not kept"
        )
    check_report(mechanisms, found.role, payload)
    received = {"gradient": state.gradient_received, "loss": state.loss_received}
    if received[found.role] >= mechanisms.places[found.role]:
        raise RoundClosedError(f"round {found.round} has no free place for this report")
    # the checks hold under the round row's lock; the guarded writes below confirm them
    used = tokens.use_token(connection, job_id, _hash(token))
    places = mechanisms.places[found.role]
    if (
        used is None
        or used.used
        or not store.claim_place(connection, job_id, found.round, found.role, places)
    ):
        raise RuntimeError("a training token or place changed under its round's lock")
    store.insert_report(connection, job_id, found.round, found.role, payload)
    received[found.role] += 1
    counts = replace(state, gradient_received=received["gradient"], loss_received=received["loss"])
    closed = close_if_full(connection, job_id, mechanisms, collection, counts)
    result = ParticipationResult(
        job=job_id, round=found.round, role=found.role, round_closed=closed
    )
    return Accepted(result, closed and state.round + 1 >= mechanisms.plan.rounds)


def after_report(engine: Engine, accepted: Accepted) -> None:
    """After a report's transaction has committed: if it closed its round, wake this
    process's requests waiting for a place and empty SQLite's log."""
    if accepted.result.round_closed:
        round_signals.notify(accepted.result.job, finished=accepted.finished)
        _forget_order(engine)


def release_participation(
    engine: Engine, collection: StoredCollection, job_id: str, token: str
) -> None:
    """Give back the place of the participation ``token``, unused (``DELETE
    .../participations/{token}``): its device will not report (its record does not fit
    the layout, or it refuses the job's numbers or its policy forbids them), so the place
    is free for another device now rather than when its hold ends, and no lapse is left
    behind to turn on over-issuing. The token's row is deleted: nothing is kept.

    :class:`NotFoundError` for a token the job never issued (or one already given back,
    or a finished job's), :class:`AlreadyParticipatedError` for a used one (its report
    was kept). A closed collection still takes a release: it only deletes.
    """
    with engine.begin() as connection:
        release_in(connection, collection, job_id, token)
    round_signals.notify(job_id)


def release_in(
    connection: Connection, collection: StoredCollection, job_id: str, token: str
) -> None:
    """:func:`release_participation` in the caller's transaction (refusals write
    nothing); once it has committed, ``round_signals.notify(job_id)``: a request waiting
    for a place of this job asks again."""
    _lock(connection, collection, job_id)  # one at a time with the job's other writes
    device_job(connection, collection, job_id)  # the job is the collection's
    found = store.find_token(connection, job_id, _hash(token))
    if found is not None and found.used == 1:
        raise AlreadyParticipatedError("this participation has sent its report already")
    if found is None or not store.release_token(connection, job_id, _hash(token)):
        raise NotFoundError(f"training job {job_id!r} holds no such unused participation")


def _forget_order(engine: Engine) -> None:
    """Empty SQLite's write-ahead log once a round's reports are deleted: it kept the pages
    they were written to, in the order they came (docs/privacy-at-rest.md)."""
    try:
        truncate_wal(engine)
    except Exception:  # the round is committed: its last device must not see a failure
        logger.exception("the write-ahead log was not truncated after a round closed")


def _hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii", "replace")).digest()


__all__ = [
    "RETRY_SECONDS",
    "Accepted",
    "accept_in",
    "accept_report",
    "after_report",
    "held_place_wait",
    "issue_in",
    "issue_participation",
    "release_in",
    "release_participation",
]
