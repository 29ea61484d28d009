"""Label collections: records and reports.

* The SDK refuses a record without a label or with a label outside its classes.
* Features are encoded jointly with the class.
* Decoding: selector and padding checks of ``sample`` reports, and the per-attribute
  counts (MASK attributes are counted in every report).
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.codec import Privatizer, decode_reports, encode_columns, records_to_columns
from ldp_shared.collection import build_config
from ldp_shared.errors import InvalidRecordError
from ldp_shared.rand import seeded_rng

from ._car import CAR, CLASSES, car_spec, domain, sample_spec

# ------------------------------------------------------------------ client-side records


def test_records_without_a_label_are_refused() -> None:
    config = build_config(car_spec())
    record = {k: v for k, v in CAR.records[0].items() if k != "class"}
    with pytest.raises(InvalidRecordError, match="has no label 'class'"):
        Privatizer(config).privatize_many([CAR.records[1], record])


def test_labels_outside_the_classes_are_refused() -> None:
    config = build_config(car_spec())
    record = dict(CAR.records[0], **{"class": "excellent"})
    with pytest.raises(InvalidRecordError, match="'excellent' is not one of its classes"):
        Privatizer(config).privatize_many([CAR.records[1], record])


def test_features_are_encoded_jointly_with_the_class() -> None:
    config = build_config(car_spec())
    records = CAR.records[:50]
    encoded = encode_columns(config, records_to_columns(config, records))
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        domain = CAR.domains[attribute.name]
        expected = [
            domain.index(r[attribute.name]) * 4 + CLASSES.index(r["class"]) for r in records
        ]
        assert cells.tolist() == expected


# ------------------------------------------------------------------ decoding


def test_sample_reports_decode_and_count_per_attribute() -> None:
    config = build_config(car_spec("sample"))
    reports = Privatizer(config).privatize_many(CAR.records, seeded_rng(5))
    decoded = decode_reports(config, reports)
    assert decoded.valid.all()
    counts = [int(decoded.sums[a.count_offset]) for a in config.attributes]  # type: ignore[index]
    assert counts == np.bincount(reports[:, 0], minlength=6).tolist()
    assert sum(counts) == len(CAR.records)


def test_bad_sample_reports_are_rejected() -> None:
    config = build_config(car_spec("sample"))
    good = Privatizer(config).privatize_many(CAR.records[:3], seeded_rng(1))
    bad_selector = good[0].copy()
    bad_selector[0] = 6
    persons = config.attribute("persons")  # 12 cells: 4 padding bits
    padded = np.zeros(config.report_bytes, dtype=np.uint8)
    padded[0] = persons.sample_index or 0
    padded[2] = 0x01
    decoded = decode_reports(config, np.stack([good[1], bad_selector, padded]))
    assert decoded.valid.tolist() == [True, False, False]
    assert "selector" in (decoded.reasons[1] or "")
    assert "padding" in (decoded.reasons[2] or "")
    # a 12-cell segment uses 2 bytes, like the longest: no tail. A 1-byte segment would
    # leave a tail that must be zero:
    spec = sample_spec(
        {"name": "a", "domain": domain(4)},
        {"name": "b", "domain": domain(12)},
    )
    small = build_config(spec)
    tail = np.array([[0, 0x80, 0x01]], dtype=np.uint8)  # selector 0 (a), a=bit 0, tail set
    result = decode_reports(small, tail)
    assert not result.valid[0]
    assert "after its segment" in (result.reasons[0] or "")
    assert decode_reports(small, np.array([[0, 0x80, 0x00]], dtype=np.uint8)).valid[0]


def test_sample_budget_keeps_counting_mask_attributes_in_every_report() -> None:
    spec = sample_spec(
        {"name": "a", "domain": domain(4)},
        {"name": "m", "domain": domain(5), "mechanism": "mask", "keep_probability": 0.8},
        {"name": "g", "domain": domain(3), "mechanism": "grr"},
    )
    config = build_config(spec)
    records = [{"a": "v1", "m": ["v0", "v3"], "g": "v2"}] * 500
    reports = Privatizer(config).privatize_many(records, seeded_rng(8))
    decoded = decode_reports(config, reports)
    assert decoded.valid.all()
    m = config.attribute("m")
    bits = np.unpackbits(reports[:, m.byte_offset : m.byte_offset + 1], axis=1)[:, :5]
    block = decoded.sums[m.stats_offset : m.stats_offset + 5]
    assert block.tolist() == bits.sum(axis=0).tolist()
    a, g = config.attribute("a"), config.attribute("g")
    assert decoded.sums[a.count_offset] + decoded.sums[g.count_offset] == 500  # type: ignore[index]
    g_rows = reports[:, 0] == g.sample_index
    assert (
        decoded.sums[g.stats_offset : g.stats_offset + 3].tolist()
        == np.bincount(reports[g_rows, g.byte_offset], minlength=3).tolist()
    )
