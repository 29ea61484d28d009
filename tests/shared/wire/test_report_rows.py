"""A received batch as columns: the same batches, values and errors as per-report
validation, and the column checks equal to the per-report ones on every text."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from pydantic import Field, ValidationError

from ldp_shared.request_model import RequestModel
from ldp_shared.wire.reports import (
    MAX_BATCH,
    REPORT_ID_PATTERN,
    Report,
    ReportBatch,
    ReportRows,
    decode_bits,
    decode_bits_column,
    ids_match_pattern,
)

_ID = re.compile(REPORT_ID_PATTERN)


class PerReportBatch(RequestModel):
    """The batch as it was validated before it had columns: the reference."""

    reports: list[Report] = Field(min_length=1, max_length=MAX_BATCH)


def _report(k: int) -> dict[str, Any]:
    return {"id": f"report{k:04d}", "config_hash": "ab" * 32, "bits": "gMA="}


def _outcome(value: Any) -> tuple[str, Any]:
    """What validating ``{"reports": value}`` gives, with columns and without."""
    try:
        batch = ReportBatch.model_validate({"reports": value})
    except ValidationError as error:
        columns: tuple[str, Any] = ("error", error.errors(include_url=False))
    else:
        assert isinstance(batch.reports, ReportRows)
        columns = ("ok", [r.model_dump() for r in batch.reports])
    try:
        reference = PerReportBatch.model_validate({"reports": value})
    except ValidationError as error:
        return columns, ("error", error.errors(include_url=False))  # type: ignore[return-value]
    return columns, ("ok", [r.model_dump() for r in reference.reports])  # type: ignore[return-value]


CASES: list[Any] = [
    [_report(0)],
    [_report(k) for k in range(5)],
    [_report(k) for k in range(MAX_BATCH)],
    [_report(k) for k in range(MAX_BATCH + 1)],
    [],
    [{**_report(0), "value": "raw"}],  # a member more
    [{"id": "report0000", "bits": "gMA="}],  # a member less
    [{**_report(0), "id": 12345678}],  # not a string
    [{**_report(0), "bits": None}],
    [_report(0), ["report0001", "ab", "gMA="]],  # an item that is not an object
    [_report(0), "report0001"],
    ({**_report(0)},),  # not a list
    "reports",
    {"0": _report(0)},
    [{"config_hash": "ab" * 32, "bits": "gMA=", "id": "report0000"}],  # members reordered
    [{**_report(0), "id": "bad id with spaces é"}],  # any string fits the shape
    [_report(0), _report(0)],  # repeated: judged at ingestion, not here
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_columns_accept_and_refuse_what_per_report_validation_does(case: int) -> None:
    columns, reference = _outcome(CASES[case])
    assert columns == reference


def test_a_batch_of_report_objects_keeps_them_and_serialises_as_before() -> None:
    reports = [Report.model_validate(_report(k)) for k in range(3)]
    batch = ReportBatch(reports=reports)
    assert isinstance(batch.reports, ReportRows)
    assert batch.reports[1] is reports[1] and list(batch.reports) == reports
    assert batch.model_dump_json() == PerReportBatch(reports=reports).model_dump_json()
    parsed = ReportBatch.model_validate_json(batch.model_dump_json())
    assert parsed == batch and parsed.rows.ids == [r.id for r in reports]
    assert parsed.reports[-1] == reports[-1] and parsed.reports[1:] == reports[1:]


def test_column_base64_decodes_exactly_what_decode_bits_decodes() -> None:
    """Every text of the right length over an alphabet of base64 digits, ``=``, the
    URL-safe digits, a space and a non-ASCII letter: the column decoder accepts a text
    if and only if ``decode_bits`` gives ``width`` bytes from it, and the same bytes."""
    rng = np.random.default_rng(20261127)
    letters = [*"AQgwB/+=", "A", "=", "-", "_", " ", "é", "Z", "z", "9"]
    for width in range(1, 10):
        chars = 4 * -(-width // 3)
        accepted = 0
        for _ in range(600):
            if rng.random() < 0.5:  # a valid text, maybe with one character changed
                text = list(base64.b64encode(rng.bytes(width)).decode())
                if rng.random() < 0.5:
                    text[int(rng.integers(chars))] = letters[int(rng.integers(len(letters)))]
            else:
                text = [letters[int(rng.integers(len(letters)))] for _ in range(chars)]
            candidate = "".join(text)
            try:
                expected: bytes | None = decode_bits(candidate)
            except Exception:
                expected = None
            if expected is not None and len(expected) != width:
                expected = None
            got = decode_bits_column([candidate], width)
            assert (got is None) == (expected is None), (width, candidate)
            if got is not None:
                accepted += 1
                assert got.tobytes() == expected
        assert accepted > 100  # the comparison saw both answers often
    texts = [base64.b64encode(bytes([k, 255 - k, 7])).decode() for k in range(256)]
    matrix = decode_bits_column(texts, 3)
    assert matrix is not None and matrix.shape == (256, 3)
    assert [bytes(row) for row in matrix] == [decode_bits(t) for t in texts]
    assert decode_bits_column([*texts, "AAB="], 3) is None  # one bad text: no matrix
    assert decode_bits_column(["gMA="], 3) is None  # 2 bytes, not 3


def test_column_ids_match_exactly_when_every_id_matches_the_pattern() -> None:
    rng = np.random.default_rng(7)
    letters = [*"aZ09_-", "+", "/", "=", " ", "é", "\n", "."]
    for _ in range(3000):
        length = int(rng.integers(6, 67))
        weights = np.array([0.9 / 6] * 6 + [0.1 / 7] * 7)
        chosen = rng.choice(len(letters), size=length, p=weights / weights.sum())
        one = "".join(letters[k] for k in chosen)
        assert ids_match_pattern([one]) == (_ID.fullmatch(one) is not None), one
    good = ["abcdefgh", "A" * 64, "x-_y" * 2]
    assert ids_match_pattern(good)
    for bad in ("abcdefg", "A" * 65, "abcdefg\n", "abcdefgh\n", "abcdéfgh"):
        assert not ids_match_pattern([*good, bad])
    assert ids_match_pattern([])


def test_rows_slice_and_compare_as_a_list_does() -> None:
    rows = ReportRows.of_plain([_report(k) for k in range(4)])
    assert rows is not None and len(rows) == 4
    as_list: Sequence[Report] = [Report.model_validate(_report(k)) for k in range(4)]
    assert rows == as_list and rows[1:3] == as_list[1:3] and rows[-1] == as_list[-1]
    assert rows != as_list[:3] and rows != "abcd"
    with pytest.raises(IndexError):
        rows[4]


def test_a_batch_built_without_validation_still_has_rows() -> None:
    reports = [Report.model_validate(_report(k)) for k in range(3)]
    batch = ReportBatch.model_construct(reports=reports)
    assert batch.rows.ids == [r.id for r in reports] and batch.rows == reports
