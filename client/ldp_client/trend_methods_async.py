# The single source of both clients' estimates over time: scripts/unasync.py writes
# trend_methods.py from this file. After changing it, run `python scripts/unasync.py`.
"""The estimates over time of :class:`~ldp_client.async_client.AsyncLDPClient`, kept apart
so that the client module stays readable in one sitting.

:class:`AsyncTrendMethods` is a mixin: the client supplies the transport (``_call``); the
requests are :mod:`ldp_client.estimate_calls`. A window is a pair ``(from, to)`` of
period bounds, both included (a date, a datetime, an ISO 8601 string or ``None``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

from ldp_client import estimate_calls
from ldp_client.estimate_calls import WindowBounds
from ldp_client.protocol import ApiCall
from ldp_shared.wire.trends import DifferenceResult, TrendResult

__all__ = ["AsyncTrendMethods"]

T = TypeVar("T")

TrendEstimate = Literal["frequencies", "mean", "quantiles"]
"""What a trend follows (``None``: as the attribute is released)."""


class AsyncTrendMethods:
    """Follow an attribute period by period, and compare two windows."""

    async def _call(self, call: ApiCall[T]) -> T:
        """One API call through the client's transport (the client defines it)."""
        raise NotImplementedError

    async def trend(
        self,
        name: str,
        attribute: str,
        *,
        window: WindowBounds | None = None,
        confidence: float = 0.95,
        values: Sequence[str | int] | None = None,
        estimate: TrendEstimate | None = None,
        levels: Sequence[float] | None = None,
    ) -> TrendResult:
        """One estimate of ``attribute`` per period of ``window`` (default: from the first
        period holding reports to the current one), each with its intervals: frequencies
        (of the named ``values`` for an open domain), the mean of a numeric attribute, or
        a histogram attribute's quantiles at ``levels`` (``estimate="quantiles"``, or
        ``levels`` given; default the median). A period below the release minimum is
        listed with its count and ``withheld`` (analyst token)."""
        call = estimate_calls.trend_call(
            name, attribute, window, confidence, values, estimate, levels
        )
        return await self._call(call)

    async def difference(
        self,
        name: str,
        attribute: str,
        *,
        window: WindowBounds,
        baseline: WindowBounds,
        confidence: float = 0.95,
        values: Sequence[str | int] | None = None,
        estimate: TrendEstimate | None = None,
        levels: Sequence[float] | None = None,
    ) -> DifferenceResult:
        """``attribute``'s estimate over ``window`` minus its estimate over ``baseline``
        (windows sharing no period), value by value (quantiles: level by level, ``"q0.5"``,
        with a MOVER interval and no ``stderr``), with the interval of the difference
        (analyst token)."""
        call = estimate_calls.difference_call(
            name, attribute, window, baseline, confidence, values, estimate, levels
        )
        return await self._call(call)
