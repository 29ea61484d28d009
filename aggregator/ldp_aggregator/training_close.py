"""Closing a training job's round: its reports turned into the step, and after the last
round the model.

The report that fills a round's last place closes it in the same transaction
(:func:`close_if_full`, called by :func:`ldp_aggregator.training_rounds.accept_report`):
the round's reports are turned into their sufficient statistics, the mean gradient and
loss are estimated (:func:`~ldp_shared.analyses.logistic.training.estimate_gradient`,
:func:`~ldp_shared.analyses.logistic.training.estimate_loss`), the step is taken with
the same arithmetic as the library's :func:`~ldp_shared.analyses.logistic.training.train`
(:func:`~ldp_shared.analyses.logistic.training.close_round`), the reports are deleted
and the next round opens. See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from ldp_aggregator.storage import training as store
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.jobs import update_job
from ldp_aggregator.storage.participations import drop_job_tokens
from ldp_aggregator.storage.training import RoundCounts
from ldp_aggregator.training import JobMechanisms, progress_text
from ldp_shared.analyses.logistic.training import (
    close_round,
    estimate_gradient,
    estimate_loss,
    released_weights,
)
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.gradient import GradientRandomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.wire.training import RoundLog, SklearnExport, TrainedModel, TrainingSpec


def _answers(
    randomizer: GradientRandomizer | LatticeRandomizer, payloads: list[bytes]
) -> NDArray[Any]:
    size = randomizer.segment.byte_length
    rows = np.frombuffer(b"".join(payloads), dtype=np.uint8).reshape(len(payloads), size)
    return randomizer.unpack(rows).values


def close_if_full(
    connection: Connection,
    job_id: str,
    mechanisms: JobMechanisms,
    collection: StoredCollection,
    counts: RoundCounts,
) -> bool:
    """Close the open round if every place is taken (``counts``: the round's counts in
    this transaction, after its last report); whether it did. Its cost is that of the
    round's reports: the curve so far is neither read nor rewritten, except by the last
    round's close, which releases the model with it."""
    places = mechanisms.places
    if counts.gradient_received < places["gradient"] or counts.loss_received < places["loss"]:
        return False
    state = store.read_round(connection, job_id)
    assert state is not None and state.round == counts.round
    reports = store.round_reports(connection, job_id, state.round)
    gradient = estimate_gradient(
        mechanisms.gradient, _answers(mechanisms.gradient, reports["gradient"])
    )
    loss = (math.nan, math.nan)
    if mechanisms.loss is not None:
        loss = estimate_loss(mechanisms.loss, _answers(mechanisms.loss, reports["loss"]))
    kept = (len(reports["gradient"]), len(reports["loss"]))
    plan = mechanisms.plan
    weights, weight_sum, log = close_round(
        plan, state.round, state.weights, state.weight_sum, gradient, loss, kept
    )
    store.append_curve(connection, job_id, state.round, _round_log(log).model_dump_json())
    store.advance_round(connection, job_id, state.round, weights, weight_sum)
    spec = mechanisms.spec
    if state.round + 1 < plan.rounds:
        update_job(connection, job_id, progress=progress_text(spec, state.round + 1))
        return True
    curve = [json.loads(entry) for entry in store.read_curve(connection, job_id)]
    weights = released_weights(plan, weight_sum)
    model = _model(job_id, spec, mechanisms, collection, weights, curve)
    update_job(connection, job_id, status="done", progress="finished", result_json=model)
    drop_job_tokens(connection, job_id)
    return True


def _round_log(log: object) -> RoundLog:
    values = dict(vars(log))
    for key in ("loss", "loss_stderr"):
        if not math.isfinite(values[key]):
            values[key] = None
    return RoundLog.model_validate(values)


def _model(
    job_id: str,
    spec: TrainingSpec,
    mechanisms: JobMechanisms,
    collection: StoredCollection,
    weights: FloatArray,
    curve: list[dict[str, object]],
) -> str:
    names = spec.layout.coordinate_names()
    w = [float(v) for v in weights]
    model = TrainedModel(
        job=job_id,
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


__all__ = ["close_if_full"]
