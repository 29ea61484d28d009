"""The pure local randomizer: records in, reports out, raw values nowhere."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ldp_client import privatize, privatize_columns, privatize_many
from ldp_client.privatize import reports_from_packed
from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InvalidRecordError, InvalidReportError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire.reports import REPORT_ID_PATTERN, Report, decode_bits

from .conftest import make_records


def _matrix(config: CollectionConfig, reports: list[Report]) -> np.ndarray:
    rows = [np.frombuffer(decode_bits(r.bits), dtype=np.uint8) for r in reports]
    return np.stack(rows).reshape(-1, config.report_bytes)


def test_one_report_per_record_with_fresh_ids_and_the_config_hash(config: CollectionConfig):
    reports = privatize_many(config, make_records(50), seeded_rng(1))
    assert len(reports) == 50
    assert len({r.id for r in reports}) == 50
    assert all(re.fullmatch(REPORT_ID_PATTERN, r.id) for r in reports)
    assert {r.config_hash for r in reports} == {config.config_hash}
    assert all(len(decode_bits(r.bits)) == config.report_bytes for r in reports)
    # every report decodes as valid on the server side (padding zero, indices in range)
    assert decode_reports(config, _matrix(config, reports)).valid.all()


def test_a_report_carries_only_id_hash_and_bits():
    secret = "ssn-123-45-6789"
    spec = CollectionSpec(
        name="secrets",
        epsilon=1.0,
        attributes=[AttributeSpec(name="code", domain=[secret, "other-value"], mechanism="grr")],
    )
    config = build_config(spec)
    report = privatize(config, {"code": secret}, seeded_rng(0))
    document = json.loads(report.model_dump_json())
    assert set(document) == {"id", "config_hash", "bits"}
    text = report.model_dump_json()
    assert secret not in text and "code" not in text
    # the bits are one index byte: a perturbed value index, not the value
    assert len(decode_bits(report.bits)) == 1


def test_seeded_runs_repeat_and_columns_match_records(config: CollectionConfig):
    records = make_records(200)
    a = privatize_many(config, records, seeded_rng(7))
    b = privatize_many(config, records, seeded_rng(7))
    assert [r.bits for r in a] == [r.bits for r in b]
    assert {r.id for r in a}.isdisjoint({r.id for r in b})  # ids are never reused
    columns = {name: [rec[name] for rec in records] for name in ("browser", "age", "basket")}
    c = privatize_columns(config, columns, seeded_rng(7))
    assert [r.bits for r in c] == [r.bits for r in a]


def test_columns_accept_numpy_arrays(config: CollectionConfig):
    n = 1000
    gen = np.random.default_rng(3)
    columns = {
        "browser": gen.choice(config.attribute("browser").domain, n),
        "age": gen.choice(config.attribute("age").domain, n),
        "basket": [{"milk"}] * n,
    }
    reports = privatize_columns(config, columns, seeded_rng(3))
    assert len(reports) == n
    assert decode_reports(config, _matrix(config, reports)).valid.all()


def test_the_report_is_perturbed_not_a_copy_of_the_value(config: CollectionConfig):
    # OUE keeps the true bit with p = 1/2: over many reports of "firefox" the other
    # bits are set at rate q > 0, so the reports differ from the plain one-hot vector.
    reports = privatize_many(config, [make_records(1)[0]] * 400, seeded_rng(5))
    assert len({r.bits for r in reports}) > 1


@pytest.mark.parametrize(
    "bad",
    [
        {"browser": "netscape", "age": "<30", "basket": set()},
        {"browser": "firefox", "age": 42, "basket": set()},
        {"browser": "firefox", "age": "<30", "basket": {"caviar"}},
        {"browser": "firefox", "age": "<30"},
        {"browser": "firefox", "age": "<30", "basket": set(), "email": "a@b.c"},
        {"browser": "firefox", "age": "<30", "basket": "milk"},
    ],
)
def test_invalid_records_raise_before_anything_is_produced(config: CollectionConfig, bad):
    records = [*make_records(5), bad]
    with pytest.raises(InvalidRecordError):
        privatize_many(config, records)
    with pytest.raises(InvalidRecordError):
        privatize(config, bad)


def test_the_error_names_the_attribute_and_value(config: CollectionConfig):
    with pytest.raises(InvalidRecordError, match=r"browser.*netscape"):
        privatize(config, {"browser": "netscape", "age": "<30", "basket": set()})


def test_misuse_of_the_many_and_one_forms(config: CollectionConfig):
    record = make_records(1)[0]
    with pytest.raises(InvalidRecordError, match="use privatize"):
        privatize_many(config, record)
    with pytest.raises(InvalidRecordError):
        privatize(config, [record])  # type: ignore[arg-type]
    with pytest.raises(InvalidRecordError):
        privatize_columns(config, [record])  # type: ignore[arg-type]


def test_no_records_no_reports(config: CollectionConfig):
    assert privatize_many(config, []) == []
    assert privatize_many(config, iter(make_records(3)), seeded_rng(0)) != []


def test_default_rng_is_secure_and_differs_between_calls(config: CollectionConfig):
    records = make_records(100)
    a = privatize_many(config, records)
    b = privatize_many(config, records)
    assert [r.bits for r in a] != [r.bits for r in b]


def test_packed_matrix_of_the_wrong_width_is_refused(config: CollectionConfig):
    with pytest.raises(InvalidReportError):
        reports_from_packed(config, np.zeros((3, config.report_bytes + 1), dtype=np.uint8))
