"""The app's routes: those every device calls are matched before any analyst's route.

Starlette tries the routes in order, about 2 µs each here, so a device's request that is
matched after the analysts' routes pays for all of them (0.2 ms of a training device's
2.2 ms of server CPU before the training routes moved up)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from starlette.routing import Match

DEVICE_ROUTES = [
    ("POST", "/v1/collections/c/reports"),
    ("POST", "/v1/collections/c/training-jobs/j/participations"),
    ("PUT", "/v1/collections/c/training-jobs/j/participations/t"),
    ("DELETE", "/v1/collections/c/training-jobs/j/participations/t"),
]
ANALYST_ROUTES = [
    ("GET", "/v1/collections/c/frequencies"),
    ("GET", "/v1/collections/c/heavy-hitters"),
    ("GET", "/v1/collections"),
    ("GET", "/healthz"),
]


def _matched_at(client: TestClient, method: str, path: str) -> int:
    """The position of the app's top-level route that takes ``method`` and ``path``."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    for position, route in enumerate(client.app.router.routes):  # type: ignore[attr-defined]
        if route.matches(scope)[0] == Match.FULL:
            return position
    raise AssertionError(f"no route takes {method} {path}")


def test_device_routes_are_matched_before_every_analyst_route(client: TestClient) -> None:
    devices = [_matched_at(client, method, path) for method, path in DEVICE_ROUTES]
    analysts = [_matched_at(client, method, path) for method, path in ANALYST_ROUTES]
    assert max(devices) < min(analysts), (devices, analysts)
