"""Upload limits: token buckets per collection and per source address, in memory only.

Anyone may upload reports, so a flood of uploads is the cheapest attack on the service:
it fills the disk and buries the real reports. Each replica keeps, in memory, one token
bucket per collection (on by default) and, when configured, one per source address
(off by default: a carrier's NAT puts many devices behind one address). Nothing about a
limit is ever stored, logged or exported as a metric label.

The buckets count **reports**, not requests: what a flood costs (rows, disk, statistics
writes) grows with the reports, and a request carries between 1 and 10,000 of them, so
a limit in requests would let batches through 10,000 times faster than single reports.
A request for ``k`` reports is admitted when its bucket holds ``min(k, burst)`` tokens and
then takes ``k`` (the bucket may go into debt), so a batch larger than the burst still
passes once the bucket is full and the rate holds over time. A request that a bucket
refuses takes nothing from any bucket; the answer is ``429 rate-limited`` with
``Retry-After``, the whole seconds until the bucket holds enough, and the route stores
nothing.

Token bucket: tokens accrue at ``rate`` per second up to ``burst`` (RFC 2697 describes the
same meter for network traffic). The limits hold per replica: ``N`` replicas behind a
load balancer accept up to ``N`` times the rate.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ldp_aggregator.metrics import LimitScope
from ldp_shared.errors import RateLimitedError

MAX_ADDRESSES = 100_000
"""Address buckets kept at most (the least recently used go first): about 10 MB."""


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """Token buckets keyed by a string; the least recently used beyond ``max_keys`` go.

    A forgotten bucket comes back full, which is what an idle bucket would be anyway once
    ``burst / rate`` seconds have passed. Not thread-safe: :class:`UploadLimits` locks.
    """

    def __init__(self, rate: float, burst: int, max_keys: int | None = None) -> None:
        if not (math.isfinite(rate) and rate > 0) or burst <= 0:
            raise ValueError("a token bucket needs a positive finite rate and burst")
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def wait(self, key: str, cost: int, now: float) -> float:
        """Seconds until ``key``'s bucket admits ``cost`` (0: now); takes nothing."""
        bucket = self._refilled(key, now)
        needed = min(cost, self.burst)
        return max(0.0, (needed - bucket.tokens) / self.rate)

    def take(self, key: str, cost: int, now: float) -> None:
        """Take ``cost`` tokens (after :meth:`wait` said 0)."""
        self._refilled(key, now).tokens -= cost

    def __len__(self) -> int:
        return len(self._buckets)

    def _refilled(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            if self.max_keys is not None and len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self.rate)
            bucket.updated = now
        return bucket


@dataclass(frozen=True)
class Refusal:
    """Why an upload was refused and how long to wait."""

    limit: LimitScope
    retry_after: float
    detail: str

    def error(self) -> RateLimitedError:
        return RateLimitedError(self.detail, retry_after=self.retry_after)


class UploadLimits:
    """The upload limits of one app (a rate of 0 turns a limit off)."""

    def __init__(
        self,
        collection_rate: float,
        collection_burst: int,
        address_rate: float = 0.0,
        address_burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._collections = (
            TokenBuckets(collection_rate, collection_burst) if collection_rate > 0 else None
        )
        self._addresses = (
            TokenBuckets(address_rate, address_burst, MAX_ADDRESSES) if address_rate > 0 else None
        )
        # addresses are keyed by a keyed hash, so even this process's memory holds none
        self._address_key = secrets.token_bytes(32)

    def admit(self, collection: str, reports: int, address: str | None) -> Refusal | None:
        """Take ``reports`` tokens from the collection's and the address's buckets.

        ``collection`` must name an existing collection (the table grows with them).
        Returns ``None`` when admitted, or the :class:`Refusal` (and takes nothing).
        """
        checks: list[tuple[LimitScope, TokenBuckets, str]] = []
        if self._addresses is not None and address is not None:
            checks.append(("address", self._addresses, self._address_id(address)))
        if self._collections is not None:
            checks.append(("collection", self._collections, collection))
        with self._lock:
            now = self._clock()
            for limit, buckets, key in checks:
                wait = buckets.wait(key, reports, now)
                if wait > 0:
                    return Refusal(limit, wait, _detail(limit, collection, buckets, wait))
            for _, buckets, key in checks:
                buckets.take(key, reports, now)
        return None

    def tracked_addresses(self) -> int:
        """How many address buckets are held (for tests)."""
        return 0 if self._addresses is None else len(self._addresses)

    def _address_id(self, address: str) -> str:
        digest = hashlib.blake2b(address.encode(), key=self._address_key, digest_size=16)
        return digest.hexdigest()


def _detail(limit: LimitScope, collection: str, buckets: TokenBuckets, wait: float) -> str:
    whose = f"to collection {collection!r}" if limit == "collection" else "from one address"
    return (
        f"uploads {whose} are over this server's limit of {buckets.rate:g} reports per"
        f" second (bursts up to {buckets.burst}); retry after {max(1, math.ceil(wait))} s"
    )
