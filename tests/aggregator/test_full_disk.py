"""A database with no room left: uploads answer a 503 ``storage-full`` problem, nothing
of them is written, and the same uploads succeed once there is room again.

SQLite refuses a write that needs a page beyond ``PRAGMA max_page_count`` with the code
it returns on a full disk (``SQLITE_FULL``), so capping the file at its current size is
a full disk as far as the aggregator can tell, without mounting a file system.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event, text

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.collection import CollectionConfig

from .conftest import (
    ADMIN,
    ADMIN_TOKEN,
    ANALYST_TOKEN,
    assert_stored_and_recounted,
    packed_reports,
    report_dicts,
    snapshot,
    spec_payload,
    state_of,
)
from .test_api_collections import slug


class FullDisk:
    """Caps every connection of ``engine`` at the file's size when entered; lifts it on exit."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        with engine.connect() as connection:
            self.pages = int(connection.execute(text("PRAGMA page_count")).scalar_one())

    def _cap(self, dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count={self.pages}")

    def __enter__(self) -> FullDisk:
        event.listen(self.engine, "connect", self._cap)
        self.engine.dispose()  # pooled connections reconnect with the cap
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self.engine, "connect", self._cap)
        self.engine.dispose()


@pytest.fixture
def sqlite_client(tmp_path: Any) -> Any:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'full.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        reshuffle_seconds=0,
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def test_a_full_database_refuses_uploads_whole_and_recovers(sqlite_client: TestClient) -> None:
    client = sqlite_client
    created = client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
    config = CollectionConfig.model_validate(created.json())
    first = report_dicts(config, packed_reports(config, 200, seed=1))
    assert client.post("/v1/collections/survey/reports", json={"reports": first}).status_code == 200
    engine = state_of(client).engine
    before = snapshot(engine, "survey")

    big = report_dicts(config, packed_reports(config, 2_000, seed=2))
    singles = [[item] for item in report_dicts(config, packed_reports(config, 250, seed=3))]
    refused: list[list[dict[str, str]]] = []
    stored_while_full: set[str] = set()
    with FullDisk(engine):
        answer = client.post("/v1/collections/survey/reports", json={"reports": big})
        assert_storage_full(answer)
        assert snapshot(engine, "survey") == before, "a refused upload left something"
        refused.append(big)
        # single reports fill the pages' free room, then are refused too, each whole
        for items in singles:
            answer = client.post("/v1/collections/survey/reports", json={"reports": items})
            if answer.status_code == 200:
                assert answer.json()["accepted"] == 1
                stored_while_full.add(items[0]["id"])
            else:
                assert_storage_full(answer)
                refused.append(items)
        assert len(refused) > 50 and client.get("/readyz").status_code == 200
        sent = {item["id"] for item in first} | stored_while_full
        assert assert_stored_and_recounted(engine, "survey", sent) == sent

    for items in refused:  # the same requests, once there is room again
        answer = client.post("/v1/collections/survey/reports", json={"reports": items})
        assert answer.status_code == 200 and answer.json()["accepted"] == len(items)
        sent |= {item["id"] for item in items}
    assert assert_stored_and_recounted(engine, "survey", sent) == sent


def assert_storage_full(answer: Any) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert slug(answer) == "storage-full" and "nothing" in answer.json()["detail"]
    assert answer.headers["retry-after"] == "60"
