"""Training jobs: logistic regression trained from locally perturbed gradients.

A job is created by an analyst (:func:`create_job`); its complete spec fixes the plan and
the mechanisms (:func:`complete_spec`, :func:`mechanisms_of`). Devices then drive it round
by round (:mod:`ldp_aggregator.training_rounds`); analysts read it as it stands
(:func:`read_training_job`) and, once the last round has closed, its model
(:func:`trained_model`).

See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection, Engine, select

from ldp_aggregator.collections import refused_as_configuration
from ldp_aggregator.storage import training as store
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.jobs import JobRow, insert_job, jobs, read_job, update_job
from ldp_shared.analyses.logistic.planning import default_bound, plan_training, smoothness
from ldp_shared.analyses.logistic.training import TrainingPlan, plan_of
from ldp_shared.errors import (
    InsufficientReportsError,
    InvalidQueryError,
    InvalidReportError,
    NotFoundError,
)
from ldp_shared.learning import device
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.mechanisms.gradient import GradientRandomizer
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.mechanisms.piecewise import PiecewiseRandomizer
from ldp_shared.wire.itemsets import JobError
from ldp_shared.wire.training import (
    MAX_ROUND_SIZE,
    GradientMechanismConfig,
    LossMechanismConfig,
    RoundLog,
    TrainedModel,
    TrainingJob,
    TrainingSpec,
    check_new_spec,
)

TRAINING = "training"
"""The ``kind`` of a training job in the jobs table."""

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
    """What a complete spec runs with (the spec itself included)."""

    spec: TrainingSpec
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

    def gradient_config(self) -> GradientMechanismConfig:
        spec, g = self.spec, self.gradient
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

    def loss_config(self) -> LossMechanismConfig | None:
        if self.loss is None:
            return None
        spec = self.spec
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
    assert spec.bound is not None
    plan = plan_of(spec)
    d = spec.layout.dimension
    gradient = gradient_randomizer(spec.mechanism, d, spec.epsilon, spec.bound, spec.delta)
    loss = device.loss_randomizer(spec.epsilon) if plan.loss_devices > 0 else None
    return JobMechanisms(spec, plan, gradient, loss)


# ---------------------------------------------------------------------- analysts


def create_job(engine: Engine, collection: StoredCollection, spec: TrainingSpec) -> TrainingJob:
    """Store a job with its complete spec and open round 0.

    :class:`InvalidQueryError` for a layout that does not name both label values
    (:func:`~ldp_shared.wire.training.check_new_spec`): the rule holds for new jobs only,
    so a job stored before it (``negative`` absent) still reads and runs
    (:func:`mechanisms_of` parses stored specs without it).
    """
    check_new_spec(spec)
    with refused_as_configuration("the training job"):
        complete = complete_spec(spec)
    job_id = secrets.token_urlsafe(16)[:22]
    with engine.begin() as connection:
        insert_job(connection, job_id, collection.id, TRAINING, complete.model_dump_json())
        update_job(connection, job_id, status="running", progress=progress_text(complete, 0))
        store.insert_rounds(connection, job_id, complete.layout.dimension)
    return read_training_job(engine, collection, job_id, new=True)


def read_training_job(
    engine: Engine, collection: StoredCollection, job_id: str, *, new: bool = False
) -> TrainingJob:
    """The job as it stands; :class:`NotFoundError` if the collection has no such job.
    ``new``: just created, no round has closed (its curve is not read)."""
    with engine.connect() as connection:
        row = job_row(connection, collection, job_id)
        state = store.read_round(connection, job_id)
        curve = [] if new else store.read_curve(connection, job_id)
    assert state is not None  # created with the job, deleted with it
    mechanisms = mechanisms_of(row.request_json)
    return TrainingJob(
        id=row.id,
        collection=collection.name,
        status=row.status,
        spec=mechanisms.spec,
        gradient=mechanisms.gradient_config(),
        loss=mechanisms.loss_config(),
        round=state.round,
        received=state.gradient_received + state.loss_received,
        weights=state.weights.tolist(),
        curve=[RoundLog.model_validate_json(log) for log in curve],
        created_unix=row.created_unix,
        updated_unix=row.updated_unix,
        error=JobError.model_validate_json(row.error_json) if row.error_json else None,
    )


def job_layout(engine: Engine, collection: StoredCollection, job_id: str) -> FeatureLayout:
    """The layout of the job's records (what a device needs to check a record before it
    asks for a place); :class:`NotFoundError` if the collection has no such job."""
    with engine.connect() as connection:
        row = job_row(connection, collection, job_id)
    return mechanisms_of(row.request_json).spec.layout  # parsed once per job (cached)


def trained_model(engine: Engine, collection: StoredCollection, job_id: str) -> TrainedModel:
    """The released model of a finished job (409 ``insufficient-reports`` before)."""
    with engine.connect() as connection:
        row = job_row(connection, collection, job_id)
    if row.status != "done" or row.result_json is None:
        raise InsufficientReportsError(
            f"training job {job_id!r} has not finished: {row.progress or row.status}"
        )
    return TrainedModel.model_validate_json(row.result_json)


def job_row(connection: Connection, collection: StoredCollection, job_id: str) -> JobRow:
    row = read_job(connection, job_id)
    if row is None or row.collection_id != collection.id or row.kind != TRAINING:
        raise NotFoundError(f"collection {collection.name!r} has no training job {job_id!r}")
    return row


@dataclass(frozen=True)
class _Known:
    collection_id: int
    mechanisms: JobMechanisms
    layout_json: bytes


_SPECS: dict[str, _Known] = {}
"""Training jobs' collection ids, mechanisms and layouts (JSON) by job id: what a
device's request needs of the job, read once per job and process (a job's collection
and spec never change)."""

_SPECS_KEPT = 256


def _known(connection: Connection, collection: StoredCollection, job_id: str) -> _Known:
    found = _SPECS.get(job_id)
    if found is None:
        row = job_row(connection, collection, job_id)
        mechanisms = mechanisms_of(row.request_json)
        layout = mechanisms.spec.layout.model_dump_json().encode("utf-8")
        found = _Known(row.collection_id, mechanisms, layout)
        if len(_SPECS) >= _SPECS_KEPT:
            _SPECS.pop(next(iter(_SPECS)), None)
        _SPECS[job_id] = found
    if found.collection_id != collection.id:
        raise NotFoundError(f"collection {collection.name!r} has no training job {job_id!r}")
    return found


def device_job(connection: Connection, collection: StoredCollection, job_id: str) -> JobMechanisms:
    """The job's mechanisms, for a device's request (its status is told by its round:
    a finished job's round is its last + 1). :class:`NotFoundError` as :func:`job_row`."""
    return _known(connection, collection, job_id).mechanisms


def job_layout_json(engine: Engine, collection: StoredCollection, job_id: str) -> bytes:
    """:func:`job_layout` as JSON: the job's row is looked up each time (a deleted job has
    no layout), its spec parsed and serialised once per job and process."""
    with engine.connect() as connection:
        found = connection.execute(
            select(jobs.c.collection_id).where(jobs.c.id == job_id, jobs.c.kind == TRAINING)
        ).first()
        if found is None or int(found[0]) != collection.id:
            raise NotFoundError(f"collection {collection.name!r} has no training job {job_id!r}")
        return _known(connection, collection, job_id).layout_json


def check_report(mechanisms: JobMechanisms, role: str, payload: bytes) -> None:
    """:class:`InvalidReportError` unless ``payload`` is a report of ``role`` that the
    job's mechanism makes (its size, and bytes it can produce)."""
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


def progress_text(spec: TrainingSpec, round_: int) -> str:
    return f"round {round_} of {spec.rounds}" if round_ < (spec.rounds or 0) else "finished"


__all__ = [
    "TRAINING",
    "JobMechanisms",
    "check_report",
    "complete_spec",
    "create_job",
    "device_job",
    "job_layout",
    "job_layout_json",
    "job_row",
    "mechanisms_of",
    "progress_text",
    "read_training_job",
    "trained_model",
]
