# The single source of both SDK clients: scripts/unasync.py writes client.py (LDPClient)
# from this file. After changing it, run `python scripts/unasync.py`; CI runs --check.
"""The asynchronous SDK client: fetch a collection's config, privatize locally, upload, query.

This module only does the I/O. Requests and answers are :mod:`ldp_client.protocol`
(the analyses' calls :mod:`ldp_client.itemsets` and :mod:`ldp_client.naive_bayes`), config
checks :mod:`ldp_client.configs`, the retry decision :mod:`ldp_client.retry`, batching
:mod:`ldp_client.batching`, the device's policy and ledger :mod:`ldp_client.device`.
Privatization and the ledger's short transactions run inline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx
import numpy as np

from ldp_client import (
    batching,
    configs,
    estimate_calls,
    lifecycle,
    protocol,
    sealed,
)
from ldp_client.batching import DEFAULT_BATCH_SIZE, BatchPlan, SubmitSummary
from ldp_client.device import Device, LedgerArgument
from ldp_client.estimate_calls import WindowBounds
from ldp_client.itemset_methods_async import AsyncItemsetMethods
from ldp_client.knn_methods_async import AsyncKnnMethods
from ldp_client.ledger import Ledger
from ldp_client.list_methods_async import AsyncListMethods
from ldp_client.naive_bayes_methods_async import AsyncNaiveBayesMethods
from ldp_client.plan_methods_async import AsyncPlanMethods
from ldp_client.policy import DevicePolicy
from ldp_client.protocol import ApiCall, Outcome, PostProcess, Success
from ldp_client.reports import ReportColumns
from ldp_client.settings import Settings
from ldp_client.shuffled_methods_async import AsyncShuffledMethods
from ldp_client.training_methods_async import AsyncTrainingMethods
from ldp_client.trend_methods_async import AsyncTrendMethods
from ldp_shared.codec import Columns, Record
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidRecordError, PayloadTooLargeError
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.lifecycle import CollectionStatus
from ldp_shared.wire.releases import FrequencyResult, HeavyHittersResult, MeanResult, QuantileResult
from ldp_shared.wire.reports import BatchResult, Report

__all__ = ["AsyncLDPClient"]

T = TypeVar("T")


class AsyncLDPClient(
    AsyncNaiveBayesMethods,
    AsyncItemsetMethods,
    AsyncTrainingMethods,
    AsyncKnnMethods,
    AsyncTrendMethods,
    AsyncListMethods,
    AsyncPlanMethods,
    AsyncShuffledMethods,
):
    """Talks to one aggregator over HTTP; every method that does I/O is asynchronous.

    Use it as a context manager (``async with``) or call :meth:`aclose` when done.

    ``token`` is sent (as ``Authorization: Bearer``) only to the analyst and admin
    routes; uploading reports and reading a config need none. A request is retried up to
    ``retries`` times on connection failures, timeouts, HTTP 429 and 5xx, waiting
    ``backoff · 2^attempt`` seconds (jittered), or the ``Retry-After`` the aggregator
    sends with a 429 (an upload limit) or 503 when that is longer; when it asks for more
    than a minute, or the retries run out, a 429 is raised as
    :class:`~ldp_shared.errors.RateLimitedError` (its ``retry_after`` is the server's).
    Retried uploads resend the same report ids, so nothing is counted twice.
    ``transport`` replaces the network (tests: :class:`httpx.MockTransport`). ``rng`` is the
    perturbation's random source: leave it ``None`` (a fresh cryptographically strong
    generator per call) outside simulations.

    The device's privacy (``docs/device-privacy.md``, :class:`~ldp_client.device.Device`):
    ``ledger`` (a file path) charges every report made before it can be sent; ``policy``
    (``DevicePolicy()`` when there is a ledger) refuses collections and reports beyond the
    owner's limits with :class:`~ldp_shared.errors.PrivacyPolicyError`; ``memoize`` names
    the collections whose repeated records resend their first report. Neither ledger nor
    policy: nothing is enforced (simulators and tools, not devices).

    Every failure is an :class:`ldp_shared.errors.LDPError`.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: np.random.Generator | None = None,
        ledger: LedgerArgument = None,
        policy: DevicePolicy | None = None,
        memoize: Collection[str] = (),
    ) -> None:
        self._settings = Settings.make(base_url, token, timeout, retries, backoff, rng)
        self._device = Device.make(policy, ledger, memoize)
        self._http = httpx.AsyncClient(transport=transport, **self._settings.httpx_options())
        self._configs: dict[str, CollectionConfig] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    @property
    def ledger(self) -> Ledger | None:
        """The device's ledger (what was spent, per collection), if it keeps one."""
        return self._device.ledger

    async def aclose(self) -> None:
        """Close the connection pool (and the ledger, if it was opened from a path)."""
        self._device.close()
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncLDPClient({self.base_url!r})"

    # ------------------------------------------------------------------ transport

    async def _call(self, call: ApiCall[T]) -> T:
        policy = self._settings.policy
        attempt = 0
        while True:
            request = call.build(self._http, self._settings.token)
            outcome: Outcome[T]
            try:
                response = await self._http.send(request)
            except httpx.HTTPError as exc:
                outcome = protocol.interpret_exception(call, request, exc)
            else:
                outcome = protocol.interpret_response(call, request, response)
            if isinstance(outcome, Success):
                return outcome.value
            if not policy.should_retry(outcome.retryable, attempt, outcome.retry_after):
                note = policy.give_up_note(
                    attempt, outcome.retry_after if outcome.retryable else None
                )
                if note is not None:
                    outcome.error.add_note(note)
                raise outcome.error from outcome.cause
            await asyncio.sleep(policy.delay(attempt, outcome.retry_after))
            attempt += 1

    # ------------------------------------------------------------------ collections

    async def get_config(self, name: str) -> CollectionConfig:
        """The verified public config of collection ``name`` (fetched once, then cached).

        The client rebuilds p, q, ε, layout and hash from the published spec and refuses
        (:class:`~ldp_shared.errors.ConfigurationError`) a config that differs.
        """
        cached = self._configs.get(name)
        if cached is None:
            cached = configs.accept_config(name, await self._call(protocol.get_config_call(name)))
            self._configs[name] = cached
        return cached

    async def create_collection(self, spec: CollectionSpec | Mapping[str, Any]) -> CollectionConfig:
        """Create a collection (admin token); returns its verified config."""
        checked = configs.coerce_spec(spec)
        created = await self._call(protocol.create_collection_call(checked))
        config = configs.accept_created(checked, created)
        self._configs[checked.name] = config
        return config

    async def collection_status(self, name: str) -> CollectionStatus:
        """Whether the collection takes new reports, and how many it holds (analyst token)."""
        return await self._call(lifecycle.collection_status_call(name))

    async def close_collection(self, name: str) -> CollectionStatus:
        """Close the collection to new reports (admin token); uploads then raise
        :class:`~ldp_shared.errors.CollectionClosedError`, estimates stay readable."""
        return await self._call(lifecycle.set_closed_call(name, closed=True))

    async def reopen_collection(self, name: str) -> CollectionStatus:
        """Let the collection take new reports again (admin token)."""
        return await self._call(lifecycle.set_closed_call(name, closed=False))

    async def set_retention(self, name: str, days: int | None) -> CollectionStatus:
        """Keep reports' bits ``days`` days (``None``: for ever); older reports are folded
        away, their ids and the estimates stay (admin token)."""
        return await self._call(lifecycle.set_retention_call(name, days))

    async def delete_collection(self, name: str, *, confirm: str) -> None:
        """Delete the collection with all its reports, statistics, models and jobs (admin
        token). ``confirm`` must repeat ``name``; otherwise the aggregator refuses
        (:class:`~ldp_shared.errors.InvalidQueryError`) and deletes nothing."""
        await self._call(lifecycle.delete_collection_call(name, confirm))
        self._configs.pop(name, None)

    async def frequencies(
        self,
        name: str,
        attribute: str,
        *,
        confidence: float = 0.95,
        postprocess: PostProcess = "none",
        values: Sequence[str | int] | None = None,
        window: WindowBounds | None = None,
    ) -> FrequencyResult:
        """Frequency estimates of one attribute, with standard errors (analyst token).

        ``postprocess``: ``"norm-sub"`` or ``"simplex"`` (Wang et al., NDSS 2020), or
        ``"ibu"`` (iterative Bayesian update: ``postprocessed`` plus ``ibu``, how it ended);
        the raw unbiased estimate is always there. Attributes with ordered values (ordinal
        exponential, histogram) also carry ``ordinal``: CDF, mean rank and median rank.
        ``values``: estimate only these (at most 1,000); an attribute of an open domain
        (``flh``, ``hcms``, ``pem``, ``hadamard`` with ``domain_size``) is estimated only
        for the values named. ``window``: only the
        reports of the periods ``(from, to)``, both included (every estimate takes it).
        """
        call = estimate_calls.frequencies_call(
            name, attribute, confidence, postprocess, values, window
        )
        return await self._call(call)

    async def heavy_hitters(
        self,
        name: str,
        attribute: str,
        *,
        k: int = 20,
        confidence: float = 0.95,
        window: WindowBounds | None = None,
    ) -> HeavyHittersResult:
        """The ``k`` most frequent values of an open-domain attribute (mechanism ``pem``)
        that nobody listed, found from the collection's statistics, each with its
        estimate, standard error and interval, and the detection threshold below which
        nothing is found reliably (analyst token)."""
        call = estimate_calls.heavy_hitters_call(name, attribute, k, confidence, window)
        return await self._call(call)

    async def means(
        self,
        name: str,
        attribute: str,
        *,
        confidence: float = 0.95,
        window: WindowBounds | None = None,
    ) -> MeanResult:
        """The mean of a numeric attribute, with its standard error (analyst token)."""
        return await self._call(estimate_calls.means_call(name, attribute, confidence, window))

    async def quantiles(
        self,
        name: str,
        attribute: str,
        q: Sequence[float] = (0.25, 0.5, 0.75),
        *,
        confidence: float = 0.95,
        window: WindowBounds | None = None,
    ) -> QuantileResult:
        """Quantiles of a histogram attribute at the levels ``q`` (each in (0, 1)), in the
        number's units, with intervals at ``confidence`` (analyst token).

        Levels outside (0, 1), NaN or none at all, a non-histogram attribute or a bad
        confidence raise :class:`~ldp_shared.errors.InvalidQueryError`; too few reports
        :class:`~ldp_shared.errors.InsufficientReportsError`.
        """
        call = estimate_calls.quantiles_call(name, attribute, q, confidence, window)
        return await self._call(call)

    # ------------------------------------------------------------------ reports

    async def privatize(self, name: str, record: Record) -> Report:
        """The perturbed report of one record (no upload; charged to the ledger, if any)."""
        config = await self.get_config(name)
        return self._device.privatize(config, record, self._settings.rng)

    async def privatize_many(self, name: str, records: Iterable[Record]) -> ReportColumns:
        """Perturbed reports of many records, vectorised (no upload)."""
        if not isinstance(records, Iterable):  # None, a number: typed, before any request
            kind = type(records).__name__
            raise InvalidRecordError(f"records must be an iterable of records, got {kind}")
        config = await self.get_config(name)
        return self._device.privatize_many(config, records, self._settings.rng)

    async def privatize_columns(self, name: str, columns: Columns) -> ReportColumns:
        """Perturbed reports of columnar records (simulations; no upload)."""
        config = await self.get_config(name)
        return self._device.privatize_columns(config, columns, self._settings.rng)

    async def submit_reports(
        self,
        name: str,
        reports: Sequence[Report],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> BatchResult:
        """Upload already perturbed reports in batches; the merged per-report outcomes.

        Safe to call again with the same reports after a failure: their ids make every
        resent report count once. Rejections are returned, not raised.
        """
        sealed.refuse_direct(await self.get_config(name))
        plan = BatchPlan(reports, batch_size)
        while (batch := plan.next_batch()) is not None:
            try:
                result = await self._call(protocol.submit_reports_call(name, batch))
            except PayloadTooLargeError as error:
                plan.too_large(batch, error)
                continue
            except BaseException as error:
                plan.annotate(error)
                raise
            plan.record(batch, result)
            if progress is not None:
                progress(len(batch))
        return plan.result()

    async def submit(
        self,
        name: str,
        records: Iterable[Record],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> SubmitSummary:
        """Privatize every record locally, then upload the reports in batches.

        Nothing is sent unless every record is valid
        (:class:`~ldp_shared.errors.InvalidRecordError`) and the device's policy allows
        them (:class:`~ldp_shared.errors.PrivacyPolicyError`); the ledger is charged
        first. ``progress`` is called after
        each batch with the number of reports it held (``progress=bar.update`` works).
        If the aggregator rejects any report, :class:`~ldp_shared.errors.ReportRejectedError`
        (with ``.rejected``, id → reason) is raised once all batches were sent.

        Calling ``submit`` again with the same records after a failure makes new reports
        and spends their ε again; to resume, use :meth:`privatize_many` once and
        :meth:`submit_reports` as often as needed.
        """
        batching.check_batch_size(batch_size)
        if isinstance(records, Iterable):  # else privatize_many's error, before any request
            sealed.refuse_direct(await self.get_config(name))  # before any ε is spent
        reports = await self.privatize_many(name, records)
        result = await self.submit_reports(name, reports, batch_size=batch_size, progress=progress)
        return batching.submit_summary(result)
