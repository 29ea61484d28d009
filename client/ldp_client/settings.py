"""The checked constructor arguments of a client (shared by the sync and async clients)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from ldp_client.retry import RetryPolicy
from ldp_shared import __version__
from ldp_shared.errors import ConfigurationError

__all__ = ["USER_AGENT", "Settings"]

USER_AGENT = f"ldpcollect-client/{__version__}"

# RFC 6750 b64token: what may follow "Bearer " in an Authorization header.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@dataclass(frozen=True)
class Settings:
    """Where the aggregator is, how to authenticate, how long to wait and retry."""

    base_url: str
    token: str | None
    timeout: float
    policy: RetryPolicy
    rng: np.random.Generator | None

    @classmethod
    def make(
        cls,
        base_url: str,
        token: str | None,
        timeout: float,
        retries: int,
        backoff: float,
        rng: np.random.Generator | None,
    ) -> Settings:
        """Check every argument; :class:`ConfigurationError` names the first bad one."""
        return cls(
            base_url=_check_base_url(base_url),
            token=_check_token(token),
            timeout=_check_timeout(timeout),
            policy=RetryPolicy(retries=retries, backoff=backoff),
            rng=_check_rng(rng),
        )

    def httpx_options(self) -> dict[str, Any]:
        """Keyword arguments for :class:`httpx.Client` / :class:`httpx.AsyncClient`."""
        return {
            "base_url": self.base_url,
            "timeout": httpx.Timeout(self.timeout),
            "headers": {"User-Agent": USER_AGENT},
            "follow_redirects": False,
        }


def _check_base_url(base_url: str) -> str:
    if not isinstance(base_url, str):
        raise ConfigurationError(f"base_url must be a string, got {base_url!r}")
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise ConfigurationError(f"base_url {base_url!r} is not a URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(f"base_url must be an http(s) URL with a host, got {base_url!r}")
    if url.query or url.fragment:
        raise ConfigurationError(f"base_url must not carry a query or fragment: {base_url!r}")
    return base_url


def _check_token(token: str | None) -> str | None:
    if token is None:
        return None
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise ConfigurationError(
            "token must be a non-empty bearer token (letters, digits and -._~+/ only)"
        )
    return token


def _check_timeout(timeout: float) -> float:
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ConfigurationError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    return float(timeout)


def _check_rng(rng: np.random.Generator | None) -> np.random.Generator | None:
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ConfigurationError("rng must be a numpy.random.Generator or None")
    return rng
