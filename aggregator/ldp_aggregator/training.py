"""Training jobs: logistic regression trained from locally perturbed gradients.

A job is created by an analyst (:func:`create_job`) and then driven by the devices
alone: each asks for a place in the open round (:func:`issue_participation`) and
answers once (:func:`accept_report`). The report that fills a round's last place closes
it in the same transaction: the round's reports are turned into their sufficient
statistics, the step is taken with the same arithmetic as the library's
:func:`~ldp_shared.analyses.logistic.training.train`, the reports are deleted and the next
round opens. Nothing runs in the background, so a job survives a restart, and replicas
sharing one PostgreSQL database take reports of one round side by side: every writing
transaction first locks the job's round row (:func:`_lock`), so a round never takes more
reports than its places and is closed exactly once.

See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine, update

from ldp_aggregator.storage import training as store
from ldp_aggregator.storage.at_rest import truncate_wal
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.jobs import JobRow, insert_job, read_job, update_job
from ldp_aggregator.storage.lifecycle import refusal_to_write
from ldp_shared.analyses.logistic.planning import default_bound, plan_training, smoothness
from ldp_shared.analyses.logistic.training import (
    TrainingPlan,
    close_round,
    estimate_gradient,
    estimate_loss,
    released_weights,
)
from ldp_shared.errors import (
    AlreadyParticipatedError,
    InsufficientReportsError,
    InvalidQueryError,
    InvalidReportError,
    NotFoundError,
    RateLimitedError,
    RoundClosedError,
)
from ldp_shared.itemset_wire import JobError
from ldp_shared.kernel import FloatArray
from ldp_shared.learning import device
from ldp_shared.mechanisms.gradient import GradientRandomizer, gradient_randomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.mechanisms.piecewise import PiecewiseRandomizer
from ldp_shared.training_wire import (
    MAX_ROUND_SIZE,
    GradientMechanismConfig,
    LossMechanismConfig,
    Participation,
    ParticipationReport,
    ParticipationResult,
    RoundLog,
    SklearnExport,
    TrainedModel,
    TrainingJob,
    TrainingSpec,
)
from ldp_shared.wire import decode_bits

logger = logging.getLogger("ldp_aggregator")

TRAINING = "training"
"""The ``kind`` of a training job in the jobs table."""

RETRY_SECONDS = 1
"""``Retry-After`` when every place of the open round is held: held places are answered
within the round trip of a device, or freed when they expire."""


# ---------------------------------------------------------------------- the job's plan


def complete_spec(spec: TrainingSpec) -> TrainingSpec:
    """``spec`` with the planned values filled in (``docs/logistic-regression.md``).

    Raises :class:`~ldp_shared.errors.ConfigurationError` for an unknown mechanism or a
    bad ε/δ, :class:`~ldp_shared.errors.InvalidQueryError` when too few devices are
    expected for a plan.
    """
    layout, d = spec.layout, spec.layout.dimension
    probe = gradient_randomizer(spec.mechanism, d, spec.epsilon, 1.0, spec.delta)
    bound = default_bound(layout, probe) if spec.bound is None else spec.bound
    values = spec.model_dump()
    if spec.round_size is None or spec.rounds is None:
        assert spec.devices is not None  # the spec's validator
        plan = plan_training(
            layout,
            spec.devices,
            spec.mechanism,
            spec.epsilon,
            l2=spec.l2,
            bound=bound,
            loss_share=spec.loss_share,
            delta=spec.delta,
        )
        planned = {"round_size": plan.round_size, "rounds": plan.rounds}
        values.update({k: v for k, v in planned.items() if values[k] is None})
        if spec.learning_rate is None:
            values["learning_rate"] = plan.learning_rate
    if values["learning_rate"] is None:
        values["learning_rate"] = 1.0 / smoothness(layout, spec.l2)
    values["bound"] = bound
    if values["round_size"] > MAX_ROUND_SIZE:
        raise InvalidQueryError(
            f"the plan for {spec.devices:,} devices needs rounds of {values['round_size']:,}"
            f" reports, over the {MAX_ROUND_SIZE:,} a round takes; give round_size and rounds"
        )
    complete = TrainingSpec.model_validate(values)
    mechanisms_of(complete.model_dump_json())  # refuse what cannot run now, not later
    return complete


@dataclass(frozen=True)
class JobMechanisms:
    """What a complete spec runs with."""

    plan: TrainingPlan
    gradient: GradientRandomizer
    loss: LatticeRandomizer | None

    @property
    def epsilon(self) -> float:
        """Exact ε of the one report a device sends (gradient or loss: the larger)."""
        loss = 0.0 if self.loss is None else self.loss.exact_epsilon
        return max(self.gradient.exact_epsilon, loss)

    @property
    def places(self) -> dict[str, int]:
        """Reports of each role a round takes."""
        losses = self.plan.loss_devices
        return {"gradient": self.plan.round_size - losses, "loss": losses}

    def gradient_config(self, spec: TrainingSpec) -> GradientMechanismConfig:
        g = self.gradient
        return GradientMechanismConfig(
            name=spec.mechanism,
            dimension=g.dimension,
            epsilon=spec.epsilon,
            delta=spec.delta,
            bound=g.bound,
            exact_epsilon=g.exact_epsilon,
            exact_delta=g.delta,
            report_bytes=g.segment.byte_length,
            published=g.published(),
        )

    def loss_config(self, spec: TrainingSpec) -> LossMechanismConfig | None:
        if self.loss is None:
            return None
        return LossMechanismConfig(
            name=loss_mechanism_name(self.loss),
            epsilon=spec.epsilon,
            cap=device.LOSS_CAP,
            exact_epsilon=self.loss.exact_epsilon,
            report_bytes=self.loss.segment.byte_length,
        )


def loss_mechanism_name(mechanism: LatticeRandomizer) -> str:
    """``piecewise`` or ``hybrid``: which one :func:`device.loss_randomizer` chose."""
    return "piecewise" if isinstance(mechanism, PiecewiseRandomizer) else "hybrid"


@functools.lru_cache(maxsize=64)
def mechanisms_of(spec_json: str) -> JobMechanisms:
    """The mechanisms of a complete spec (cached: building a lattice channel takes time)."""
    spec = TrainingSpec.model_validate_json(spec_json)
    assert spec.round_size is not None and spec.rounds is not None
    assert spec.learning_rate is not None and spec.bound is not None
    plan = TrainingPlan(
        mechanism=spec.mechanism,
        epsilon=spec.epsilon,
        round_size=spec.round_size,
        rounds=spec.rounds,
        learning_rate=spec.learning_rate,
        decay=spec.decay,
        l2=spec.l2,
        bound=spec.bound,
        loss_share=spec.loss_share,
        average_from=spec.average_from,
        delta=spec.delta,
    )
    d = spec.layout.dimension
    gradient = gradient_randomizer(spec.mechanism, d, spec.epsilon, spec.bound, spec.delta)
    loss = device.loss_randomizer(spec.epsilon) if plan.loss_devices > 0 else None
    return JobMechanisms(plan, gradient, loss)


# ---------------------------------------------------------------------- analysts


def create_job(engine: Engine, collection: StoredCollection, spec: TrainingSpec) -> TrainingJob:
    """Store a job with its complete spec and open round 0."""
    complete = complete_spec(spec)
    job_id = secrets.token_urlsafe(16)[:22]
    with engine.begin() as connection:
        insert_job(connection, job_id, collection.id, TRAINING, complete.model_dump_json())
        update_job(connection, job_id, status="running", progress=_progress(complete, 0))
        store.insert_rounds(connection, job_id, complete.layout.dimension)
    return read_training_job(engine, collection, job_id)


def read_training_job(engine: Engine, collection: StoredCollection, job_id: str) -> TrainingJob:
    """The job as it stands; :class:`NotFoundError` if the collection has no such job."""
    with engine.connect() as connection:
        row = _job_row(connection, collection, job_id)
        state = store.read_round(connection, job_id)
    assert state is not None  # created with the job, deleted with it
    spec = TrainingSpec.model_validate_json(row.request_json)
    mechanisms = mechanisms_of(row.request_json)
    return TrainingJob(
        id=row.id,
        collection=collection.name,
        status=row.status,
        spec=spec,
        gradient=mechanisms.gradient_config(spec),
        loss=mechanisms.loss_config(spec),
        round=state.round,
        received=state.gradient_received + state.loss_received,
        weights=state.weights.tolist(),
        curve=[RoundLog.model_validate(log) for log in json.loads(state.curve_json)],
        created_unix=row.created_unix,
        updated_unix=row.updated_unix,
        error=JobError.model_validate_json(row.error_json) if row.error_json else None,
    )


def trained_model(engine: Engine, collection: StoredCollection, job_id: str) -> TrainedModel:
    """The released model of a finished job (409 ``insufficient-reports`` before)."""
    with engine.connect() as connection:
        row = _job_row(connection, collection, job_id)
    if row.status != "done" or row.result_json is None:
        raise InsufficientReportsError(
            f"training job {job_id!r} has not finished: {row.progress or row.status}"
        )
    return TrainedModel.model_validate_json(row.result_json)


def _job_row(connection: Connection, collection: StoredCollection, job_id: str) -> JobRow:
    row = read_job(connection, job_id)
    if row is None or row.collection_id != collection.id or row.kind != TRAINING:
        raise NotFoundError(f"collection {collection.name!r} has no training job {job_id!r}")
    return row


def _progress(spec: TrainingSpec, round_: int) -> str:
    return f"round {round_} of {spec.rounds}" if round_ < (spec.rounds or 0) else "finished"


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
    held by a participation issued less than ``participation_seconds`` ago.
    """
    token = secrets.token_urlsafe(32)
    with engine.begin() as connection:
        _lock(connection, job_id)
        row = _job_row(connection, collection, job_id)
        _refuse_if_closed(connection, collection)
        if row.status != "running":
            raise RoundClosedError(f"training job {job_id!r} has finished; it takes no reports")
        spec = TrainingSpec.model_validate_json(row.request_json)
        mechanisms = mechanisms_of(row.request_json)
        state = store.read_round(connection, job_id)
        assert state is not None
        now = int(time.time())
        since = now - math.ceil(spec.participation_seconds)
        pending = store.pending_tokens(connection, job_id, state.round, since)
        received = {"gradient": state.gradient_received, "loss": state.loss_received}
        free = {
            role: places - received[role] - pending.get(role, 0)
            for role, places in mechanisms.places.items()
        }
        total = sum(max(0, n) for n in free.values())
        if total == 0:
            # the places are held by devices computing their reports; the round closes
            # (and the next opens) as soon as those arrive, or their places expire
            raise RateLimitedError(
                f"every place of round {state.round} of training job {job_id!r} is held by a"
                f" device that has not answered yet; try again in {RETRY_SECONDS} s",
                retry_after=RETRY_SECONDS,
            )
        role = "gradient" if secrets.randbelow(total) < max(0, free["gradient"]) else "loss"
        issued = store.insert_token(connection, job_id, _hash(token), state.round, role)
    return Participation(
        job=job_id,
        collection=collection.name,
        token=token,
        round=state.round,
        role=role,
        weights=state.weights.tolist(),
        layout=spec.layout,
        gradient=mechanisms.gradient_config(spec),
        loss=mechanisms.loss_config(spec),
        epsilon=mechanisms.epsilon,
        delta=mechanisms.gradient.delta,
        expires_unix=issued + math.ceil(spec.participation_seconds),
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
        row = _job_row(connection, collection, job_id)
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
            raise RoundClosedError(
                f"round {used.round} of training job {job_id!r} is closed (the job is at"
                f" {_progress(TrainingSpec.model_validate_json(row.request_json), state.round)});"
                " the report was not kept"
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
    spec = TrainingSpec.model_validate_json(row.request_json)
    if state.round + 1 < plan.rounds:
        update_job(connection, row.id, progress=_progress(spec, state.round + 1))
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


__all__ = [
    "TRAINING",
    "accept_report",
    "complete_spec",
    "create_job",
    "issue_participation",
    "read_training_job",
    "trained_model",
]
