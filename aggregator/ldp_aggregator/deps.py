"""What the routes get from the app: its state, built once by :func:`create_app`."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import Request
from sqlalchemy import Engine

from ldp_aggregator.metrics import Metrics
from ldp_aggregator.rate_limits import UploadLimits
from ldp_aggregator.settings import Settings, TokenDigests
from ldp_aggregator.storage.collections import CollectionCache


@dataclass(frozen=True)
class AppState:
    """Everything one app instance holds (``app.state.ldp``); no module-level globals."""

    settings: Settings
    engine: Engine
    tokens: TokenDigests
    collections: CollectionCache
    metrics: Metrics
    upload_limits: UploadLimits
    randbelow: Callable[[int], int] = field(default=secrets.randbelow)
    """The server's own draws (a training place's role): ``randbelow(n)`` is uniform on
    ``0..n-1``; the operating system's CSPRNG unless a test injects a seeded one."""


def app_state(request: Request) -> AppState:
    """The :class:`AppState` of the app serving ``request``."""
    state = request.app.state.ldp
    assert isinstance(state, AppState)
    return state
