"""What the files of a training job tell a reader about when each device took its place.

The attacker reads the database as in ``docs/privacy-at-rest.md`` (a copied disk, or a
PostgreSQL superuser) and holds a log of the requests (time and address of each
``POST .../participations``). Were a report tied to the second its place was issued,
that log would name its device. So, read as the attacker reads them:

* PostgreSQL (``SELECT xmin, * ...``): no ``training_reports`` row shares its ``xmin``
  (its transaction) with a ``training_tokens`` row that holds a time, every time a token
  row holds is a multiple of the job's hold (``participation_seconds``), and once the
  round closes its tokens hold no time and share one ``xmin``;
* SQLite (the main file and the ``-wal`` file, byte by byte): no issuing second is in
  them, while the coarse end of the hold the open places need is (the control).

Before the fix the token row held ``issued_unix`` and was marked used in the report's
own transaction: both tests failed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, text
from tests.aggregator.conftest import (
    ADMIN,
    ADMIN_TOKEN,
    ANALYST,
    ANALYST_TOKEN,
    TestClient,
    spec_payload,
)
from tests.aggregator.forensics.sqlite_files import read_files
from tests.aggregator.test_postgres import pg_url  # noqa: F401 - the fixture
from tests.aggregator.training_helpers import answer, ask, jobs_path, records, spec
from tests.engines import POSTGRES_URL

from ldp_aggregator.app import create_app
from ldp_aggregator.deps import AppState
from ldp_aggregator.settings import Settings
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import Participation

HOLD = 60
CREATED = 1_799_000_000  # the job is created days before the devices come
ISSUED = 1_800_000_007  # the first place is issued at this second (not a multiple of HOLD)
PLACES, ANSWERS = 10, 6  # of the round's 20: the round stays open


class Clock:
    """``time.time`` for the app, one second further at each :meth:`tick`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = float(CREATED)
        monkeypatch.setattr(time, "time", lambda: self.now)

    def tick(self) -> None:
        self.now += 1


def settings_for(url: str) -> Settings:
    return Settings(database_url=url, admin_token=ADMIN_TOKEN, analyst_token=ANALYST_TOKEN)


def open_round(client: TestClient, clock: Clock) -> tuple[str, list[int], list[Participation]]:
    """A job whose open round has :data:`PLACES` places issued, one a second from
    :data:`ISSUED`, and the first :data:`ANSWERS` of them answered; the job's id, the
    seconds the places were issued at and the places not answered yet."""
    assert client.post("/v1/collections", json=spec_payload("train"), headers=ADMIN).is_success
    created = client.post(jobs_path(), json=spec(participation_seconds=HOLD), headers=ANALYST)
    job_id = str(created.json()["id"])
    clock.now = float(ISSUED)
    issued: list[int] = []
    held: list[Participation] = []
    for _ in range(PLACES):
        issued.append(int(clock.now))
        participation = ask(client, job_id)
        assert participation.expires_unix >= clock.now + HOLD  # held at least HOLD seconds
        held.append(participation)
        clock.tick()
    rng = seeded_rng(3)
    for participation, record in zip(held[:ANSWERS], records(ANSWERS, seed=4), strict=True):
        assert answer(client, participation, record, rng).status_code == 200
        clock.tick()
    return job_id, issued, held[ANSWERS:]


def plausible_times(row: dict[str, Any]) -> list[int]:
    """The values of a row an attacker would take for unix times (2001 to 2096)."""
    return [v for v in row.values() if isinstance(v, int) and 10**9 <= v < 4 * 10**9]


def rows_with_xmin(connection: Connection, table: str) -> list[dict[str, Any]]:
    result = connection.execute(text(f"SELECT xmin::text AS xmin_, * FROM {table}"))
    return [dict(row) for row in result.mappings()]


@pytest.fixture
def pg_app(pg_url: str) -> Iterator[TestClient]:  # noqa: F811 - the fixture
    with TestClient(create_app(settings_for(pg_url))) as client:
        yield client


def engine_of(client: TestClient) -> Engine:
    state = client.app.state.ldp  # type: ignore[attr-defined]
    assert isinstance(state, AppState)
    return state.engine


@pytest.mark.skipif(not POSTGRES_URL, reason="no PostgreSQL server answers")
def test_no_report_shares_its_transaction_with_an_issue_time_on_postgres(
    pg_app: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    job_id, issued, unanswered = open_round(pg_app, clock)
    with engine_of(pg_app).connect() as connection:
        reports = rows_with_xmin(connection, "training_reports")
        tokens = rows_with_xmin(connection, "training_tokens")
    assert len(reports) == ANSWERS and len(tokens) == PLACES
    report_xmins = {row["xmin_"] for row in reports}
    timed = [row for row in tokens if plausible_times(row)]
    linked = [row for row in timed if row["xmin_"] in report_xmins]
    assert linked == [], f"{len(linked)} reports share a transaction with a timed token"
    stored = {v for row in timed for v in plausible_times(row)}
    assert all(v % HOLD == 0 for v in stored), f"times finer than the hold: {stored}"
    assert not stored & set(issued)
    assert len(timed) == PLACES - ANSWERS  # the control: the open places hold their end

    # the round closes: its tokens keep no time and one xmin, and a token is still single-use
    rest = unanswered + [ask(pg_app, job_id) for _ in range(20 - PLACES)]
    for participation, record in zip(rest, records(len(rest), seed=5), strict=True):
        assert answer(pg_app, participation, record, seeded_rng(6)).status_code == 200
    with engine_of(pg_app).connect() as connection:
        closed = [row for row in rows_with_xmin(connection, "training_tokens") if row["round"] == 0]
        assert rows_with_xmin(connection, "training_reports") == []
    assert len(closed) == 20 and [row for row in closed if plausible_times(row)] == []
    assert len({row["xmin_"] for row in closed}) == 1
    again = answer(pg_app, rest[0], records(1)[0], seeded_rng(7))
    assert again.status_code == 409 and again.json()["type"].endswith("/already-participated")


def test_the_files_hold_no_issuing_second_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.db"
    clock = Clock(monkeypatch)
    with TestClient(create_app(settings_for(f"sqlite:///{path}"))) as client:
        _, issued, _ = open_round(client, clock)
        main, wal = read_files(path)  # the app still runs: as after kill -9
    files = main + wal

    def count(second: int) -> int:
        return sum(files.count(second.to_bytes(size, "big")) for size in (4, 8))

    found = {second: count(second) for second in issued if count(second)}
    assert found == {}, f"issuing seconds in the files: {found}"
    end = -(-(issued[0] + HOLD) // HOLD) * HOLD  # the hold's end, rounded up to HOLD
    assert count(end) >= PLACES - ANSWERS  # the control: the reader finds what is stored
