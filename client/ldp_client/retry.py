"""When and how long to wait before another attempt (pure, shared by both clients).

A failed attempt is retried when :mod:`ldp_client.protocol` marks it retryable
(connection failures, timeouts, HTTP 429 and 5xx) and attempts remain. The wait grows
exponentially, ``backoff · 2^attempt``, times a random factor in ``[0.5, 1]`` so that a
fleet of clients that failed together does not retry in lockstep; a server's
``Retry-After`` is honoured; no wait exceeds ``max_delay``.
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
    max_delay: float = 30.0

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

    def should_retry(self, retryable: bool, attempt: int) -> bool:
        """Whether attempt number ``attempt`` (0 for the first) is followed by another."""
        return retryable and attempt < self.retries

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
