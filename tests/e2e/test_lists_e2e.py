"""A lost job id is found again, and a result is taken away, through the SDK on a real
aggregator over HTTP: lists a page at a time, their iterators, and ``to_frame()``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from tests.aggregator.training_helpers import spec as training_spec

from ldp_client import AsyncLDPClient, LDPClient
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

ITEMS = ["bread", "milk", "eggs"]


def spec(name: str) -> dict[str, object]:
    return {
        "name": name,
        "epsilon": 2.0,
        "attributes": [
            {"name": "answer", "domain": ["yes", "no"], "mechanism": "grr"},
            {"name": "basket", "domain": ITEMS, "mechanism": "mask", "keep_probability": 0.9},
        ],
        "release": {"min_reports": 10},
    }


RECORDS = [{"answer": "yes", "basket": ["milk"]}] * 30 + [{"answer": "no", "basket": []}] * 10


def test_lost_job_ids_are_found_and_results_taken_away(server: str) -> None:
    with (
        LDPClient(server, token=ADMIN) as admin,
        LDPClient(server, token=ANALYST) as analyst,
        LDPClient(server, rng=seeded_rng(5)) as device,
    ):
        for name in ("poll-c", "poll-a", "poll-b"):
            admin.create_collection(spec(name))
        page = analyst.list_collections(limit=2)
        assert page == ["poll-a", "poll-b"] and page.next_cursor is not None
        rest = analyst.list_collections(limit=2, cursor=page.next_cursor)
        assert rest == ["poll-c"] and rest.next_cursor is None
        assert list(analyst.iter_collections(page_size=1)) == ["poll-a", "poll-b", "poll-c"]

        assert device.submit("poll-a", RECORDS).accepted == 40
        mined = {analyst.start_itemsets("poll-a", min_support=s).id for s in (0.2, 0.3, 0.4)}
        trained = analyst.create_training_job("poll-a", training_spec()).id
        today = datetime.now(UTC).date()
        jobs = analyst.list_itemset_jobs("poll-a", limit=2)
        assert len(jobs) == 2 and jobs.next_cursor is not None
        found = jobs + analyst.list_itemset_jobs("poll-a", cursor=jobs.next_cursor)
        assert {job.id for job in found} == mined and {job.created_day for job in found} == {today}
        training = analyst.list_training_jobs("poll-a")
        assert [(job.id, job.status) for job in training] == [(trained, "running")]
        assert analyst.list_training_jobs("poll-b") == []

        frame = analyst.frequencies("poll-a", "answer").to_frame()
        assert list(frame["value"]) == ["yes", "no"] and frame.attrs["n_reports"] == 40
        assert (frame["ci_low"] <= frame["estimate"]).all()

    async def listed() -> list[str]:
        async with AsyncLDPClient(server, token=ANALYST) as client:
            return [name async for name in client.iter_collections(page_size=2)]

    assert asyncio.run(listed()) == ["poll-a", "poll-b", "poll-c"]
