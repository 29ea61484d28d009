"""Wire types: strict base64, and a report with no room for anything but perturbed bits."""

from __future__ import annotations

import base64
import re

import pytest
from pydantic import ValidationError

from ldp_shared.errors import InvalidReportError
from ldp_shared.wire.naive_bayes import COUNT_REPAIRS, NaiveBayesTrainRequest
from ldp_shared.wire.releases import FrequencyResult
from ldp_shared.wire.reports import (
    MAX_BATCH,
    REPORT_ID_PATTERN,
    BatchResult,
    Report,
    ReportBatch,
    ReportOutcome,
    decode_bits,
    encode_bits,
    new_report_id,
)


@pytest.mark.parametrize("length", [0, 1, 2, 3, 7, 64, 1000])
def test_bits_round_trip(length: int) -> None:
    packed = bytes((i * 37 + 11) % 256 for i in range(length))
    text = encode_bits(packed)
    assert text == base64.b64encode(packed).decode("ascii")  # standard alphabet, padded
    assert decode_bits(text) == packed


def test_bits_example_of_the_wire_format() -> None:
    assert encode_bits(bytes([0x80, 0xC0])) == "gMA="


@pytest.mark.parametrize(
    "text",
    [
        "gMA",  # missing padding
        "gMA=gMA=",  # padding in the middle
        "g MA=",  # whitespace
        "gMA=\n",  # trailing newline
        "gM-_",  # URL-safe alphabet
        "gM!=",  # not base64
        "é===",  # not ASCII
        "a",  # impossible length
        "AAB=",  # non-canonical: a padding bit set (decodes to the bytes of "AAA=")
        "gMB=",  # likewise for 0x80 0xC0
    ],
)
def test_invalid_base64_is_an_invalid_report(text: str) -> None:
    with pytest.raises(InvalidReportError):
        decode_bits(text)


def test_report_fields_are_exactly_id_hash_bits() -> None:
    assert set(Report.model_fields) == {"id", "config_hash", "bits"}


def test_report_forbids_extra_fields() -> None:
    fields = {"id": new_report_id(), "config_hash": "ab" * 32, "bits": "gMA="}
    Report.model_validate(fields)
    for extra in ("value", "user_id", "timestamp", "raw"):
        with pytest.raises(ValidationError):
            Report.model_validate({**fields, extra: "x"})


def test_report_is_frozen_and_its_values_are_judged_per_report() -> None:
    r = Report(id="abcdefgh", config_hash="h", bits="gMA=")
    with pytest.raises(ValidationError):
        r.bits = "AAA="  # type: ignore[misc]
    # a value of any length fits the shape: ingestion rejects it in its own outcome
    # (tests/aggregator/test_api_reports.py); the body limit bounds the whole request
    assert Report(id="x" * 129, config_hash="h" * 129, bits="").id == "x" * 129
    with pytest.raises(ValidationError):
        Report.model_validate({"id": 12345678, "config_hash": "h", "bits": ""})


def test_batch_limits() -> None:
    r = Report(id="abcdefgh", config_hash="h", bits="gMA=")
    assert len(ReportBatch(reports=[r] * MAX_BATCH).reports) == MAX_BATCH
    with pytest.raises(ValidationError):
        ReportBatch(reports=[])
    with pytest.raises(ValidationError):
        ReportBatch(reports=[r] * (MAX_BATCH + 1))
    with pytest.raises(ValidationError):
        ReportBatch.model_validate({"reports": [r.model_dump()], "client": "x"})


def test_new_report_ids_fit_the_pattern_and_differ() -> None:
    ids = {new_report_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(REPORT_ID_PATTERN, i) for i in ids)
    assert all(len(i) == 22 for i in ids)  # 128 bits, URL-safe base64 without padding


def test_outcomes_and_results_forbid_extra_fields() -> None:
    with pytest.raises(ValidationError):
        ReportOutcome(id="a", status="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        BatchResult.model_validate(
            {"accepted": 0, "duplicate": 0, "rejected": 0, "outcomes": [], "ip": "1.2.3.4"}
        )
    assert "postprocessed" in FrequencyResult.model_fields
    assert FrequencyResult.model_config.get("extra") == "forbid"


def test_naive_bayes_alpha_stops_where_float64_stops_counting_one_report() -> None:
    bound = NaiveBayesTrainRequest.model_json_schema()["properties"]["alpha"]
    assert bound["minimum"] == 0 and bound["maximum"] == 2.0**53
    assert 2.0**53 + 1 == 2.0**53  # one report's count is lost at the bound
    assert NaiveBayesTrainRequest(alpha=2.0**53).alpha == 2.0**53
    for refused in (2.0**53 + 2, 1.7e308, float("inf"), float("nan"), -1.0):
        with pytest.raises(ValidationError):
            NaiveBayesTrainRequest(alpha=refused)


def test_the_count_repairs_are_the_members_of_the_wire_type() -> None:
    assert COUNT_REPAIRS == ("posterior-mean", "clamp", "norm-sub")
    for repair in COUNT_REPAIRS:
        assert NaiveBayesTrainRequest(repair=repair).repair == repair
