"""The per-record path and the cheap report builder: same bytes, same checks, fresh ids."""

from __future__ import annotations

import base64
import multiprocessing
import re

import numpy as np
import pytest

from ldp_client import privatize
from ldp_client import reports as reports_module
from ldp_client.one_record import record_path
from ldp_client.privatize import privatize_packed
from ldp_client.reports import build_reports, encode_rows, next_report_id, report_ids
from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InvalidRecordError
from ldp_shared.rand import seeded_rng, shared_secure_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire.reports import REPORT_ID_PATTERN, Report, ReportBatch, decode_bits


def _config(*mechanisms: str, d: int = 11) -> CollectionConfig:
    attributes = [
        AttributeSpec(name=f"a{i}", domain=[f"v{j}" for j in range(d)], mechanism=m)
        for i, m in enumerate(mechanisms)
    ]
    return build_config(CollectionSpec(name="c", attributes=attributes, epsilon=2.0))


def test_report_ids_are_fresh_128_bit_tokens() -> None:
    ids = report_ids(1000) + [next_report_id() for _ in range(300)]
    assert len(set(ids)) == len(ids)
    for token in ids[:50] + ids[-50:]:
        assert re.fullmatch(REPORT_ID_PATTERN, token) and len(token) == 22
        assert len(base64.urlsafe_b64decode(token + "==")) == 16
    assert report_ids(0) == []


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 128, 129])
def test_encode_rows_is_base64_of_each_row(width: int) -> None:
    rows = np.random.default_rng(width).integers(0, 256, size=(7, width), dtype=np.uint8)
    expected = [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]
    assert encode_rows(rows) == expected


def test_built_reports_equal_validated_ones() -> None:
    built = build_reports(["abcdefgh12"], "f" * 64, ["AAE="])
    made = Report(id="abcdefgh12", config_hash="f" * 64, bits="AAE=")
    assert built == [made]
    assert built[0].model_dump_json() == made.model_dump_json()
    assert ReportBatch(reports=built).reports[0] == made


@pytest.mark.parametrize("mechanisms", [("grr",), ("sue",), ("oue", "grr", "sue")])
def test_one_record_path_gives_valid_reproducible_reports(mechanisms: tuple[str, ...]) -> None:
    config = _config(*mechanisms)
    assert record_path(config) is not None
    record = {f"a{i}": "v3" for i in range(len(mechanisms))}
    first = [privatize_packed(config, record, seeded_rng(4)) for _ in range(2)]
    assert first[0] == first[1]
    gen = seeded_rng(5)
    packed = [privatize_packed(config, record, gen) for _ in range(200)]
    matrix = np.frombuffer(b"".join(packed), dtype=np.uint8).reshape(200, -1)
    assert decode_reports(config, matrix).valid.all()
    report = privatize(config, record)
    assert len(decode_bits(report.bits)) == config.report_bytes
    assert report.config_hash == config.config_hash


def test_one_record_path_leaves_bad_records_to_the_checks() -> None:
    config = _config("grr", "sue")
    with pytest.raises(InvalidRecordError, match="not in its domain"):
        privatize(config, {"a0": "v3", "a1": "nope"})
    with pytest.raises(InvalidRecordError, match="missing"):
        privatize(config, {"a0": "v3"})
    with pytest.raises(InvalidRecordError):
        privatize(config, {"a0": ["v3"], "a1": "v1"})


def test_other_mechanisms_take_the_vectorised_path() -> None:
    spec = CollectionSpec(
        name="c",
        attributes=[AttributeSpec(name="x", mechanism="duchi", lo=0.0, hi=1.0)],
        epsilon=1.0,
    )
    config = build_config(spec)
    assert record_path(config) is None
    assert len(decode_bits(privatize(config, {"x": 0.5}).bits)) == config.report_bytes


def _child(queue: multiprocessing.Queue[object]) -> None:
    queue.put((len(reports_module._pool), shared_secure_rng().integers(0, 2**62)))


def test_a_forked_child_draws_its_own_ids_and_noise() -> None:
    next_report_id()  # fill the pool
    parent_draw = int(shared_secure_rng().integers(0, 2**62))
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[object] = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    pool_size, child_draw = queue.get(timeout=30)  # type: ignore[misc]
    child.join(timeout=30)
    assert pool_size == 0
    assert child_draw != int(shared_secure_rng().integers(0, 2**62)) != parent_draw
