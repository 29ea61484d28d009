"""Ingestion as a plain function: verdicts, duplicates, atomic statistics, concurrency."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
from pydantic_core import to_json
from sqlalchemy import Engine, select

from ldp_aggregator import writer
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import (
    REASON_BAD_ID,
    REASON_NOT_BASE64,
    REASON_OTHER_CONFIG,
    ingest_batch,
    ingest_batch_async,
    judge_batch,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.tables import reports
from ldp_shared.codec import decode_reports
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import BatchResult, ReportBatch, encode_bits

from .conftest import Snapshot, packed_reports, report_dicts, snapshot, spec_payload


@pytest.fixture
def engine(store: Engine) -> Engine:
    return store


@pytest.fixture
def survey(store_survey: StoredCollection) -> StoredCollection:
    return store_survey


def batch_of(items: list[dict[str, str]]) -> ReportBatch:
    return ReportBatch.model_validate({"reports": items})


def good(survey: StoredCollection, n: int, seed: int = 0) -> list[dict[str, str]]:
    return report_dicts(survey.config, packed_reports(survey.config, n, seed))


def expected_sums(survey: StoredCollection, items: list[dict[str, str]]) -> tuple[int, ...]:
    rows = np.frombuffer(b"".join(base64.b64decode(r["bits"]) for r in items), dtype=np.uint8)
    return tuple(int(v) for v in decode_reports(survey.config, rows).sums)


def test_every_kind_of_bad_report_gets_its_reason(survey: StoredCollection) -> None:
    config = survey.config
    assert config.report_bytes == 3  # color: 1 byte of bits, age: 1 index byte, basket: 1 byte
    valid = good(survey, 1)[0]
    cases: list[tuple[dict[str, str], str]] = [
        ({**valid, "id": "short"}, REASON_BAD_ID),
        ({**valid, "id": "has space in it"}, REASON_BAD_ID),
        ({**valid, "id": "abcdefgh\n"}, REASON_BAD_ID),
        ({**valid, "config_hash": "0" * 64}, REASON_OTHER_CONFIG),
        ({**valid, "bits": "not base64!"}, REASON_NOT_BASE64),
        ({**valid, "bits": "AAA"}, REASON_NOT_BASE64),  # missing padding
        ({**valid, "bits": encode_bits(b"\x00\x00")}, "wrong length: 2 bytes, expected 3"),
        ({**valid, "bits": encode_bits(b"\x00" * 4)}, "wrong length: 4 bytes, expected 3"),
        ({**valid, "bits": encode_bits(b"\x01\x00\x00")}, "'color': padding bits"),
        ({**valid, "bits": encode_bits(b"\x00\x03\x00")}, "'age': value index outside"),
        ({**valid, "bits": encode_bits(b"\x00\x00\x07")}, "'basket': padding bits"),
    ]
    judged = judge_batch(config, batch_of([case for case, _ in cases] + [valid]))
    for (_, expected), reason in zip(cases, judged.reasons, strict=False):
        assert reason is not None and expected in reason
    assert judged.reasons[-1] is None
    assert judged.candidates == [len(cases)]


def test_a_good_batch_is_stored_with_its_statistics(
    engine: Engine, survey: StoredCollection
) -> None:
    items = good(survey, 300)
    result = ingest_batch(
        engine, survey, batch_of(items), at=datetime(2024, 5, 6, 15, 30, tzinfo=UTC)
    )
    assert (result.accepted, result.duplicate, result.rejected) == (300, 0, 0)
    assert [o.id for o in result.outcomes] == [r["id"] for r in items]
    assert {o.status for o in result.outcomes} == {"accepted"}
    assert snapshot(engine, "survey") == Snapshot(300, 300, expected_sums(survey, items))
    with engine.connect() as connection:
        stamps = set(connection.execute(select(reports.c.received_day, reports.c.period_start)))
    day_start = int(datetime(2024, 5, 6, tzinfo=UTC).timestamp())
    assert stamps == {(date(2024, 5, 6), day_start)}  # the day, and nothing finer


def test_a_retried_batch_counts_once(engine: Engine, survey: StoredCollection) -> None:
    items = good(survey, 50)
    ingest_batch(engine, survey, batch_of(items))
    before = snapshot(engine, "survey")
    again = ingest_batch(engine, survey, batch_of(items))
    assert (again.accepted, again.duplicate, again.rejected) == (0, 50, 0)
    assert snapshot(engine, "survey") == before


def test_a_partly_retried_batch_adds_only_the_new_reports(
    engine: Engine, survey: StoredCollection
) -> None:
    first = good(survey, 40, seed=1)
    second = good(survey, 40, seed=2)
    ingest_batch(engine, survey, batch_of(first))
    result = ingest_batch(engine, survey, batch_of(first[20:] + second))
    assert (result.accepted, result.duplicate) == (40, 20)
    assert snapshot(engine, "survey") == Snapshot(80, 80, expected_sums(survey, first + second))


def test_an_id_repeated_in_one_batch_counts_once(engine: Engine, survey: StoredCollection) -> None:
    items = good(survey, 3)
    repeat = {**good(survey, 1, seed=9)[0], "id": items[0]["id"]}
    result = ingest_batch(engine, survey, batch_of([*items, repeat]))
    assert [o.status for o in result.outcomes] == ["accepted"] * 3 + ["duplicate"]
    assert snapshot(engine, "survey") == Snapshot(3, 3, expected_sums(survey, items))


def test_a_rejected_report_does_not_take_its_id(engine: Engine, survey: StoredCollection) -> None:
    valid = good(survey, 1)[0]
    broken = {**valid, "bits": "###"}
    result = ingest_batch(engine, survey, batch_of([broken, valid]))
    assert [o.status for o in result.outcomes] == ["rejected", "accepted"]


def test_the_route_answers_the_json_of_the_batch_result(
    engine: Engine, survey: StoredCollection
) -> None:
    """The upload route serialises the outcomes without a model: its bytes must be those
    of the :class:`BatchResult` (every status and a reason with characters to escape)."""
    stored = good(survey, 2, seed=1)
    ingest_batch(engine, survey, batch_of(stored[:1]))
    odd = {**stored[1], "id": 'bad id "\\ é', "bits": "AAB="}
    items = [*stored, {**stored[1], "id": "x" * 8}, odd, {**good(survey, 1, seed=2)[0]}]
    shared = writer.ReportWriter(engine)
    answer = asyncio.run(ingest_batch_async(shared, survey, batch_of(items)))
    shared.close()
    model = BatchResult.model_validate_json(answer.to_json())
    assert json.loads(answer.to_json()) == json.loads(model.model_dump_json())
    assert model == answer.to_model()
    assert [o.status for o in model.outcomes] == [
        "duplicate",
        "accepted",
        "accepted",
        "rejected",
        "accepted",
    ]
    assert (model.accepted, model.duplicate, model.rejected) == (3, 1, 1)


def test_one_bad_report_does_not_stop_the_others(engine: Engine, survey: StoredCollection) -> None:
    items = good(survey, 10)
    items[4] = {**items[4], "bits": encode_bits(b"\xff\xff\xff")}
    result = ingest_batch(engine, survey, batch_of(items))
    assert result.rejected == 1 and result.outcomes[4].status == "rejected"
    assert result.outcomes[4].reason is not None
    kept = items[:4] + items[5:]
    assert snapshot(engine, "survey") == Snapshot(9, 9, expected_sums(survey, kept))


def test_an_all_bad_batch_writes_nothing(engine: Engine, survey: StoredCollection) -> None:
    before = snapshot(engine, "survey")
    items = [{**r, "config_hash": "f" * 64} for r in good(survey, 5)]
    result = ingest_batch(engine, survey, batch_of(items))
    assert result.rejected == 5
    assert snapshot(engine, "survey") == before


def test_report_ids_are_per_collection(engine: Engine, survey: StoredCollection) -> None:
    other = create_collection(engine, CollectionSpec.model_validate(spec_payload(name="other")))
    items = good(survey, 5)
    ingest_batch(engine, survey, batch_of(items))
    moved = [{**r, "config_hash": other.config.config_hash} for r in items]
    assert ingest_batch(engine, other, batch_of(moved)).accepted == 5


def test_concurrent_ingests_lose_no_update(engine: Engine, survey: StoredCollection) -> None:
    batches = [good(survey, 100, seed=s) for s in range(16)]
    errors: list[BaseException] = []
    shared = writer.ReportWriter(engine)  # as the app's request threads share it

    def work(items: list[dict[str, str]]) -> None:
        try:
            for _ in range(2):  # the second time is a retry: all duplicates
                ingest_batch(engine, survey, batch_of(items), writer=shared)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(items,)) for items in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    everything = [r for items in batches for r in items]
    assert snapshot(engine, "survey") == Snapshot(1600, 1600, expected_sums(survey, everything))


def test_a_replayed_id_counts_once_without_a_lookup_first(
    engine: Engine, survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New ids are inserted without looking them up. A stored one among them: PostgreSQL's
    insert says which ids it stored; SQLite's count falls short, and the transaction is
    rolled back and written again with the ids looked up first."""
    stored = good(survey, 1, seed=3)
    ingest_batch(engine, survey, batch_of(stored))
    real = writer.existing_ids
    calls: list[int] = []

    def counted(*args: Any) -> set[str]:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(writer, "existing_ids", counted)
    fresh = good(survey, 5, seed=4)
    result = ingest_batch(engine, survey, batch_of([*stored, *fresh]))
    assert [o.status for o in result.outcomes] == ["duplicate"] + ["accepted"] * 5
    assert snapshot(engine, "survey") == Snapshot(6, 6, expected_sums(survey, stored + fresh))
    assert len(calls) == (1 if engine.dialect.name == "sqlite" else 0)
    assert ingest_batch(engine, survey, batch_of(good(survey, 3, seed=5))).accepted == 3
    assert len(calls) == (1 if engine.dialect.name == "sqlite" else 0)  # new ids: no lookup


def test_many_ids_are_looked_up_in_chunks(engine: Engine, survey: StoredCollection) -> None:
    items = good(survey, 2500)
    assert ingest_batch(engine, survey, batch_of(items)).accepted == 2500
    again = ingest_batch(engine, survey, batch_of(items[::-1]))
    assert again.duplicate == 2500


def test_report_id_pattern_edges(engine: Engine, survey: StoredCollection) -> None:
    valid = good(survey, 3)
    ids = ["a" * 8, "Z" * 64, "-_aZ09-_"]
    items = [{**r, "id": i} for r, i in zip(valid, ids, strict=True)]
    items.append({**good(survey, 1, seed=7)[0], "id": "a" * 65})
    items.append({**good(survey, 1, seed=8)[0], "id": "a" * 7})
    result = ingest_batch(engine, survey, batch_of(items))
    assert [o.status for o in result.outcomes] == ["accepted"] * 3 + ["rejected"] * 2


def test_an_sqlite_older_than_3_35_claims_its_shard_without_returning(
    engine: Engine, survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``UPDATE ... RETURNING`` came with SQLite 3.35; an older library locks, then reads."""
    monkeypatch.setattr(engine.dialect, "update_returning", False)
    items = good(survey, 40, seed=8)
    assert ingest_batch(engine, survey, batch_of(items)).accepted == 40
    assert snapshot(engine, "survey") == Snapshot(40, 40, expected_sums(survey, items))


@pytest.mark.parametrize("repeat", [False, True])
def test_a_batch_of_one_status_answers_the_bytes_pydantic_writes(
    engine: Engine, survey: StoredCollection, repeat: bool
) -> None:
    """All accepted, then (the same batch again) all duplicate: the answer written by one
    join over the ids is byte for byte pydantic's serialisation of the outcomes."""
    items = good(survey, 5, seed=3)
    shared = writer.ReportWriter(engine)
    answer = asyncio.run(ingest_batch_async(shared, survey, batch_of(items)))
    if repeat:
        answer = asyncio.run(ingest_batch_async(shared, survey, batch_of(items)))
    shared.close()
    status = "duplicate" if repeat else "accepted"
    assert answer.statuses == [status] * 5
    assert answer.to_json() == to_json(answer._document())
    assert answer.to_json() == answer.to_model().model_dump_json().encode()


def test_a_large_batch_is_judged_whole_as_report_by_report(
    survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From COLUMN_CHECKS_FROM reports a valid batch is checked column by column: the same
    verdict, positions and bits as the per-report checks (forced by raising the bound)."""
    from ldp_aggregator import ingest

    n = ingest.COLUMN_CHECKS_FROM + 7
    batch = batch_of(good(survey, n, seed=4))
    whole = ingest.judge_batch(survey.config, batch)
    monkeypatch.setattr(ingest, "COLUMN_CHECKS_FROM", 10**9)
    one_by_one = ingest.judge_batch(survey.config, batch)
    assert whole.reasons == one_by_one.reasons == [None] * len(batch.reports)
    assert whole.candidates == one_by_one.candidates
    assert np.array_equal(whole.matrix, one_by_one.matrix)
    assert whole.delta.n_reports == one_by_one.delta.n_reports == len(batch.reports)
    assert np.array_equal(whole.delta.sums, one_by_one.delta.sums)
    # one report with a padding bit set: the whole batch goes report by report, for its reason
    monkeypatch.undo()
    items = good(survey, n, seed=4)
    items[5] = {**items[5], "bits": "AAB="}
    judged = ingest.judge_batch(survey.config, batch_of(items))
    assert judged.reasons[5] == ingest.REASON_NOT_BASE64
    assert judged.reasons.count(None) == len(items) - 1
