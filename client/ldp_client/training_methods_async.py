# The single source of both clients' training methods: scripts/unasync.py writes
# training_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The training-job methods of :class:`~ldp_client.async_client.AsyncLDPClient`: an
analyst creates, watches and exports a job; a device takes part in it once.

:class:`AsyncTrainingMethods` is a mixin: the client supplies the transport (``_call``),
its settings and its device; the requests, checks and the report are
:mod:`ldp_client.training`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, TypeVar

from ldp_client import training
from ldp_client.device import Device
from ldp_client.protocol import ApiCall
from ldp_client.settings import Settings
from ldp_shared.errors import (
    AlreadyParticipatedError,
    InvalidQueryError,
    LDPError,
    RateLimitedError,
    TransportError,
)
from ldp_shared.validation import validated
from ldp_shared.wire.training import (
    Participation,
    ParticipationResult,
    TrainedModel,
    TrainingJob,
    TrainingSpec,
)

__all__ = ["PLACE_DEADLINE_SECONDS", "AsyncTrainingMethods"]

T = TypeVar("T")

PLACE_DEADLINE_SECONDS = 600.0
"""How long :meth:`AsyncTrainingMethods.participate` waits for a place by default: a
round boundary (every place held until their devices answer) lasts a round trip, and a
place held by a device that never answers is freed within twice the job's
``participation_seconds`` (60 s by default), so ten minutes covers a few of those."""


class AsyncTrainingMethods:
    """Logistic regression trained by the aggregator from the devices' perturbed gradients."""

    _settings: Settings
    _device: Device

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ analysts

    async def create_training_job(
        self,
        name: str,
        spec: TrainingSpec | Mapping[str, Any],
    ) -> TrainingJob:
        """Create a training job in collection ``name`` (analyst token); the job with its
        planned values filled in. ``spec`` is a :class:`TrainingSpec` or its JSON form; its
        layout names both label values, ``positive`` and ``negative``
        (:class:`InvalidQueryError` before any request otherwise)."""
        checked = spec if isinstance(spec, TrainingSpec) else _spec(spec)
        return await self._call(training.create_training_job_call(name, checked))

    async def training_job(self, name: str, job_id: str) -> TrainingJob:
        """The job as it stands: open round, weights, loss curve (analyst token)."""
        return await self._call(training.training_job_call(name, job_id))

    async def training_model(self, name: str, job_id: str) -> TrainedModel:
        """The trained model of a finished job (analyst token); ``InsufficientReportsError``
        while rounds remain."""
        return await self._call(training.trained_model_call(name, job_id))

    async def wait_training_job(
        self,
        name: str,
        job_id: str,
        *,
        timeout: float = 3600.0,
        poll_seconds: float = 1.0,
        on_progress: Callable[[TrainingJob], None] | None = None,
    ) -> TrainedModel:
        """Poll the job until its last round has closed; its model. ``on_progress`` sees
        every poll's job; :class:`TransportError` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = await self.training_job(name, job_id)
            if on_progress is not None:
                on_progress(job)
            if job.status == "done":
                return await self.training_model(name, job_id)
            if job.status == "failed":
                detail = job.error.detail if job.error is not None else "no detail"
                raise TransportError(f"training job {job_id!r} failed: {detail}")
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"training job {job_id!r} is at round {job.round} of {job.spec.rounds}"
                    f" after {timeout:g} s"
                )
            await asyncio.sleep(poll_seconds)

    # ------------------------------------------------------------------ devices

    async def participate(
        self,
        name: str,
        job_id: str,
        record: Mapping[str, Any],
        *,
        place_deadline: float = PLACE_DEADLINE_SECONDS,
    ) -> ParticipationResult:
        """Take part in training job ``job_id`` of collection ``name`` with ``record`` (its
        features and label), once.

        While every place of the open round is held (``429`` at a round boundary), the
        device waits each ``Retry-After`` and asks again, for up to ``place_deadline``
        seconds (:data:`PLACE_DEADLINE_SECONDS`); then :class:`RateLimitedError`, with
        nothing spent.

        The device asks for a place, checks the record against the layout the place
        comes with (:class:`InvalidRecordError`), rebuilds the job's mechanism and checks
        its ε and δ against its own computation and its policy; on any of these refusals
        it gives the place back (``DELETE``) before raising, so it is free for another
        device at once and nothing is spent. Then it computes the clipped, perturbed
        gradient (or capped loss) of the record at the round's weights, charges the
        ledger, then sends the one report. A
        device whose ledger shows this job already gets :class:`AlreadyParticipatedError`
        before anything is asked or sent; a report that arrives after its round closed is
        answered ``RoundClosedError`` (it was not kept, but it was spent: the device does
        not try again).
        """
        ledger = self._device.ledger
        if ledger is not None and ledger.participated(name, job_id):
            raise AlreadyParticipatedError(
                f"this device took part in training job {job_id!r} already (its ledger says so)"
            )
        participation = await self._place(name, job_id, place_deadline)
        try:
            # the participation carries the layout: a record that does not fit it, or a
            # job the device refuses, gives the place back at once instead of holding it
            training.encode_record(participation.layout, record)
            mechanisms = training.rebuild_mechanisms(participation)
            training.check_policy(self._device.policy, job_id, mechanisms)
            report = training.make_report(participation, mechanisms, record, self._settings.rng)
        except LDPError:
            await self._give_back(participation)
            raise
        if ledger is not None:
            ledger.reserve_participation(name, job_id, mechanisms.epsilon, mechanisms.delta)
        try:
            return await self._call(training.send_report_call(participation, report))
        except AlreadyParticipatedError:
            # the token is this device's secret: an earlier attempt of this call was kept
            return ParticipationResult(
                job=job_id, round=participation.round, role=participation.role, round_closed=False
            )

    async def _give_back(self, participation: Participation) -> None:
        """Release the participation's place, unused; a failure leaves it held until its
        hold ends, as before there was a way to give it back (the refusal is what the
        caller is told)."""
        with suppress(LDPError):
            await self._call(training.release_call(participation))

    async def _place(self, name: str, job_id: str, deadline_seconds: float) -> Participation:
        """A place in the job's open round, asked again after each ``Retry-After`` until
        ``deadline_seconds`` have passed."""
        deadline = time.monotonic() + deadline_seconds
        while True:
            try:
                return await self._call(training.participation_call(name, job_id))
            except RateLimitedError as error:
                wait = error.retry_after if error.retry_after is not None else 1.0
                if time.monotonic() + wait > deadline:
                    raise RateLimitedError(
                        f"no place in training job {job_id!r} within {deadline_seconds:g} s"
                        f" (nothing was spent; the aggregator said: {error})",
                        retry_after=error.retry_after,
                    ) from error
                await asyncio.sleep(wait)


def _spec(values: Mapping[str, Any]) -> TrainingSpec:
    if not isinstance(values, Mapping):
        raise InvalidQueryError("a training spec must be a TrainingSpec or a mapping")
    return validated(TrainingSpec, dict(values), InvalidQueryError, "training spec")
