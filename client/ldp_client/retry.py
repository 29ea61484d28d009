"""When and how long to wait before another attempt (pure, shared by both clients).

A failed attempt is retried when :mod:`ldp_client.protocol` marks it retryable
(connection failures, timeouts, HTTP 429 and 5xx) and attempts remain. The wait grows
exponentially, ``backoff · 2^attempt``, times a random factor in ``[0.5, 1]`` so that a
fleet of clients that failed together does not retry in lockstep; a server's
``Retry-After`` (HTTP 429 from an upload limit, or 503) is honoured as the least wait.
No wait exceeds ``max_delay`` (a minute by default): when the server asks for longer, the
client gives up at once (:class:`~ldp_shared.errors.RateLimitedError` for a 429, with the
server's ``retry_after``) rather than come back early and be refused again. Every wait
counts against ``retries``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ldp_shared.errors import ConfigurationError

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` further attempts after the first, with exponential backoff."""

    retries: int = 3
    backoff: float = 0.2
    max_delay: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigurationError(f"retries must be an integer >= 0, got {self.retries!r}")
        for name in ("backoff", "max_delay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"{name} must be a finite number >= 0, got {value!r}")

    @property
    def attempts(self) -> int:
        """The most attempts one request gets."""
        return self.retries + 1

    def should_retry(self, retryable: bool, attempt: int, retry_after: float | None = None) -> bool:
        """Whether attempt number ``attempt`` (0 for the first) is followed by another.

        Not when the server asked to wait (``retry_after``) longer than ``max_delay``.
        """
        return retryable and attempt < self.retries and not self._too_long(retry_after)

    def give_up_note(self, attempt: int, retry_after: float | None = None) -> str | None:
        """What to add to the error of the last attempt, if anything."""
        if self._too_long(retry_after):
            return (
                f"the aggregator asked to wait {retry_after:g} s, longer than this client"
                f" waits ({self.max_delay:g} s); try again later"
            )
        return f"gave up after {attempt + 1} attempts" if attempt else None

    def _too_long(self, retry_after: float | None) -> bool:
        return retry_after is not None and retry_after > self.max_delay

    def delay(
        self, attempt: int, retry_after: float | None = None, jitter: float | None = None
    ) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based).

        ``jitter`` in ``[0, 1]`` picks the point in ``[0.5, 1] · backoff · 2^attempt``
        (random when omitted).
        """
        u = random.random() if jitter is None else jitter
        wait = self.backoff * (2.0**attempt) * (0.5 + 0.5 * u)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.max_delay)


def parse_retry_after(value: str | None) -> float | None:
    """The seconds of a ``Retry-After`` header in its delay-seconds form (dates are ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
