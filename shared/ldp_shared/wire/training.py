"""Wire types of training jobs: logistic regression from locally perturbed gradients.

An analyst creates a job with a :class:`TrainingSpec` (``POST
/v1/collections/{name}/training-jobs``) and watches it (:class:`TrainingJob`); when the
last round has closed, its :class:`TrainedModel` is the result. A device asks for a
:class:`Participation` (``POST .../training-jobs/{id}/participations``): the current
round, its weights, its role (a gradient or a loss report) and everything it needs to
rebuild the mechanism and check its ε. It answers once with a
:class:`ParticipationReport`: the perturbed report's bytes in base64, which no raw value
fits in (``PUT .../participations/{token}``).

A new job's layout names both values of its label (:func:`check_new_spec`); a spec stored
before that rule may name only the positive one, and is read and run as it was.

See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ldp_shared.errors import InvalidQueryError
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import Columns, Tabular
from ldp_shared.wire.itemsets import JobError, JobStatus

Role = Literal["gradient", "loss"]
Decay = Literal["constant", "inverse-sqrt"]

MAX_ROUND_SIZE = 1_000_000
"""The most reports a round takes: the Gaussian mechanism's int64 sums of squares are exact
below 2²¹ reports a round in the worst case."""

TOKEN_PATTERN = r"^[A-Za-z0-9_-]{43}$"
"""A participation token: 256 random bits, URL-safe base64 without padding."""


class _Wire(BaseModel):
    # ε = ∞ is stored as the JSON constant Infinity. Only the tests' noise-off mechanism
    # has it (every registered mechanism refuses an infinite ε); it is never answered.
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")


class TrainingSpec(RequestModel):
    """What an analyst fixes before the first round.

    Either ``devices`` (how many devices are expected to take part: the plan's round size,
    rounds and learning rate follow from it, the layout and the mechanism's noise; see
    ``docs/logistic-regression.md``) or both ``round_size`` and ``rounds``. Whatever is
    left out is planned; the job stores and shows the complete spec.

    A new job's layout must name both label values, ``positive`` and ``negative``
    (:func:`check_new_spec`, applied where a job is created, by the aggregator and by the
    SDK). The model itself leaves ``negative`` optional, so that the spec of a job stored
    before the rule still reads and runs: there every other text counts as class 0.
    """

    model_config = ConfigDict(ser_json_inf_nan="constants")  # as _Wire's

    layout: FeatureLayout
    mechanism: str = Field(
        default="sampled-piecewise", description="a gradient mechanism (GET /v1/mechanisms)"
    )
    epsilon: float = Field(gt=0, description="ε of the one report each device sends")
    delta: float | None = Field(
        default=None, ge=0, lt=1, description="δ, for an approximate mechanism only"
    )
    devices: int | None = Field(
        default=None, ge=1, description="devices expected to take part (plans what is left out)"
    )
    round_size: int | None = Field(
        default=None,
        ge=2,
        le=MAX_ROUND_SIZE,
        description="reports a round takes (int64 statistics stay exact below 2²¹)",
    )
    rounds: int | None = Field(default=None, ge=1, le=100_000)
    learning_rate: float | None = Field(default=None, gt=0)
    decay: Decay = "constant"
    l2: float = Field(default=1e-4, ge=0, description="the ridge penalty λ (not on the intercept)")
    bound: float | None = Field(
        default=None, gt=0, description="clipping radius in the mechanism's norm"
    )
    loss_share: float = Field(
        default=0.05, ge=0, lt=1, description="share of each round reporting its loss"
    )
    average_from: float = Field(
        default=0.5, ge=0, lt=1, description="tail averaging from this fraction of the rounds"
    )
    participation_seconds: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description="how long a participation holds its place in a round before others may"
        " take it (a late report is still accepted while the round is open)",
    )

    @model_validator(mode="after")
    def _check(self) -> TrainingSpec:
        for name in ("epsilon", "learning_rate", "l2", "bound"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number")
        planned = self.round_size is not None and self.rounds is not None
        if not planned and self.devices is None:
            raise ValueError("give devices (the plan follows), or both round_size and rounds")
        return self


def check_new_spec(spec: TrainingSpec) -> None:
    """Refuse (:class:`InvalidQueryError`) the spec of a new job whose layout does not
    name both label values: a device then refuses a record whose label is neither, where
    one value alone would count every other text (a typo, ``"PD"``) as class 0."""
    layout = spec.layout
    if layout.negative is None:
        raise InvalidQueryError(
            f"layout.negative: a new training job names both values of its label"
            f" {layout.label!r}: positive ({layout.positive!r}, class 1) and negative (the"
            f" value of class 0, missing); a device then refuses a record whose label is"
            f" neither"
        )


class GradientMechanismConfig(_Wire):
    """The job's gradient mechanism as a device rebuilds it and checks it."""

    name: str
    dimension: int
    epsilon: float = Field(description="the ε asked for")
    delta: float | None = None
    bound: float
    exact_epsilon: float = Field(description="ε computed back from the mechanism's parameters")
    exact_delta: float
    report_bytes: int
    published: dict[str, Any] = Field(description="the parameters a client rebuilds and compares")


class LossMechanismConfig(_Wire):
    """The 1-D mechanism of the loss reports, on ``[0, cap]``."""

    name: str
    epsilon: float
    cap: float
    exact_epsilon: float
    report_bytes: int


class RoundLog(_Wire):
    """One closed round, from its reports alone."""

    round: int
    gradient_reports: int
    loss_reports: int
    loss: float | None = Field(description="the mean capped loss at the round's weights")
    loss_stderr: float | None
    gradient_norm: float = Field(description="‖ĝ‖₂ of the round's estimate (noise included)")
    noise_norm: float = Field(description="√(Σ Var ĝ_j): the estimated size of its noise")


class SklearnExport(_Wire):
    """What :class:`sklearn.linear_model.LogisticRegression` needs to predict: set these
    attributes on an instance (``coef_`` is ``1 × (d − 1)`` over :attr:`features`)."""

    coef_: list[list[float]]
    intercept_: list[float]
    classes_: list[int]
    features: list[str] = Field(description="the encoded columns, in coef_'s order")


class TrainedModel(_Wire, Tabular):
    """The released weights of a finished job, and what they cost the devices."""

    job: str
    collection: str
    layout: FeatureLayout
    coordinates: list[str] = Field(description="intercept, numbers, then feature=value cells")
    weights: list[float] = Field(description="tail-averaged weights, one per coordinate")
    epsilon: float = Field(description="exact ε per device: each device sends one report")
    delta: float
    rounds: int
    curve: list[RoundLog]
    sklearn: SklearnExport

    def frame_columns(self) -> Columns:
        """One row per coordinate: ``coordinate, weight``."""
        return {"coordinate": list(self.coordinates), "weight": list(self.weights)}


class TrainingJob(_Wire):
    """A training job as the analyst sees it."""

    id: str
    collection: str
    status: JobStatus
    spec: TrainingSpec = Field(description="the complete spec, planned values filled in")
    gradient: GradientMechanismConfig
    loss: LossMechanismConfig | None
    round: int = Field(description="the open round (equal to spec.rounds when done)")
    received: int = Field(description="reports received in the open round")
    weights: list[float] = Field(description="the weights the open round is computed at")
    curve: list[RoundLog]
    created_unix: int
    updated_unix: int
    error: JobError | None = None


class Participation(_Wire):
    """A place in the open round of a job, issued to one device."""

    job: str
    collection: str
    token: str = Field(pattern=TOKEN_PATTERN, description="single use; the device's secret")
    round: int
    role: Role
    weights: list[float]
    layout: FeatureLayout
    gradient: GradientMechanismConfig
    loss: LossMechanismConfig | None
    epsilon: float = Field(description="exact ε of the one report the device will send")
    delta: float
    expires_unix: int = Field(description="the place is kept for others after this time")


class ParticipationReport(RequestModel):
    """A device's one report for its participation: the mechanism's bytes, base64."""

    report: str = Field(max_length=1_000_000, description="the perturbed report, base64")


class ParticipationResult(_Wire):
    """The aggregator kept the report."""

    job: str
    round: int
    role: Role
    round_closed: bool = Field(description="this report completed its round")
