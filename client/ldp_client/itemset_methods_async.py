# The single source of both clients' itemset methods: scripts/unasync.py writes
# itemset_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The frequent-itemset methods of :class:`~ldp_client.async_client.AsyncLDPClient` (MASK
baskets), kept apart so that the client module stays readable in one sitting.

:class:`AsyncItemsetMethods` is a mixin: the client supplies the transport (``_call``)
and its settings; the requests and answers are :mod:`ldp_client.itemsets`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TypeVar

from ldp_client import itemsets
from ldp_client.protocol import ApiCall
from ldp_client.settings import Settings
from ldp_shared.wire.itemsets import ItemsetJob, ItemsetResult, MaskPrivacy

__all__ = ["AsyncItemsetMethods"]

T = TypeVar("T")


class AsyncItemsetMethods:
    """Mine frequent itemsets and association rules of a MASK attribute."""

    _settings: Settings

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    async def start_itemsets(
        self,
        name: str,
        *,
        min_support: float,
        attribute: str | None = None,
        max_size: int | None = None,
        min_confidence: float = 0.5,
        support_reduction: float = 0.0,
        confidence: float = 0.95,
        max_rules: int = 1000,
        privacy_weight: float = 1.0,
        wait_seconds: float = 5.0,
    ) -> ItemsetJob:
        """Start mining a MASK attribute (analyst token); the job, finished or still running.

        The aggregator answers once the job is done or ``wait_seconds`` have passed;
        poll an unfinished job with :meth:`itemset_job`.
        """
        query = itemsets.build_itemset_query(
            min_support=min_support,
            attribute=attribute,
            max_size=max_size,
            min_confidence=min_confidence,
            support_reduction=support_reduction,
            confidence=confidence,
            max_rules=max_rules,
            privacy_weight=privacy_weight,
            wait_seconds=wait_seconds,
        )
        return await self._call(itemsets.mine_itemsets_call(name, query))

    async def itemset_job(self, name: str, job_id: str) -> ItemsetJob:
        """A mining job as it stands (analyst token)."""
        return await self._call(itemsets.itemset_job_call(name, job_id))

    async def mine_itemsets(
        self,
        name: str,
        *,
        min_support: float,
        attribute: str | None = None,
        max_size: int | None = None,
        min_confidence: float = 0.5,
        support_reduction: float = 0.0,
        confidence: float = 0.95,
        max_rules: int = 1000,
        privacy_weight: float = 1.0,
        timeout: float = 600.0,
        poll_interval: float = 0.5,
    ) -> ItemsetResult:
        """Frequent itemsets (unbiased supports with standard errors) and association
        rules of a MASK attribute (analyst token), waiting for the mining job.

        ``support_reduction = r`` mines at ``min_support·(1 - r)`` (MASK's coverage mode).
        A job that fails raises its typed error; one still running after ``timeout``
        seconds raises :class:`~ldp_shared.errors.TransportError` (naming the job, which
        :meth:`itemset_job` can keep polling).
        """
        deadline = time.monotonic() + timeout
        job = await self.start_itemsets(
            name,
            min_support=min_support,
            attribute=attribute,
            max_size=max_size,
            min_confidence=min_confidence,
            support_reduction=support_reduction,
            confidence=confidence,
            max_rules=max_rules,
            privacy_weight=privacy_weight,
            wait_seconds=itemsets.server_wait(timeout, self._settings.timeout),
        )
        while (result := itemsets.job_result(job)) is None:
            itemsets.check_deadline(name, job, deadline, timeout)
            await asyncio.sleep(poll_interval)
            job = await self.itemset_job(name, job.id)
        return result

    async def mask_privacy(
        self,
        name: str,
        average_support: float,
        *,
        attribute: str | None = None,
        weight: float = 1.0,
    ) -> MaskPrivacy:
        """ε per item and per basket, and MASK's reconstruction privacy P for an average
        item support ``s0`` and weight ``a`` of the 1s (no token needed)."""
        call = itemsets.mask_privacy_call(name, average_support, attribute, weight)
        return await self._call(call)
