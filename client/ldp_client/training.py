"""Training jobs seen from the client, without I/O (shared by both clients).

Call builders in the style of :mod:`ldp_client.protocol`, and what a device does with a
:class:`~ldp_shared.wire.training.Participation` before it answers:

0. :func:`encode_record` with the layout the participation carries: a record that does
   not fit it is refused (:class:`~ldp_shared.errors.InvalidRecordError`) and the place
   is given back (:func:`release_call`), as it is after a refusal in steps 1 and 2;
1. :func:`rebuild_mechanisms`: rebuild the job's gradient (and loss) mechanism from the
   spec's name, dimension, ε, δ and bound, and refuse a participation whose published
   exact ε, δ, report size or parameters differ from what the device computes
   (:class:`~ldp_shared.errors.ConfigurationError`): the device trusts its own numbers,
   not the server's;
2. :func:`check_policy`: the device's :class:`~ldp_client.policy.DevicePolicy` limits on
   ε and δ per record apply to the job's one report;
3. :func:`make_report`: encode the record with the job's layout, compute the gradient
   (or the capped loss) at the round's weights, clip and perturb it
   (:mod:`ldp_shared.learning.device`), and pack it. Only those bytes leave the device.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np

from ldp_client.policy import DevicePolicy
from ldp_client.protocol import ApiCall, collection_path
from ldp_shared.errors import (
    ConfigurationError,
    InvalidRecordError,
    PrivacyPolicyError,
)
from ldp_shared.learning import device
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.mechanisms.gradient import GradientRandomizer
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.mechanisms.piecewise import PiecewiseRandomizer
from ldp_shared.rand import resolve_rng
from ldp_shared.wire.itemsets import check_job_id
from ldp_shared.wire.reports import encode_bits
from ldp_shared.wire.training import (
    Participation,
    ParticipationReport,
    ParticipationResult,
    TrainedModel,
    TrainingJob,
    TrainingSpec,
    check_new_spec,
)

__all__ = [
    "JobMechanisms",
    "check_policy",
    "create_training_job_call",
    "encode_record",
    "job_layout_call",
    "make_report",
    "participation_call",
    "rebuild_mechanisms",
    "release_call",
    "send_report_call",
    "trained_model_call",
    "training_job_call",
]


def _jobs_path(name: str) -> str:
    return f"{collection_path(name)}/training-jobs"


def _job_path(name: str, job_id: str) -> str:
    """The job's path; an id no job can have is refused here, before any request."""
    return f"{_jobs_path(name)}/{quote(check_job_id(job_id, 'training'), safe='')}"


def create_training_job_call(name: str, spec: TrainingSpec) -> ApiCall[TrainingJob]:
    """``POST .../training-jobs`` (analyst); not repeated unless it never reached the server.

    :class:`~ldp_shared.errors.InvalidQueryError` before any request for a layout that
    does not name both label values (``positive`` and ``negative``), as the aggregator
    would answer."""
    check_new_spec(spec)
    body = spec.model_dump_json(exclude_none=True).encode("utf-8")
    return ApiCall(
        "POST",
        _jobs_path(name),
        TrainingJob.model_validate_json,
        body=body,
        auth=True,
        idempotent=False,
    )


def training_job_call(name: str, job_id: str) -> ApiCall[TrainingJob]:
    """``GET .../training-jobs/{id}`` (analyst)."""
    return ApiCall("GET", _job_path(name, job_id), TrainingJob.model_validate_json, auth=True)


def trained_model_call(name: str, job_id: str) -> ApiCall[TrainedModel]:
    """``GET .../training-jobs/{id}/model`` (analyst)."""
    path = f"{_job_path(name, job_id)}/model"
    return ApiCall("GET", path, TrainedModel.model_validate_json, auth=True)


def job_layout_call(name: str, job_id: str) -> ApiCall[FeatureLayout]:
    """``GET .../training-jobs/{id}/layout`` (public): what a record must hold."""
    path = f"{_job_path(name, job_id)}/layout"
    return ApiCall("GET", path, FeatureLayout.model_validate_json)


def participation_call(name: str, job_id: str) -> ApiCall[Participation]:
    """``POST .../participations``: a place in the open round. Repeating it after a lost
    answer only leaves an unused place, which the server frees when it expires."""
    path = f"{_job_path(name, job_id)}/participations"
    return ApiCall("POST", path, Participation.model_validate_json)


def release_call(participation: Participation) -> ApiCall[None]:
    """``DELETE .../participations/{token}``: give the place back unused (the device will
    not report), so that another device may take it now rather than when its hold ends.
    Idempotent: a repeat after a lost answer is a 404, which changes nothing."""
    path = f"{_job_path(participation.collection, participation.job)}/participations"
    return ApiCall("DELETE", f"{path}/{participation.token}", _no_content)


def _no_content(_body: bytes) -> None:
    return None


def send_report_call(participation: Participation, report: bytes) -> ApiCall[ParticipationResult]:
    """``PUT .../participations/{token}``: the one report (idempotent: the token is single
    use, a repeat is answered ``already-participated``)."""
    path = f"{_job_path(participation.collection, participation.job)}/participations"
    body = ParticipationReport(report=encode_bits(report)).model_dump_json().encode("utf-8")
    return ApiCall(
        "PUT",
        f"{path}/{participation.token}",
        ParticipationResult.model_validate_json,
        body=body,
    )


@dataclass(frozen=True)
class JobMechanisms:
    """The job's mechanisms as the device rebuilt them, and the ε/δ of its one report."""

    gradient: GradientRandomizer
    loss: LatticeRandomizer | None
    epsilon: float
    delta: float


@functools.lru_cache(maxsize=16)
def _gradient(
    name: str, dimension: int, epsilon: float, bound: float, delta: float | None
) -> GradientRandomizer:
    """Built once per parameters (a lattice channel takes a tenth of a second to build);
    mechanisms are immutable, so the cache hands out the same object."""
    return gradient_randomizer(name, dimension, epsilon, bound, delta)


@functools.lru_cache(maxsize=16)
def _loss(epsilon: float) -> LatticeRandomizer:
    return device.loss_randomizer(epsilon)


def rebuild_mechanisms(participation: Participation) -> JobMechanisms:
    """The mechanisms from the job's parameters, checked against what the server published."""
    g = participation.gradient
    if g.dimension != participation.layout.dimension:
        raise ConfigurationError("the job's gradient dimension does not match its layout")
    gradient = _gradient(g.name, g.dimension, g.epsilon, g.bound, g.delta)
    _same("gradient ε", gradient.exact_epsilon, g.exact_epsilon)
    _same("gradient δ", gradient.delta, g.exact_delta)
    if gradient.segment.byte_length != g.report_bytes or gradient.published() != g.published:
        raise ConfigurationError("the job's gradient mechanism is not the one its name builds")
    loss: LatticeRandomizer | None = None
    if participation.loss is not None:
        loss = _loss(participation.loss.epsilon)
        name = "piecewise" if isinstance(loss, PiecewiseRandomizer) else "hybrid"
        if name != participation.loss.name or participation.loss.cap != device.LOSS_CAP:
            raise ConfigurationError("the job's loss mechanism is not the one the device builds")
        _same("loss ε", loss.exact_epsilon, participation.loss.exact_epsilon)
    epsilon = max(gradient.exact_epsilon, 0.0 if loss is None else loss.exact_epsilon)
    _same("ε per device", epsilon, participation.epsilon)
    return JobMechanisms(gradient, loss, epsilon, gradient.delta)


def _same(what: str, mine: float, theirs: float) -> None:
    if not math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-15):
        raise ConfigurationError(
            f"the job states {what} = {theirs!r}, the device computes {mine!r}: refused"
        )


def check_policy(policy: DevicePolicy | None, job: str, mechanisms: JobMechanisms) -> None:
    """:class:`PrivacyPolicyError` when the job's report costs more than the policy allows."""
    if policy is None:
        return
    limit = policy.max_epsilon_per_record
    if mechanisms.epsilon > limit and not math.isclose(mechanisms.epsilon, limit, rel_tol=1e-9):
        raise PrivacyPolicyError(
            f"training job {job!r} spends ε = {mechanisms.epsilon:.4g} per device, over this"
            f" device's limit of {limit:g} (DevicePolicy.max_epsilon_per_record)"
        )
    if mechanisms.delta > policy.max_delta_per_record:
        raise PrivacyPolicyError(
            f"training job {job!r} spends δ = {mechanisms.delta:.3g}, over this device's"
            f" limit of {policy.max_delta_per_record:g} (DevicePolicy.max_delta_per_record)"
        )
    allowed = policy.allowed_mechanisms
    if allowed is not None and mechanisms.gradient.name not in allowed:
        raise PrivacyPolicyError(
            f"training job {job!r} uses the gradient mechanism {mechanisms.gradient.name!r},"
            f" which this device's policy does not allow"
        )


def encode_record(layout: FeatureLayout, record: Mapping[str, Any]) -> tuple[Any, Any]:
    """The record's encoded features (``1 × d``) and its 0/1 label."""
    if not isinstance(record, Mapping):
        raise InvalidRecordError("a record must be a mapping of feature name to value")
    if layout.label not in record:
        raise InvalidRecordError(f"the record has no label {layout.label!r}")
    names = [f.name for f in layout.numeric] + [f.name for f in layout.categorical]
    columns = {name: [record[name]] for name in names if name in record}
    return layout.encode(columns), layout.labels([record[layout.label]])


def make_report(
    participation: Participation,
    mechanisms: JobMechanisms,
    record: Mapping[str, Any],
    rng: np.random.Generator | None = None,
) -> bytes:
    """The packed perturbed report of ``record`` for its participation's role."""
    x, y = encode_record(participation.layout, record)
    weights = np.asarray(participation.weights, dtype=np.float64)
    if weights.shape != (participation.layout.dimension,) or not np.isfinite(weights).all():
        raise ConfigurationError("the round's weights do not fit the job's layout")
    gen = resolve_rng(rng)
    if participation.role == "gradient":
        answers = device.gradient_reports(mechanisms.gradient, weights, x, y, gen)
        return bytes(mechanisms.gradient.pack(answers)[0].tobytes())
    if mechanisms.loss is None:
        raise ConfigurationError("the job asked for a loss report but has no loss mechanism")
    answers = device.loss_reports(mechanisms.loss, weights, x, y, gen)
    return bytes(mechanisms.loss.pack(answers)[0].tobytes())
