"""Whether the aggregator takes a collection's shuffled batches, as the shuffler knows it.

The shuffler asks the aggregator's public ``GET /v1/collections/{name}/sealing-key`` (no
token): 200 means the collection exists and is shuffled; a 404 ``collection-not-found``
or a 409 ``conflict`` (not shuffled) is a refusal. The forwarder adds what a batch's
answer says (also a 409 ``collection-closed``). A verdict is cached for
``ttl`` seconds, so a busy collection costs one look-up per period, not one per upload.

When the aggregator cannot answer (connection error, 5xx, 429, anything else), the
verdict is *unknown* (kept a few seconds only): the upload is held (the aggregator's
outage is no reason to turn devices away) and checked again when it is forwarded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

import httpx

from ldp_shared.errors import (
    CollectionClosedError,
    CollectionNotFoundError,
    ConflictError,
    LDPError,
    problem_type,
)

__all__ = ["Refusal", "Verdict", "Verdicts", "permanent_refusal"]

MAX_CACHED = 4096
"""Names whose verdict is kept at most (an upload may name anything)."""
UNKNOWN_SECONDS = 5.0
"""How long an unknown verdict (the aggregator did not answer) is kept."""
CHECK_TIMEOUT = 5.0
"""Seconds a look-up may take before the verdict is unknown."""

_REASONS: dict[tuple[int, str], tuple[type[LDPError], str]] = {
    (404, problem_type(CollectionNotFoundError)): (CollectionNotFoundError, "not-found"),
    (409, problem_type(ConflictError)): (ConflictError, "not-shuffled"),
    (409, problem_type(CollectionClosedError)): (CollectionClosedError, "closed"),
}


@dataclass(frozen=True)
class Refusal:
    """The aggregator refuses a collection's batches for good: ``reason`` is
    ``not-found``, ``not-shuffled`` or ``closed``; ``error`` the problem's class."""

    reason: str
    status: int
    error: type[LDPError]
    detail: str


def permanent_refusal(answer: httpx.Response) -> Refusal | None:
    """The :class:`Refusal` an aggregator's answer states, ``None`` for any other answer.

    Only a problem document of a known type counts: a bare 404 from a proxy or a wrong
    base URL must not make the shuffler drop what it holds.
    """
    if answer.status_code not in (404, 409):
        return None
    try:
        body = answer.json()
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    found = _REASONS.get((answer.status_code, str(body.get("type"))))
    if found is None:
        return None
    error, reason = found
    detail = str(body.get("detail", ""))[:300]
    return Refusal(reason=reason, status=answer.status_code, error=error, detail=detail)


Verdict = Literal["takes", "unknown"] | Refusal
"""``"takes"``: the collection takes shuffled batches; ``"unknown"``: the aggregator did
not answer; a :class:`Refusal`: it refuses them for good."""


class Verdicts:
    """Cached verdicts of the aggregator on collection names (one event loop)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.ttl = ttl
        self.clock = clock
        self._cached: dict[str, tuple[float, Verdict]] = {}

    def remember(self, name: str, verdict: Verdict) -> None:
        """Keep ``verdict`` for ``name`` for :attr:`ttl` seconds (``"unknown"``: at most
        :data:`UNKNOWN_SECONDS`, so that an unreachable aggregator does not delay every
        upload by a connection attempt)."""
        now = self.clock()
        ttl = min(self.ttl, UNKNOWN_SECONDS) if verdict == "unknown" else self.ttl
        if len(self._cached) >= MAX_CACHED:
            self._cached = {k: v for k, v in self._cached.items() if v[0] > now}
            if len(self._cached) >= MAX_CACHED:
                self._cached.clear()
        self._cached[name] = (now + ttl, verdict)

    async def check(self, name: str) -> Verdict:
        """The cached verdict on ``name``, or a fresh one."""
        cached = self._cached.get(name)
        if cached is not None and cached[0] > self.clock():
            return cached[1]
        try:
            answer = await self.http.get(
                f"/v1/collections/{quote(name, safe='')}/sealing-key", timeout=CHECK_TIMEOUT
            )
        except httpx.HTTPError:
            self.remember(name, "unknown")
            return "unknown"
        verdict: Verdict = "takes" if answer.status_code == 200 else "unknown"
        refusal = permanent_refusal(answer)
        if refusal is not None:
            verdict = refusal
        self.remember(name, verdict)
        return verdict
