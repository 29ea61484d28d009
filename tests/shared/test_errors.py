"""The exception tree and its RFC 9457 problem types."""

from __future__ import annotations

import pytest

from ldp_shared.errors import (
    ALL_ERRORS,
    PROBLEM_TYPE_BASE,
    ConfigurationError,
    InvalidQueryError,
    InvalidRecordError,
    InvalidReportError,
    LDPError,
    ReportRejectedError,
    error_class_for_type,
    problem_type,
)


def test_slugs_are_unique_and_round_trip() -> None:
    slugs = [e.type_slug for e in ALL_ERRORS]
    assert len(set(slugs)) == len(slugs)
    for error in ALL_ERRORS:
        assert issubclass(error, LDPError)
        assert problem_type(error) == PROBLEM_TYPE_BASE + error.type_slug
        assert error_class_for_type(problem_type(error)) is error
        assert not hasattr(error, "status")  # the protocol core knows no HTTP


def test_unknown_type_is_the_base_class() -> None:
    assert error_class_for_type("about:blank") is LDPError


@pytest.mark.parametrize(
    "error", [ConfigurationError, InvalidRecordError, InvalidReportError, InvalidQueryError]
)
def test_input_errors_are_value_errors(error: type[LDPError]) -> None:
    assert issubclass(error, ValueError)
    e = error("detail text")
    assert e.detail == "detail text" and str(e) == "detail text"


def test_report_rejected_keeps_its_reasons() -> None:
    e = ReportRejectedError("2 rejected", {"id1": "padding"})
    assert e.rejected == {"id1": "padding"}
    assert ReportRejectedError("x").rejected == {}
