"""Training jobs driven by the devices: places in the open round, one report each, and
the round that closes when its last place is filled.

A device asks for a place (:func:`issue_participation`) and answers once
(:func:`accept_report`). The report that fills a round's last place closes it in the same
transaction: the round's reports are turned into their sufficient statistics, the step is
taken with the same arithmetic as the library's
:func:`~ldp_shared.analyses.logistic.training.train`, the reports are deleted and the next
round opens. Nothing runs in the background, so a job survives a restart, and replicas
sharing one PostgreSQL database take reports of one round side by side: every writing
transaction first locks the job's round row (:func:`_lock`), so a round never takes more
reports than its places and is closed exactly once.

See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import secrets
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine, update

from ldp_aggregator.storage import training as store
from ldp_aggregator.storage.at_rest import truncate_wal
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.jobs import JobRow, update_job
from ldp_aggregator.storage.lifecycle import refusal_to_write
from ldp_aggregator.training import JobMechanisms, job_row, mechanisms_of, progress_text
from ldp_shared.analyses.logistic.training import (
    close_round,
    estimate_gradient,
    estimate_loss,
    released_weights,
)
from ldp_shared.errors import (
    AlreadyParticipatedError,
    InvalidReportError,
    NotFoundError,
    RateLimitedError,
    RoundClosedError,
)
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.gradient import GradientRandomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.training_wire import (
    Participation,
    ParticipationReport,
    ParticipationResult,
    RoundLog,
    SklearnExport,
    TrainedModel,
    TrainingSpec,
)
from ldp_shared.wire import decode_bits

logger = logging.getLogger("ldp_aggregator")


RETRY_SECONDS = 1
"""``Retry-After`` when every place of the open round is held: a held place is normally
answered within a device's round trip, which closes the round and opens the next, so a
device asks again soon; the detail also states the longest wait (:func:`held_place_wait`),
for a place whose device never answers."""


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


def _lock(connection: Connection, job_id: str) -> None:
    """Take the job's round row for this transaction (PostgreSQL: its row lock; SQLite:
    the write lock), before anything is read: transactions of one job run one at a time."""
    touched = store.training_rounds.c.round
    connection.execute(
        update(store.training_rounds)
        .where(store.training_rounds.c.job_id == job_id)
        .values(round=touched)
    )


# ---------------------------------------------------------------------- devices


def issue_participation(engine: Engine, collection: StoredCollection, job_id: str) -> Participation:
    """A place in the open round, its role drawn among the free places.

    Raises :class:`RoundClosedError` when the job has finished, and
    :class:`RateLimitedError` (with ``Retry-After``) while every place of the round is
    held. A place is held for ``participation_seconds`` rounded up to whole seconds, its
    end then rounded up to a multiple of that (:func:`store.hold_end`): the token's row
    keeps no finer time of when it was issued.
    """
    token = secrets.token_urlsafe(32)
    with engine.begin() as connection:
        _lock(connection, job_id)
        row = job_row(connection, collection, job_id)
        _refuse_if_closed(connection, collection)
        if row.status != "running":
            raise RoundClosedError(f"training job {job_id!r} has finished; it takes no reports")
        mechanisms = mechanisms_of(row.request_json)
        spec = mechanisms.spec
        state = store.read_round(connection, job_id)
        assert state is not None
        now = int(time.time())
        pending = store.pending_tokens(connection, job_id, state.round, now)
        received = {"gradient": state.gradient_received, "loss": state.loss_received}
        free = {
            role: places - received[role] - pending.get(role, 0)
            for role, places in mechanisms.places.items()
        }
        total = sum(max(0, n) for n in free.values())
        if total == 0:
            # the places are held by devices computing their reports; the round closes
            # (and the next opens) as soon as those arrive, or a place is freed when it
            # expires: a device asks again soon, and the detail states the longest wait
            first = store.first_held_until(connection, job_id, state.round, now)
            wait = held_place_wait(first, now)
            raise RateLimitedError(
                f"every place of round {state.round} of training job {job_id!r} is held by a"
                f" device that has not answered yet; try again in {RETRY_SECONDS} s: the"
                f" round closes as soon as those devices answer, and the first held place"
                f" is freed in {wait} s at the latest",
                retry_after=RETRY_SECONDS,
            )
        role = "gradient" if secrets.randbelow(total) < max(0, free["gradient"]) else "loss"
        held_until = store.hold_end(now, math.ceil(spec.participation_seconds))
        store.insert_token(connection, job_id, _hash(token), state.round, role, held_until)
    return Participation(
        job=job_id,
        collection=collection.name,
        token=token,
        round=state.round,
        role=role,
        weights=state.weights.tolist(),
        layout=spec.layout,
        gradient=mechanisms.gradient_config(),
        loss=mechanisms.loss_config(),
        epsilon=mechanisms.epsilon,
        delta=mechanisms.gradient.delta,
        expires_unix=held_until,
    )


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
        _lock(connection, job_id)
        row = job_row(connection, collection, job_id)
        _refuse_if_closed(connection, collection)
        mechanisms = mechanisms_of(row.request_json)
        used = store.use_token(connection, job_id, _hash(token))
        if used is None:
            raise NotFoundError(f"training job {job_id!r} issued no such participation")
        if used.used:
            raise AlreadyParticipatedError("this participation has sent its report already")
        state = store.read_round(connection, job_id)
        assert state is not None
        if row.status != "running" or used.round != state.round:
            now = progress_text(mechanisms.spec, state.round)
            raise RoundClosedError(
                f"round {used.round} of training job {job_id!r} is closed (the job is at"
                f" {now}); the report was not kept"
            )
        _check_report(mechanisms, used.role, payload)
        if not store.claim_place(
            connection, job_id, used.round, used.role, mechanisms.places[used.role]
        ):
            raise RoundClosedError(f"round {used.round} has no free place for this report")
        store.insert_report(connection, job_id, used.round, used.role, payload)
        closed = _close_if_full(connection, row, mechanisms, collection)
    if closed:
        _forget_order(engine)
    return ParticipationResult(
        job=job_id,
        round=used.round,
        role=used.role,
        round_closed=closed,
    )


def _forget_order(engine: Engine) -> None:
    """Empty SQLite's write-ahead log once a round's reports are deleted: it kept the pages
    they were written to, in the order they came (docs/privacy-at-rest.md)."""
    try:
        truncate_wal(engine)
    except Exception:  # the round is committed: its last device must not see a failure
        logger.exception("the write-ahead log was not truncated after a round closed")


def _hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii", "replace")).digest()


def _check_report(mechanisms: JobMechanisms, role: str, payload: bytes) -> None:
    randomizer = mechanisms.gradient if role == "gradient" else mechanisms.loss
    assert randomizer is not None  # a loss token exists only when loss reports do
    size = randomizer.segment.byte_length
    if len(payload) != size:
        raise InvalidReportError(
            f"a {role} report of this job is {size} bytes (base64), got {len(payload)}"
        )
    unpacked = randomizer.unpack(np.frombuffer(payload, dtype=np.uint8).reshape(1, size))
    if bool(unpacked.bad[0]):
        raise InvalidReportError(
            f"the {role} report is not one this mechanism makes: {unpacked.problem}"
        )


def _answers(
    randomizer: GradientRandomizer | LatticeRandomizer, payloads: list[bytes]
) -> NDArray[Any]:
    size = randomizer.segment.byte_length
    rows = np.frombuffer(b"".join(payloads), dtype=np.uint8).reshape(len(payloads), size)
    return randomizer.unpack(rows).values


def _close_if_full(
    connection: Connection,
    row: JobRow,
    mechanisms: JobMechanisms,
    collection: StoredCollection,
) -> bool:
    """Close the open round if every place is taken; whether it did."""
    state = store.read_round(connection, row.id)
    assert state is not None
    places = mechanisms.places
    if state.gradient_received < places["gradient"] or state.loss_received < places["loss"]:
        return False
    reports = store.round_reports(connection, row.id, state.round)
    gradient = estimate_gradient(
        mechanisms.gradient, _answers(mechanisms.gradient, reports["gradient"])
    )
    loss = (math.nan, math.nan)
    if mechanisms.loss is not None:
        loss = estimate_loss(mechanisms.loss, _answers(mechanisms.loss, reports["loss"]))
    counts = (len(reports["gradient"]), len(reports["loss"]))
    plan = mechanisms.plan
    weights, weight_sum, log = close_round(
        plan, state.round, state.weights, state.weight_sum, gradient, loss, counts
    )
    curve = json.loads(state.curve_json)
    curve.append(_round_log(log).model_dump())
    store.advance_round(connection, row.id, state.round, weights, weight_sum, json.dumps(curve))
    spec = mechanisms.spec
    if state.round + 1 < plan.rounds:
        update_job(connection, row.id, progress=progress_text(spec, state.round + 1))
        return True
    model = _model(row, spec, mechanisms, collection, released_weights(plan, weight_sum), curve)
    update_job(connection, row.id, status="done", progress="finished", result_json=model)
    store.drop_job_tokens(connection, row.id)
    return True


def _round_log(log: object) -> RoundLog:
    values = dict(vars(log))
    for key in ("loss", "loss_stderr"):
        if not math.isfinite(values[key]):
            values[key] = None
    return RoundLog.model_validate(values)


def _model(
    row: JobRow,
    spec: TrainingSpec,
    mechanisms: JobMechanisms,
    collection: StoredCollection,
    weights: FloatArray,
    curve: list[dict[str, object]],
) -> str:
    names = spec.layout.coordinate_names()
    w = [float(v) for v in weights]
    model = TrainedModel(
        job=row.id,
        collection=collection.name,
        layout=spec.layout,
        coordinates=names,
        weights=w,
        epsilon=mechanisms.epsilon,
        delta=mechanisms.gradient.delta,
        rounds=mechanisms.plan.rounds,
        curve=[RoundLog.model_validate(log) for log in curve],
        sklearn=SklearnExport(
            coef_=[w[1:]], intercept_=[w[0]], classes_=[0, 1], features=names[1:]
        ),
    )
    return model.model_dump_json()


__all__ = ["RETRY_SECONDS", "accept_report", "held_place_wait", "issue_participation"]
