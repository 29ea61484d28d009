"""An in-memory stand-in for the aggregator's REST API, served through httpx.MockTransport.

It follows docs/api.md closely enough to exercise the SDK: public configs built with
``build_config``, report batches checked with ``decode_reports`` (idempotent by report
id), problem documents for errors, bearer tokens for the analyst and admin routes. Faults
can be queued per route to simulate outages, dropped connections and lost answers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from ldp_aggregator.problems import http_status
from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import (
    AuthenticationError,
    CollectionNotFoundError,
    ConflictError,
    LDPError,
    PermissionDeniedError,
    problem_type,
)
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import decode_bits

ADMIN = "admin-token"
ANALYST = "analyst-token"

Fault = Callable[[httpx.Request, Callable[[], httpx.Response]], httpx.Response]


def problem(error: type[LDPError], detail: str, **extra: Any) -> httpx.Response:
    body = {
        "type": problem_type(error),
        "title": error.title,
        "status": http_status(error),
        "detail": detail,
        **extra,
    }
    return httpx.Response(
        http_status(error),
        content=json.dumps(body).encode(),
        headers={"content-type": "application/problem+json"},
    )


def status(code: int, **headers: str) -> Fault:
    """Answer ``code`` (a problem document for 5xx/429) without touching the server state."""

    def fault(request: httpx.Request, serve: Callable[[], httpx.Response]) -> httpx.Response:
        body = {"type": "about:blank", "title": "unavailable", "status": code, "detail": "busy"}
        return httpx.Response(code, json=body, headers=headers)

    return fault


def raise_(exc_type: type[httpx.HTTPError]) -> Fault:
    """Drop the connection before the request reaches the application."""

    def fault(request: httpx.Request, serve: Callable[[], httpx.Response]) -> httpx.Response:
        raise exc_type("simulated network failure", request=request)  # type: ignore[call-arg]

    return fault


def lose_answer(exc_type: type[httpx.HTTPError] = httpx.ReadTimeout) -> Fault:
    """Process the request, then lose the answer (the client cannot know it was stored)."""

    def fault(request: httpx.Request, serve: Callable[[], httpx.Response]) -> httpx.Response:
        serve()
        raise exc_type("answer lost", request=request)  # type: ignore[call-arg]

    return fault


@dataclass
class FakeAggregator:
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    stored: dict[str, dict[str, bytes]] = field(default_factory=lambda: defaultdict(dict))
    requests: list[httpx.Request] = field(default_factory=list)
    faults: dict[tuple[str, str], list[Fault]] = field(default_factory=lambda: defaultdict(list))
    reject_ids: set[str] = field(default_factory=set)
    max_batch: int | None = None

    # ------------------------------------------------------------------ setup

    def add(self, spec: CollectionSpec) -> CollectionConfig:
        config = build_config(spec)
        self.configs[spec.name] = config.model_dump(mode="json")
        return config

    def fail(self, method: str, path: str, *faults: Fault) -> None:
        """Apply ``faults`` to the next requests to ``method path``, one each."""
        self.faults[(method, path)].extend(faults)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    # ------------------------------------------------------------------ inspection

    def sent(self, method: str, suffix: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == method and r.url.path.endswith(suffix)]

    def report_posts(self) -> list[list[str]]:
        """The report ids of every POST of reports, in order (retries included)."""
        return [
            [report["id"] for report in json.loads(r.content)["reports"]]
            for r in self.sent("POST", "/reports")
        ]

    # ------------------------------------------------------------------ serving

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.method, request.url.path)
        queue = self.faults.get(key)
        if queue:
            return queue.pop(0)(request, lambda: self.serve(request))
        return self.serve(request)

    def _role(self, request: httpx.Request) -> str | None:
        header = request.headers.get("authorization", "")
        return {f"Bearer {ADMIN}": "admin", f"Bearer {ANALYST}": "analyst"}.get(header)

    def serve(self, request: httpx.Request) -> httpx.Response:
        parts = request.url.path.strip("/").split("/")
        if parts[:2] != ["v1", "collections"]:
            return httpx.Response(404, text="<html>not here</html>")
        if len(parts) == 2:
            return self._collections(request)
        name = parts[2]
        if name not in self.configs:
            return problem(CollectionNotFoundError, f"no collection named {name!r}")
        if len(parts) == 3 and request.method == "GET":
            return httpx.Response(200, json=self.configs[name])
        if parts[3:] == ["reports"] and request.method == "POST":
            return self._reports(name, request)
        if parts[3:] == ["frequencies"] and request.method == "GET":
            return self._frequencies(name, request)
        return httpx.Response(405)

    def _collections(self, request: httpx.Request) -> httpx.Response:
        role = self._role(request)
        if role is None:
            return problem(AuthenticationError, "missing or unknown bearer token")
        if request.method == "GET":
            return httpx.Response(
                200, json=self._page("collections", sorted(self.configs), request)
            )
        if role != "admin":
            return problem(PermissionDeniedError, "creating a collection needs the admin role")
        spec = CollectionSpec.model_validate_json(request.content)
        if spec.name in self.configs:
            return problem(ConflictError, f"collection {spec.name!r} exists already")
        return httpx.Response(201, json=self.add(spec).model_dump(mode="json"))

    @staticmethod
    def _page(field: str, keys: list[str], request: httpx.Request) -> dict[str, Any]:
        """A page of a list as the aggregator answers it (the cursor: the last key shown)."""
        limit = int(request.url.params.get("limit", "100"))
        cursor = request.url.params.get("cursor")
        after = [key for key in keys if cursor is None or key > cursor]
        shown = after[:limit]
        more = len(after) > limit
        return {field: shown, "next_cursor": shown[-1] if more else None}

    def _reports(self, name: str, request: httpx.Request) -> httpx.Response:
        reports = json.loads(request.content)["reports"]
        if self.max_batch is not None and len(reports) > self.max_batch:
            from ldp_shared.errors import PayloadTooLargeError

            return problem(PayloadTooLargeError, "body over the limit")
        config = CollectionConfig.model_validate(self.configs[name])
        stored = self.stored[name]
        outcomes = []
        seen: set[str] = set()
        for report in reports:
            rid = report["id"]
            if rid in stored or rid in seen:
                outcomes.append({"id": rid, "status": "duplicate"})
                continue
            reason = self._reason(config, report)
            if reason is None:
                seen.add(rid)
                outcomes.append({"id": rid, "status": "accepted"})
            else:
                outcomes.append({"id": rid, "status": "rejected", "reason": reason})
        for report, outcome in zip(reports, outcomes, strict=True):
            if outcome["status"] == "accepted":
                stored[report["id"]] = decode_bits(report["bits"])
        counts = {s: sum(o["status"] == s for o in outcomes) for s in ("accepted", "duplicate")}
        counts["rejected"] = len(outcomes) - counts["accepted"] - counts["duplicate"]
        return httpx.Response(200, json={**counts, "outcomes": outcomes})

    def _reason(self, config: CollectionConfig, report: dict[str, Any]) -> str | None:
        if report["id"] in self.reject_ids:
            return "rejected on purpose"
        if report["config_hash"] != config.config_hash:
            return "config hash of another config"
        try:
            packed = decode_bits(report["bits"])
        except LDPError:
            return "bits not base64"
        if len(packed) != config.report_bytes:
            return "wrong length"
        decoded = decode_reports(config, np.frombuffer(packed, dtype=np.uint8))
        return decoded.reasons[0]

    def _frequencies(self, name: str, request: httpx.Request) -> httpx.Response:
        if self._role(request) is None:
            return problem(AuthenticationError, "missing or unknown bearer token")
        config = CollectionConfig.model_validate(self.configs[name])
        attribute = config.attribute(request.url.params["attribute"])
        d = attribute.d
        body = {
            "collection": name,
            "attribute": attribute.name,
            "mechanism": attribute.mechanism,
            "n_reports": len(self.stored[name]),
            "epsilon": attribute.epsilon,
            "record_epsilon": config.epsilon,
            "confidence": float(request.url.params["confidence"]),
            "postprocess": request.url.params["postprocess"],
            "values": attribute.domain,
            "estimate": [1 / d] * d,
            "counts": [0.0] * d,
            "stderr": [0.1] * d,
            "ci_low": [0.0] * d,
            "ci_high": [0.5] * d,
        }
        return httpx.Response(200, json=body)
