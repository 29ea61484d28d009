"""The log's messages (``ingest_log.stream``) and how a fold worker cuts what it fetched
into transactions (``ingest_log.fold``), without a server."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from ldp_aggregator.ingest_log.fold import _parts, _within
from ldp_aggregator.ingest_log.stream import (
    CHUNK_BYTES,
    CHUNK_REPORTS,
    LogChunk,
    chunk_size,
    message_id,
)


def _chunk(ids: tuple[str, ...], size: int = 2) -> LogChunk:
    return LogChunk(
        7, "h" * 64, 0, date(2026, 11, 23), ids, bytes(k % 256 for k in range(size * len(ids)))
    )


def test_one_report_keeps_its_own_message_id() -> None:
    one = _chunk(("abcdefgh",))
    assert one.message_id == message_id(7, "abcdefgh") == "7.abcdefgh"
    assert json.loads(one.encode())["i"] == "abcdefgh"  # the one-report message's shape


def test_a_batch_message_id_is_its_ids_in_order_and_never_a_reports() -> None:
    ids = ("abcdefgh", "ijklmnop", "qrstuvwx")
    many = _chunk(ids)
    assert many.message_id == _chunk(ids).message_id  # the same batch again: same id
    assert many.message_id != _chunk(ids[::-1]).message_id
    assert many.message_id != _chunk(ids[:2]).message_id
    collection, separator, digest = many.message_id.partition(":")
    assert (collection, separator, len(digest)) == ("7", ":", 32)  # ids never hold ':'


def test_messages_round_trip_and_refuse_what_no_aggregator_published() -> None:
    for ids in (("abcdefgh",), ("abcdefgh", "ijklmnop")):
        chunk = _chunk(ids)
        assert LogChunk.decode(chunk.encode()) == chunk
    good = json.loads(_chunk(("abcdefgh", "ijklmnop")).encode())
    long_id = "a" * 65  # longer than a report id may be: the database would refuse it
    bad_ones = [
        {**good, "i": []},
        {**good, "i": [1, 2]},
        {**good, "i": {"abcdefgh": 1}},
        {**good, "i": [long_id]},
        {**good, "i": ["abc:defgh"]},
        {**good, "i": ["abcdefgh"] * (CHUNK_REPORTS + 1)},
        {**good, "b": "!!"},
        {**good, "c": 2**31},  # beyond the database's INTEGER: it would refuse the batch
        {**good, "p": 2**63},
        {"c": 1},
    ]
    payloads = [json.dumps(bad).encode() for bad in bad_ones]
    payloads += [
        json.dumps(good).replace('"c": 7', '"c": 1e400').encode(),  # OverflowError
        b"[" * 100_000,  # RecursionError
        b"\xff",
    ]
    for payload in payloads:
        with pytest.raises(ValueError, match="not a report message"):
            LogChunk.decode(payload)


@pytest.mark.parametrize("report_bytes", [1, 2, 128, 4096, 200_000])
def test_a_chunk_stays_under_its_payload_bound(report_bytes: int) -> None:
    step = chunk_size(report_bytes)
    assert 1 <= step <= CHUNK_REPORTS
    ids = tuple(f"{k:064d}" for k in range(step))  # the longest ids
    chunk = LogChunk(2**31 - 1, "f" * 64, 2**40, date(2026, 1, 1), ids, bytes(report_bytes * step))
    if step > 1:  # one report larger than the bound is still sent, alone
        assert len(chunk.encode()) <= CHUNK_BYTES
    assert (
        step == CHUNK_REPORTS
        or step == 1
        or len(
            LogChunk(
                1, "f" * 64, 0, date(2026, 1, 1), ids * 2, bytes(report_bytes * step * 2)
            ).encode()
        )
        > CHUNK_BYTES
    )  # not needlessly small


def _sizes(parts: list[list[tuple[Any, LogChunk]]]) -> list[list[int]]:
    return [[len(chunk.report_ids) for _, chunk in part] for part in parts]


def test_a_fetch_is_cut_into_transactions_of_at_most_the_batch() -> None:
    fetched = [
        (k, _chunk(tuple(f"id{k:06d}{j:03d}" for j in range(n))))
        for k, n in enumerate([1, 1, 400, 600, 1, 1000, 3])
    ]
    assert _sizes(list(_parts(fetched, 1000))) == [[1, 1, 400], [600, 1], [1000], [3]]
    assert _sizes(list(_parts(fetched, 10_000))) == [[1, 1, 400, 600, 1, 1000, 3]]
    assert _sizes(list(_parts(fetched[5:6], 10))) == [[1000]]  # larger than a batch: alone
    assert list(_parts([], 10)) == []


def test_a_worker_keeps_at_most_twice_its_batch_of_a_fetch() -> None:
    """One-report messages followed by batches' in one fetch: what is beyond the limit
    is handed back, never less than one message."""
    sizes = [1] * 5 + [1000] * 4
    fetched = [
        (k, _chunk(tuple(f"id{k:06d}{j:03d}" for j in range(n)))) for k, n in enumerate(sizes)
    ]
    kept, surplus = _within(fetched, 2000)
    assert [len(c.report_ids) for _, c in kept] == [1] * 5 + [1000]
    assert [k for k, _ in surplus] == [6, 7, 8]
    kept, surplus = _within(fetched[5:], 10)  # one message larger than the limit: kept
    assert len(kept) == 1 and len(surplus) == 3
    assert _within(fetched[:5], 10) == (fetched[:5], [])
