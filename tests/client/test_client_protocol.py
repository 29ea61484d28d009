"""The shared, I/O-free half of both clients: requests, answers, retry decisions, batching."""

from __future__ import annotations

import json

import httpx
import pytest

from ldp_aggregator.problems import http_status
from ldp_client.batching import BatchPlan, SubmitSummary, rejection_error, summarize
from ldp_client.configs import accept_config, coerce_spec
from ldp_client.estimate_calls import frequencies_call, quantiles_call
from ldp_client.protocol import (
    Failure,
    Success,
    collection_path,
    create_collection_call,
    get_config_call,
    interpret_exception,
    interpret_response,
    submit_reports_call,
)
from ldp_client.retry import RetryPolicy, parse_retry_after
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import (
    ALL_ERRORS,
    AuthenticationError,
    CollectionNotFoundError,
    ConfigurationError,
    InvalidQueryError,
    LDPError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    ReportRejectedError,
    TransportError,
    problem_type,
)
from ldp_shared.wire.reports import BatchResult, Report

from .conftest import SPEC

URL = "http://aggregator.test"


def _request(method: str = "GET", path: str = "/v1/collections/survey") -> httpx.Request:
    return httpx.Request(method, URL + path)


def _reports(n: int) -> list[Report]:
    return [Report(id=f"report-{i:04d}", config_hash="h", bits="AA==") for i in range(n)]


def _problem(error: type[LDPError], detail: str = "the server's words") -> httpx.Response:
    body = {"type": problem_type(error), "title": error.title, "status": 400, "detail": detail}
    return httpx.Response(
        http_status(error), json=body, headers={"content-type": "application/problem+json"}
    )


# ------------------------------------------------------------------ problem documents


@pytest.mark.parametrize("error", ALL_ERRORS, ids=lambda e: e.type_slug)
def test_every_problem_type_maps_back_to_its_class_with_the_detail(error: type[LDPError]):
    call = get_config_call("survey")
    outcome = interpret_response(call, _request(), _problem(error, "exactly this"))
    assert isinstance(outcome, Failure)
    assert type(outcome.error) is error
    assert outcome.error.detail == "exactly this"
    assert str(outcome.error) == "exactly this"


def test_validation_errors_of_a_problem_are_kept_as_notes():
    body = {
        "type": problem_type(LDPError),
        "detail": "bad",
        "errors": [{"loc": ["body", "reports", 0], "msg": "too long"}],
    }
    response = httpx.Response(422, json=body)
    outcome = interpret_response(get_config_call("survey"), _request(), response)
    assert isinstance(outcome, Failure)
    assert any("too long" in note for note in outcome.error.__notes__)
    assert any(URL in note for note in outcome.error.__notes__)


@pytest.mark.parametrize(
    ("code", "cls", "retryable"),
    [
        (401, AuthenticationError, False),
        (404, NotFoundError, False),
        (413, PayloadTooLargeError, False),
        (418, TransportError, False),
        (429, RateLimitedError, True),
        (500, TransportError, True),
        (502, TransportError, True),
        (503, TransportError, True),
    ],
)
def test_bare_error_statuses_map_by_status(code: int, cls: type[LDPError], retryable: bool):
    response = httpx.Response(code, text="<html>gateway says no</html>")
    outcome = interpret_response(get_config_call("survey"), _request(), response)
    assert isinstance(outcome, Failure)
    assert type(outcome.error) is cls
    assert f"{URL}/v1/collections/survey" in outcome.error.detail
    assert outcome.retryable is retryable


def test_unknown_problem_types_fall_back_to_the_status():
    body = {"type": "about:blank", "title": "Not Found", "status": 404}
    outcome = interpret_response(
        get_config_call("survey"), _request(), httpx.Response(404, json=body)
    )
    assert isinstance(outcome, Failure)
    assert type(outcome.error) is NotFoundError
    assert outcome.error.detail == "Not Found"


def test_typed_4xx_problems_are_final_and_5xx_retryable():
    call = get_config_call("survey")
    for error in (CollectionNotFoundError, AuthenticationError, InvalidQueryError):
        outcome = interpret_response(call, _request(), _problem(error))
        assert isinstance(outcome, Failure) and not outcome.retryable
    outcome = interpret_response(call, _request(), httpx.Response(503, json={"type": "x"}))
    assert isinstance(outcome, Failure) and outcome.retryable


def test_retry_after_is_read():
    response = httpx.Response(429, headers={"retry-after": "2"})
    outcome = interpret_response(get_config_call("survey"), _request(), response)
    assert isinstance(outcome, Failure) and outcome.retry_after == 2.0
    assert isinstance(outcome.error, RateLimitedError) and outcome.error.retry_after == 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None
    assert parse_retry_after("-1") is None
    assert parse_retry_after(None) is None


# ------------------------------------------------------------------ successful answers


def test_a_config_answer_is_parsed(config: CollectionConfig):
    response = httpx.Response(200, json=config.model_dump(mode="json"))
    outcome = interpret_response(get_config_call("survey"), _request(), response)
    assert isinstance(outcome, Success) and outcome.value == config


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html>captive portal</html>"),
        httpx.Response(200, json={"format_version": 1}),
        httpx.Response(200, content=b"\xff\xfe"),
    ],
)
def test_unreadable_answers_are_transport_errors_naming_the_url(response: httpx.Response):
    outcome = interpret_response(get_config_call("survey"), _request(), response)
    assert isinstance(outcome, Failure)
    assert type(outcome.error) is TransportError and not outcome.retryable
    assert f"GET {URL}/v1/collections/survey" in outcome.error.detail


def test_redirects_are_not_followed_but_explained():
    response = httpx.Response(308, headers={"location": "https://elsewhere/"})
    outcome = interpret_response(get_config_call("survey"), _request(), response)
    assert isinstance(outcome, Failure) and isinstance(outcome.error, TransportError)
    assert "elsewhere" in outcome.error.detail


def test_a_batch_answer_must_match_the_batch():
    reports = _reports(2)
    call = submit_reports_call("survey", reports)
    good = {
        "accepted": 1,
        "duplicate": 0,
        "rejected": 1,
        "outcomes": [
            {"id": reports[0].id, "status": "accepted"},
            {"id": reports[1].id, "status": "rejected", "reason": "wrong length"},
        ],
    }
    request = _request("POST", "/v1/collections/survey/reports")
    outcome = interpret_response(call, request, httpx.Response(200, json=good))
    assert isinstance(outcome, Success) and outcome.value.rejected == 1
    for bad in (
        {**good, "outcomes": good["outcomes"][::-1]},
        {**good, "outcomes": good["outcomes"][:1]},
        {**good, "accepted": 2, "rejected": 0},
    ):
        outcome = interpret_response(call, request, httpx.Response(200, json=bad))
        assert isinstance(outcome, Failure) and isinstance(outcome.error, TransportError)


# ------------------------------------------------------------------ exceptions


@pytest.mark.parametrize(
    ("exc", "idempotent_retry", "create_retry"),
    [
        (httpx.ConnectError, True, True),
        (httpx.ConnectTimeout, True, True),
        (httpx.ReadTimeout, True, False),
        (httpx.ReadError, True, False),
        (httpx.RemoteProtocolError, True, False),
        (httpx.UnsupportedProtocol, False, False),
    ],
)
def test_network_failures_are_transport_errors_and_retried_when_safe(
    exc: type[httpx.HTTPError], idempotent_retry: bool, create_retry: bool
):
    request = _request("POST", "/v1/collections/survey/reports")
    failure = interpret_exception(
        submit_reports_call("survey", _reports(1)), request, exc("boom", request=request)
    )
    assert isinstance(failure.error, TransportError)
    assert f"{URL}/v1/collections/survey/reports" in failure.error.detail
    assert failure.retryable is idempotent_retry
    create = interpret_exception(
        create_collection_call(SPEC), _request("POST", "/v1/collections"), exc("boom")
    )
    assert create.retryable is create_retry


def test_creating_is_retried_only_on_429_and_503():
    call = create_collection_call(SPEC)
    for code, retry in ((429, True), (503, True), (500, False), (504, False)):
        outcome = interpret_response(call, _request("POST"), httpx.Response(code))
        assert isinstance(outcome, Failure) and outcome.retryable is retry


# ------------------------------------------------------------------ requests


def test_requests_carry_the_token_only_where_needed():
    with httpx.Client(base_url=URL) as http:
        public = get_config_call("survey").build(http, "tok")
        upload = submit_reports_call("survey", _reports(1)).build(http, "tok")
        analyst = frequencies_call("survey", "browser", 0.9, "simplex").build(http, "tok")
    assert "authorization" not in public.headers
    assert "authorization" not in upload.headers
    assert analyst.headers["authorization"] == "Bearer tok"
    assert dict(analyst.url.params) == {
        "attribute": "browser",
        "confidence": "0.9",
        "postprocess": "simplex",
    }
    assert json.loads(upload.content)["reports"][0]["id"] == "report-0000"


@pytest.mark.parametrize("name", ["../admin", "Survey", "", "a/b", "survey\n", "x" * 65])
def test_names_no_collection_can_have_are_refused_locally(name: str):
    with pytest.raises(CollectionNotFoundError):
        collection_path(name)


def test_confidence_must_be_a_number():
    with pytest.raises(InvalidQueryError):
        frequencies_call("survey", "browser", "high", "none")  # type: ignore[arg-type]


def test_specs_are_validated_before_sending():
    assert coerce_spec(SPEC.model_dump()) == SPEC
    with pytest.raises(ConfigurationError, match="epsilon"):
        coerce_spec({**SPEC.model_dump(), "epsilon": -1})
    with pytest.raises(ConfigurationError):
        coerce_spec(["not", "a", "spec"])  # type: ignore[arg-type]


# ------------------------------------------------------------------ configs


def test_accept_config_rebuilds_and_checks(config: CollectionConfig):
    assert accept_config("survey", config) == config
    with pytest.raises(ConfigurationError, match="other"):
        accept_config("other", config)
    with pytest.raises(ConfigurationError, match="format"):
        accept_config("survey", config.model_copy(update={"format_version": 99}))


# ------------------------------------------------------------------ retry policy


def test_backoff_is_exponential_jittered_and_capped():
    policy = RetryPolicy(retries=3, backoff=0.5, max_delay=3.0)
    assert [policy.delay(a, jitter=1.0) for a in range(4)] == [0.5, 1.0, 2.0, 3.0]
    assert [policy.delay(a, jitter=0.0) for a in range(3)] == [0.25, 0.5, 1.0]
    assert 0.25 <= policy.delay(0) <= 0.5
    assert policy.delay(0, retry_after=2.0, jitter=0.0) == 2.0
    assert policy.delay(0, retry_after=60.0) == 3.0
    assert policy.attempts == 4
    assert policy.should_retry(True, 2) and not policy.should_retry(True, 3)
    assert not policy.should_retry(False, 0)
    # a server that asks for longer than the client waits is not retried early
    assert policy.should_retry(True, 0, retry_after=3.0)
    assert not policy.should_retry(True, 0, retry_after=3.5)
    assert policy.give_up_note(0, retry_after=3.5) is not None
    assert policy.give_up_note(0) is None and policy.give_up_note(2) == "gave up after 3 attempts"
    assert RetryPolicy().max_delay == 60.0


@pytest.mark.parametrize("kwargs", [{"retries": -1}, {"retries": 1.5}, {"backoff": -0.1}])
def test_bad_policies_are_refused(kwargs):
    with pytest.raises(ConfigurationError):
        RetryPolicy(**kwargs)


# ------------------------------------------------------------------ batching


def test_batches_split_and_merge_in_order():
    reports = _reports(7)
    plan = BatchPlan(reports, 3)
    sizes = []
    first = True
    while (batch := plan.next_batch()) is not None:
        if first:  # pretend the first batch was too large
            first = False
            plan.too_large(batch, PayloadTooLargeError("too large"))
            continue
        sizes.append(len(batch))
        outcomes = [{"id": r.id, "status": "accepted"} for r in batch]
        plan.record(
            batch, BatchResult(accepted=len(batch), duplicate=0, rejected=0, outcomes=outcomes)
        )
    assert sizes == [1, 2, 3, 1]
    result = plan.result()
    assert [o.id for o in result.outcomes] == [r.id for r in reports]
    assert result.accepted == 7 and plan.sent == 7


def test_a_single_report_too_large_is_an_error():
    plan = BatchPlan(_reports(1), 10)
    batch = plan.next_batch()
    assert batch is not None
    with pytest.raises(PayloadTooLargeError):
        plan.too_large(batch, PayloadTooLargeError("too large"))


@pytest.mark.parametrize("size", [0, -1, 10_001, 2.5, True])
def test_batch_size_is_checked(size):
    with pytest.raises(ConfigurationError):
        BatchPlan(_reports(1), size)


def test_summary_and_rejection_error():
    result = BatchResult(
        accepted=1,
        duplicate=1,
        rejected=1,
        outcomes=[
            {"id": "aaaaaaaa", "status": "accepted"},
            {"id": "bbbbbbbb", "status": "duplicate"},
            {"id": "cccccccc", "status": "rejected", "reason": "wrong length"},
        ],
    )
    summary = summarize(result)
    assert summary == SubmitSummary(1, 1, 1, {"cccccccc": "wrong length"})
    assert summary.total == 3
    error = rejection_error(summary)
    assert isinstance(error, ReportRejectedError)
    assert error.rejected == {"cccccccc": "wrong length"}
    assert rejection_error(SubmitSummary(3, 0, 0)) is None


def test_quantile_levels_travel_as_one_comma_separated_parameter():
    with httpx.Client(base_url=URL) as http:
        request = quantiles_call("survey", "age", [0.25, 0.5, 1], 0.9).build(http, "tok")
    assert request.url.path == "/v1/collections/survey/quantiles"
    assert request.headers["authorization"] == "Bearer tok"
    assert dict(request.url.params) == {
        "attribute": "age",
        "confidence": "0.9",
        "q": "0.25,0.5,1.0",
    }


@pytest.mark.parametrize("levels", ["0.5", [0.5, "0.9"], [True], [None]])
def test_quantile_levels_must_be_numbers(levels):
    with pytest.raises(InvalidQueryError, match="sequence of numbers"):
        quantiles_call("survey", "age", levels, 0.95)
