"""An unexpected error answers a problem document and keeps the connection usable."""

from __future__ import annotations

import httpx
import pytest

from ldp_aggregator.routes import analyses

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

SPEC = {"name": "survey", "epsilon": 1.0, "attributes": [{"name": "a", "domain": ["x", "y"]}]}


def test_a_500_is_a_problem_document_and_the_next_request_on_the_connection_works(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug")

    with httpx.Client(base_url=server, timeout=10) as client:
        created = client.post(
            "/v1/collections", json=SPEC, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert created.status_code == 201
        monkeypatch.setattr(analyses, "estimate_frequencies", broken)
        auth = {"Authorization": f"Bearer {ANALYST}"}
        failed = client.get("/v1/collections/survey/frequencies?attribute=a", headers=auth)
        assert failed.status_code == 500
        assert failed.headers["content-type"].startswith("application/problem+json")
        assert "logged as" in failed.json()["detail"] and "a bug" not in failed.text
        assert failed.headers.get("connection", "").lower() != "close"
        again = client.get("/healthz")  # same pooled connection: it must still be open
        assert again.status_code == 200


def test_a_confidence_just_below_one_is_no_server_error(server: str) -> None:
    with httpx.Client(base_url=server, timeout=10) as client:
        client.post("/v1/collections", json=SPEC, headers={"Authorization": f"Bearer {ADMIN}"})
        answer = client.get(
            "/v1/collections/survey/frequencies",
            params={"attribute": "a", "confidence": "0.9999999999999999"},
            headers={"Authorization": f"Bearer {ANALYST}"},
        )
        assert answer.status_code == 409, answer.text  # no reports yet, not a 500
