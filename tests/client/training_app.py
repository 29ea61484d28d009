"""The real aggregator app with a collection ``train`` to host training jobs, for SDK
tests that need the server's own answers (import the ``app`` fixture from here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.aggregator.conftest import ADMIN, ADMIN_TOKEN, ANALYST_TOKEN, spec_payload
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings


@pytest.fixture
def app(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        database_url=database_url(tmp_path / "ldp.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.post("/v1/collections", json=spec_payload(name="train"), headers=ADMIN)
        assert response.status_code == 201, response.text
        yield client
