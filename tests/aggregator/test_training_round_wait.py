"""A request for a place at a round boundary waits for the round to close and is given a
place of the next one (no 429, no ``Retry-After`` second), without asking first when the
round is known to be full; the curve kept one row per
round (migration 0011, and back on downgrade). Runs on the test engine."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, text
from tests.aggregator.conftest import ADMIN, ADMIN_TOKEN, ANALYST, ANALYST_TOKEN, spec_payload
from tests.aggregator.training_helpers import answer, ask, jobs_path, records, spec, take_part
from tests.engines import database_url

from ldp_aggregator import training, training_place_wait
from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.migrate import alembic_config, head_revision
from ldp_aggregator.storage.training import training_curve
from ldp_aggregator.training_place_wait import RoundSignals
from ldp_shared.errors import RateLimitedError
from ldp_shared.rand import seeded_rng


def test_an_ask_at_a_full_round_waits_for_the_next_round(train: TestClient) -> None:
    response = train.post(jobs_path(), json=spec(participation_seconds=600), headers=ANALYST)
    job_id = response.json()["id"]
    held = [ask(train, job_id) for _ in range(20)]
    waiting: dict[str, Any] = {}

    def the_21st() -> None:
        waiting["response"] = train.post(f"{jobs_path()}/{job_id}/participations")

    asker = threading.Thread(target=the_21st)
    asker.start()
    rng = seeded_rng(6)
    for participation, record in zip(held, records(20, seed=7), strict=True):
        assert answer(train, participation, record, rng).status_code == 200
    asker.join(timeout=30)
    got = waiting["response"]
    assert got.status_code == 201, got.text
    assert got.json()["round"] == 1 and got.json()["job"] == job_id


def test_a_full_round_is_refused_once_the_wait_is_over(
    train: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(training_place_wait, "PLACE_WAIT_SECONDS", 0.3)
    response = train.post(jobs_path(), json=spec(participation_seconds=600), headers=ANALYST)
    job_id = response.json()["id"]
    for _ in range(20):
        ask(train, job_id)
    full = train.post(f"{jobs_path()}/{job_id}/participations")
    assert full.status_code == 429 and full.headers["Retry-After"] == "1"
    assert full.headers["content-type"].startswith("application/problem+json")


def test_a_waiter_is_woken_by_the_close_and_not_by_another_job() -> None:
    signals = RoundSignals()

    async def scenario() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        seen = signals.generation("a")
        other = asyncio.create_task(signals.wait("a", seen, 5.0))
        await asyncio.sleep(0.01)
        signals.notify("b")  # another job: "a" still waits
        await asyncio.sleep(0.05)
        still_waiting = not other.done()
        await loop.run_in_executor(None, signals.notify, "a")  # from a worker thread
        await asyncio.wait_for(other, 1.0)
        # a close between the look and the wait is not missed
        stale = signals.generation("a") - 1
        started = loop.time()
        await signals.wait("a", stale, 5.0)
        return still_waiting, loop.time() - started < 1.0

    assert asyncio.run(scenario()) == (True, True)


def test_a_request_at_a_round_known_full_waits_for_the_close_without_asking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    signals = RoundSignals()
    monkeypatch.setattr(training_place_wait, "round_signals", signals)
    monkeypatch.setattr(training_place_wait, "POLL_SECONDS", 5.0)  # no poll in the test
    asked: list[str] = []

    def asker(name: str) -> Callable[[], Awaitable[bytes]]:
        async def issue() -> bytes:
            asked.append(name)
            if signals.generation("j") == 0:  # round 0: every place held
                raise RateLimitedError("every place is held", retry_after=1)
            return name.encode()

        return issue

    async def scenario() -> tuple[list[str], list[bytes]]:
        first = asyncio.create_task(training_place_wait.wait_for_place(asker("a"), "j"))
        await asyncio.sleep(0.05)  # "a" was refused: the round is known to be full
        second = asyncio.create_task(training_place_wait.wait_for_place(asker("b"), "j"))
        await asyncio.sleep(0.05)
        before_close = list(asked)
        signals.notify("j")  # the round closes: both ask, and get places of the next
        return before_close, list(await asyncio.gather(first, second))

    before_close, places = asyncio.run(scenario())
    assert before_close == ["a"]  # "b" did not ask a round it knew to be full
    assert places == [b"a", b"b"] and sorted(asked) == ["a", "a", "b"]


# ---------------------------------------------------------------------- migration 0011


def _migrate(engine: Engine, revision: str, down: bool) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)


def test_the_curve_moves_to_its_table_and_back(client: TestClient, engine: Engine) -> None:
    train = client
    assert train.post("/v1/collections", json=spec_payload(name="train"), headers=ADMIN)
    job_id = train.post(jobs_path(), json=spec(), headers=ANALYST).json()["id"]
    rng = seeded_rng(8)
    for record in records(40, seed=9):
        take_part(train, job_id, record, rng)
    before = train.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json()["curve"]
    assert len(before) == 2
    _migrate(engine, "0010", down=True)
    with engine.connect() as connection:
        kept = connection.execute(text("SELECT curve_json FROM training_rounds")).scalar_one()
    assert [log["round"] for log in json.loads(kept)] == [0, 1]
    _migrate(engine, "head", down=False)
    with engine.connect() as connection:
        rows = connection.execute(select(training_curve.c.round)).scalars().all()
        emptied = connection.execute(text("SELECT curve_json FROM training_rounds")).scalar_one()
    assert rows == [0, 1] and emptied == "[]"
    assert train.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json()["curve"] == before
    assert head_revision() >= "0011" and training.TRAINING == "training"


def test_a_replica_that_cached_a_deleted_collection_finds_the_new_one(tmp_path: Path) -> None:
    """Device requests use the collection as this replica cached it; a job of a
    collection deleted and created again (through another replica) is still found."""
    settings = Settings(
        database_url=database_url(tmp_path / "ldp.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        assert one.post("/v1/collections", json=spec_payload(name="train"), headers=ADMIN)
        old = one.post(jobs_path(), json=spec(), headers=ANALYST).json()["id"]
        ask(two, old)  # the second replica caches the collection
        params = {"confirm": "train"}
        assert one.delete("/v1/collections/train", params=params, headers=ADMIN).is_success
        assert one.post("/v1/collections", json=spec_payload(name="train"), headers=ADMIN)
        new = one.post(jobs_path(), json=spec(), headers=ANALYST).json()["id"]
        assert two.get(f"{jobs_path()}/{old}/layout").status_code == 404
        participation = ask(two, new)
        rng = seeded_rng(10)
        assert answer(two, participation, records(1)[0], rng).status_code == 200
        assert two.post(f"{jobs_path()}/{old}/participations").status_code == 404
