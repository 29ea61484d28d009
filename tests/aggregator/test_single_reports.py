"""Single-report uploads (issue 23): decoded by the writer, one call per transaction.

A device sends one report per request. :func:`~ldp_aggregator.ingest.ingest_batch_async`
checks its id, config hash and bits there, and leaves decoding to the writer, which
decodes the single reports of a group together
(:func:`~ldp_aggregator.writer.decode_singles`). The outcomes must be those of
:func:`~ldp_aggregator.ingest.judge_batch` then storing: a report that does not decode
is rejected with the same reason and not stored, a repeat counts once, and a closed
collection still answers 409.
"""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, delete

from ldp_aggregator import writer as writer_module
from ldp_aggregator.ingest import ingest_batch_async, judge_batch
from ldp_aggregator.metrics import Metrics
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import set_closed
from ldp_aggregator.storage.tables import collection_stats
from ldp_aggregator.writer import ReportWriter
from ldp_shared.errors import CollectionClosedError
from ldp_shared.wire.reports import ReportBatch, encode_bits

from .conftest import Snapshot, snapshot
from .test_ingest import expected_sums, good
from .test_writer import hold_first_transaction, uploads_behind_a_held_transaction


def one(report: dict[str, str]) -> ReportBatch:
    return ReportBatch.model_validate({"reports": [report]})


def test_single_reports_of_one_transaction_are_decoded_together(
    store: Engine, store_survey: StoredCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    valid = good(store_survey, 6, seed=23)
    bad = [
        {**valid[0], "id": f"{'b' * 31}{k}", "bits": encode_bits(bits)}
        for k, bits in enumerate([b"\x01\x00\x00", b"\x00\x03\x00", b"\x00\x00\x07"])
    ]
    singles = [*valid[1:], *bad, valid[1]]  # the last one repeats an id of the group
    decodes: list[int] = []
    real_decode = writer_module.decode_reports

    def counted(config: Any, matrix: Any) -> Any:
        decodes.append(len(matrix))
        return real_decode(config, matrix)

    monkeypatch.setattr(writer_module, "decode_reports", counted)
    writer = ReportWriter(store)
    gate = hold_first_transaction(monkeypatch)
    batches = [one(report) for report in [valid[0], *singles]]
    answers = uploads_behind_a_held_transaction(writer, store_survey, gate, batches)
    writer.close()
    assert writer.transactions == 2
    assert decodes == [len(singles)]  # one call for the group (the first was judged eagerly)
    expected = judge_batch(store_survey.config, ReportBatch.model_validate({"reports": bad}))
    statuses = [answer.outcomes[0]["status"] for answer in answers]
    assert statuses[: len(valid) - 1] == ["accepted"] * (len(valid) - 1)
    assert statuses[len(valid) - 1 : -1] == ["rejected"] * len(bad)
    assert statuses[-1] == "duplicate"
    reasons = [answer.outcomes[0]["reason"] for answer in answers[len(valid) - 1 : -1]]
    assert reasons == expected.reasons and all(reasons)
    n = len(valid)
    assert snapshot(store, "survey") == Snapshot(n, n, expected_sums(store_survey, valid))


def test_a_single_report_that_does_not_decode_to_a_closed_collection_gets_409(
    store: Engine, store_survey: StoredCollection
) -> None:
    set_closed(store, store_survey, True)
    broken = {**good(store_survey, 1)[0], "bits": encode_bits(b"\x01\x00\x00")}
    writer = ReportWriter(store)
    try:
        with pytest.raises(CollectionClosedError):
            asyncio.run(ingest_batch_async(writer, store_survey, one(broken)))
    finally:
        writer.close()
    assert snapshot(store, "survey").rows == 0


def test_a_single_report_is_stored_after_its_period_rows_were_deleted(
    store: Engine, store_survey: StoredCollection
) -> None:
    """The writer remembers which periods have statistics rows (PostgreSQL skips a query
    for them); rows deleted since, as retention does, are created again by the claim."""
    items = good(store_survey, 2, seed=5)
    writer = ReportWriter(store)
    try:
        asyncio.run(ingest_batch_async(writer, store_survey, one(items[0])))
        with store.begin() as connection:
            connection.execute(delete(collection_stats))
        answer = asyncio.run(ingest_batch_async(writer, store_survey, one(items[1])))
    finally:
        writer.close()
    assert answer.accepted == 1
    stats = snapshot(store, "survey")
    assert (stats.n_reports, stats.rows) == (1, 2)  # the deleted statistics stay deleted
    assert stats.sums == expected_sums(store_survey, items[1:])


def test_undecoded_pendings_hold_one_report(store_survey: StoredCollection) -> None:
    pending = writer_module.Pending(
        collection=store_survey,
        ids=["a" * 32, "b" * 32],
        matrix=np.zeros((2, store_survey.config.report_bytes), dtype=np.uint8),
        delta=None,
        day=date(2024, 1, 1),
        period_start=0,
    )
    with pytest.raises(ValueError, match="single report"):
        writer_module.decode_singles([pending])


def test_the_metrics_series_are_looked_up_once_and_count_alike() -> None:
    metrics = Metrics()
    for _ in range(3):
        metrics.count_reports("a", 1, 0, 0)
    metrics.count_reports("b", 0, 2, 1)
    metrics.observe_request("BREW", "/x", 200, 0.01)
    metrics.observe_request("BREW", "/x", 200, 0.01)
    assert metrics.reports("accepted", "a") == 3
    assert (metrics.reports("duplicate"), metrics.reports("rejected", "b")) == (2, 1)
    text, _ = metrics.exposition(None)
    assert b'ldpcollect_http_requests_total{method="other",route="/x",status="200"} 2.0' in text
    assert b'ldpcollect_reports_total{collection="b",status="accepted"} 0.0' in text
