"""Reports kept as columns: the same reports as a list of ``Report``, the same upload body."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from ldp_client import LDPClient, privatize_columns, privatize_many
from ldp_client.batching import BatchPlan
from ldp_client.protocol import submit_reports_call
from ldp_client.reports import ReportColumns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import PayloadTooLargeError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire.reports import BatchResult, Report, ReportBatch, decode_bits


def _config(mechanism: str, d: int) -> CollectionConfig:
    attribute = AttributeSpec(name="v", domain=[f"x{j}" for j in range(d)], mechanism=mechanism)
    return build_config(CollectionSpec(name="c", attributes=[attribute], epsilon=2.0))


def _columns(width: int, n: int = 9, seed: int = 0) -> ReportColumns:
    packed = np.random.default_rng(seed).integers(0, 256, size=(n, width), dtype=np.uint8)
    return ReportColumns.of_packed("0123456789abcdef" * 4, packed)


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 128, 129])
def test_the_upload_body_is_the_validated_batch_byte_for_byte(width: int) -> None:
    reports = _columns(width)
    listed = list(reports)
    assert all(type(r) is Report for r in listed)
    body = reports.wire_json()
    assert body == ReportBatch(reports=listed).model_dump_json().encode("utf-8")
    assert ReportBatch.model_validate_json(body).reports == listed
    assert json.loads(body)["reports"][3]["bits"] == listed[3].bits


def test_it_behaves_as_the_list_of_its_reports() -> None:
    reports = _columns(3, n=5)
    listed = list(reports)
    assert len(reports) == 5 and reports == listed and listed == reports
    assert reports[0] == listed[0] and reports[-1] == listed[-1]
    assert isinstance(reports[1:4], ReportColumns) and reports[1:4] == listed[1:4]
    assert (
        reports[::2] == listed[::2]
        and reports[:0] == []
        and reports[:0].wire_json() == (b'{"reports":[]}')
    )
    assert reports.ids == [r.id for r in listed]
    assert reports != listed[:4] and reports != _columns(3, n=5, seed=1)
    with pytest.raises(IndexError):
        reports[5]
    with pytest.raises(TypeError):
        reports["0"]  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        hash(reports)


def test_it_concatenates_as_a_list_does() -> None:
    first, second = _columns(3, n=4, seed=1), _columns(3, n=2, seed=2)
    joined = first + second
    assert isinstance(joined, ReportColumns) and joined == list(first) + list(second)
    assert first + list(second) == list(first) + list(second)
    assert list(second) + first == list(second) + list(first)
    other = ReportColumns.of_packed("e" * 64, np.zeros((1, 3), np.uint8))
    assert not isinstance(first + other, ReportColumns) and len(first + other) == 5


def test_ids_are_fresh_and_bits_decode_to_the_rows() -> None:
    packed = np.random.default_rng(3).integers(0, 256, size=(2000, 7), dtype=np.uint8)
    reports = ReportColumns.of_packed("f" * 64, packed)
    assert len(set(reports.ids)) == 2000
    assert [decode_bits(r.bits) for r in reports[:20]] == [row.tobytes() for row in packed[:20]]
    with pytest.raises(ValueError, match="character matrix"):
        ReportColumns("f" * 64, np.zeros((3, 21), np.uint8), np.zeros((3, 4), np.uint8))


@pytest.mark.parametrize(("mechanism", "d"), [("grr", 16), ("oue", 1024), ("flh", 64)])
def test_privatize_returns_columns_that_upload_as_valid_reports(mechanism: str, d: int) -> None:
    config = _config(mechanism, d)
    values = [f"x{j % d}" for j in range(300)]
    for reports in (
        privatize_columns(config, {"v": values}, seeded_rng(1)),
        privatize_many(config, [{"v": v} for v in values], seeded_rng(1)),
    ):
        assert isinstance(reports, ReportColumns) and len(reports) == 300
        batch = ReportBatch.model_validate_json(reports.wire_json())
        assert {r.config_hash for r in batch.reports} == {config.config_hash}
        assert all(len(decode_bits(r.bits)) == config.report_bytes for r in batch.reports)


def test_submit_splits_columns_into_bodies_without_building_reports() -> None:
    reports = _columns(2, n=2500)
    plan = BatchPlan(reports, 1000)
    sizes = []
    while (batch := plan.next_batch()) is not None:
        assert isinstance(batch, ReportColumns)
        call = submit_reports_call("c", batch)
        assert call.body == batch.wire_json()
        sizes.append(len(json.loads(call.body)["reports"]))
    assert sizes == [1000, 1000, 500]


def test_a_halved_batch_stays_columns() -> None:
    plan = BatchPlan(_columns(2, n=10), 10)
    batch = plan.next_batch()
    assert batch is not None
    plan.too_large(batch, PayloadTooLargeError("too large"))
    halves = [plan.next_batch(), plan.next_batch()]
    assert all(isinstance(h, ReportColumns) and len(h) == 5 for h in halves)


def test_the_sdk_uploads_columns_and_checks_the_answer() -> None:
    config = _config("grr", 16)
    seen: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, content=config.model_dump_json())
        seen.append(request.content)
        ids = [r["id"] for r in json.loads(request.content)["reports"]]
        outcomes = [{"id": i, "status": "accepted", "reason": None} for i in ids]
        result = BatchResult.model_validate(
            {"accepted": len(ids), "duplicate": 0, "rejected": 0, "outcomes": outcomes}
        )
        return httpx.Response(200, content=result.model_dump_json())

    transport = httpx.MockTransport(answer)
    with LDPClient("http://aggregator.test", transport=transport) as client:
        reports = client.privatize_columns("c", {"v": ["x1"] * 1500})
        result = client.submit_reports("c", reports, batch_size=1000)
    assert result.accepted == 1500
    assert seen == [reports[:1000].wire_json(), reports[1000:].wire_json()]
