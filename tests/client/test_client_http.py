"""Both clients against a simulated aggregator (httpx.MockTransport).

Every test runs twice: with :class:`LDPClient` and with :class:`AsyncLDPClient` (driven
through ``conftest.Blocking`` on one event loop).
"""

from __future__ import annotations

import json

import httpx
import pytest

from ldp_client import AsyncLDPClient, LDPClient, SubmitSummary
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import (
    AuthenticationError,
    CollectionNotFoundError,
    ConfigurationError,
    ConflictError,
    InsufficientReportsError,
    InvalidRecordError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ReportRejectedError,
    TransportError,
)
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.releases import FrequencyResult

from .conftest import SPEC, MakeClient, make_records
from .fake_aggregator import (
    ADMIN,
    ANALYST,
    FakeAggregator,
    lose_answer,
    problem,
    raise_,
    status,
)

REPORTS = "/v1/collections/survey/reports"
CONFIG = "/v1/collections/survey"

# ------------------------------------------------------------------ configs


def test_config_is_fetched_once_and_verified(make_client: MakeClient, server: FakeAggregator):
    client = make_client()
    config = client.get_config("survey")
    assert config == CollectionConfig.model_validate(server.configs["survey"])
    client.privatize("survey", make_records(1)[0])
    client.privatize_many("survey", make_records(3))
    assert len(server.sent("GET", CONFIG)) == 1


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: c["attributes"][0].__setitem__("p", 0.99),
        lambda c: c["attributes"][1].__setitem__("q", 0.0),
        lambda c: c.__setitem__("epsilon", 0.1),
        lambda c: c["spec"].__setitem__("epsilon", 50.0),
        lambda c: c.__setitem__("config_hash", "0" * 64),
        lambda c: c["attributes"][0].__setitem__("byte_offset", 1),
    ],
    ids=["p", "q", "epsilon", "spec-epsilon", "hash", "layout"],
)
def test_a_tampered_config_is_refused(make_client: MakeClient, server: FakeAggregator, tamper):
    tamper(server.configs["survey"])
    client = make_client()
    with pytest.raises(ConfigurationError):
        client.get_config("survey")
    with pytest.raises(ConfigurationError):
        client.submit("survey", make_records(3))
    assert server.report_posts() == []


def test_a_config_for_another_name_is_refused(make_client: MakeClient, server: FakeAggregator):
    server.configs["other"] = server.configs["survey"]
    with pytest.raises(ConfigurationError, match="survey"):
        make_client().get_config("other")


def test_unknown_collection_keeps_the_servers_detail(make_client: MakeClient):
    with pytest.raises(CollectionNotFoundError) as info:
        make_client().get_config("nope")
    assert info.value.detail == "no collection named 'nope'"


def test_a_wrong_base_url_is_not_found(make_client: MakeClient, server: FakeAggregator):
    server.configs.clear()
    server.fail("GET", CONFIG, lambda request, serve: httpx.Response(404, text="<html/>"))
    with pytest.raises(NotFoundError) as info:
        make_client().get_config("survey")
    assert type(info.value) is NotFoundError  # not a problem document: mapped by status
    assert "http://aggregator.test/v1/collections/survey" in info.value.detail


# ------------------------------------------------------------------ submitting


def test_submit_uploads_batches_and_reports_progress(
    make_client: MakeClient, server: FakeAggregator
):
    ticks: list[int] = []
    summary = make_client(rng=seeded_rng(0)).submit(
        "survey", make_records(2500), batch_size=1000, progress=ticks.append
    )
    assert summary == SubmitSummary(accepted=2500, duplicate=0, rejected=0, rejected_reasons={})
    assert ticks == [1000, 1000, 500] and sum(ticks) == 2500
    assert [len(ids) for ids in server.report_posts()] == [1000, 1000, 500]
    assert len(server.stored["survey"]) == 2500


def test_uploads_carry_only_perturbed_reports(make_client: MakeClient, server: FakeAggregator):
    make_client().submit("survey", [{"browser": "safari", "age": ">60", "basket": {"beer"}}])
    (post,) = server.sent("POST", REPORTS)
    body = json.loads(post.content)
    assert list(body) == ["reports"]
    assert set(body["reports"][0]) == {"id", "config_hash", "bits"}
    for raw in ("safari", ">60", "beer", "browser", "basket"):
        assert raw not in post.content.decode()
    assert "authorization" not in post.headers


def test_retry_on_503_resends_identical_ids(make_client: MakeClient, server: FakeAggregator):
    server.fail("POST", REPORTS, status(503), status(503))
    summary = make_client(retries=3).submit("survey", make_records(10))
    posts = server.report_posts()
    assert len(posts) == 3 and posts[0] == posts[1] == posts[2]
    assert summary.accepted == 10


def test_retry_on_a_dropped_connection_resends_identical_ids(
    make_client: MakeClient, server: FakeAggregator
):
    server.fail("POST", REPORTS, raise_(httpx.ConnectError))
    summary = make_client().submit("survey", make_records(10))
    first, second = server.report_posts()
    assert first == second
    assert summary.accepted == 10


def test_a_retried_batch_counts_once(make_client: MakeClient, server: FakeAggregator):
    # the aggregator stores the batch, then the answer is lost: the resent batch is
    # answered "duplicate" and nothing is stored twice
    server.fail("POST", REPORTS, lose_answer(httpx.ReadTimeout))
    summary = make_client().submit("survey", make_records(10))
    first, second = server.report_posts()
    assert first == second
    assert len(server.stored["survey"]) == 10
    assert summary == SubmitSummary(accepted=0, duplicate=10, rejected=0, rejected_reasons={})


def test_retry_on_429_and_other_5xx(make_client: MakeClient, server: FakeAggregator):
    server.fail("POST", REPORTS, status(429, **{"retry-after": "0"}), status(500), status(502))
    assert make_client(retries=3).submit("survey", make_records(5)).accepted == 5
    assert len(server.report_posts()) == 4


def test_retries_exhausted_is_a_transport_error_naming_the_url(
    make_client: MakeClient, server: FakeAggregator
):
    server.fail("POST", REPORTS, *[raise_(httpx.ConnectError)] * 3)
    with pytest.raises(TransportError) as info:
        make_client(retries=2).submit("survey", make_records(5))
    assert "http://aggregator.test/v1/collections/survey/reports" in str(info.value)
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    notes = "\n".join(info.value.__notes__)
    assert "3 attempts" in notes and "submit_reports" in notes
    assert len(server.report_posts()) == 3


def test_timeouts_are_retried_then_reported(make_client: MakeClient, server: FakeAggregator):
    server.fail("GET", CONFIG, raise_(httpx.ReadTimeout), raise_(httpx.ReadTimeout))
    with pytest.raises(TransportError, match="timed out"):
        make_client(retries=1).get_config("survey")
    assert make_client(retries=1).get_config("survey").name == "survey"


def test_no_retries_means_one_attempt(make_client: MakeClient, server: FakeAggregator):
    server.fail("GET", CONFIG, status(503))
    with pytest.raises(TransportError):
        make_client(retries=0).get_config("survey")
    assert len(server.sent("GET", CONFIG)) == 1


@pytest.mark.parametrize(
    ("error", "code"),
    [(AuthenticationError, 401), (PermissionDeniedError, 403), (ConflictError, 409)],
)
def test_4xx_problems_are_not_retried(make_client: MakeClient, server: FakeAggregator, error, code):
    server.fail("POST", REPORTS, lambda request, serve: problem(error, "no, and that is final"))
    with pytest.raises(error, match="no, and that is final"):
        make_client(retries=5).submit("survey", make_records(3))
    assert len(server.report_posts()) == 1


def test_invalid_records_send_nothing(make_client: MakeClient, server: FakeAggregator):
    records = [*make_records(20), {"browser": "lynx", "age": "<30", "basket": set()}]
    client = make_client()
    with pytest.raises(InvalidRecordError, match="lynx"):
        client.submit("survey", records)
    with pytest.raises(InvalidRecordError):
        client.privatize("survey", {"browser": "firefox"})
    assert server.report_posts() == []


def test_rejections_raise_after_all_batches(make_client: MakeClient, server: FakeAggregator):
    client = make_client()
    reports = client.privatize_many("survey", make_records(30))
    server.reject_ids = {reports[3].id, reports[25].id}
    result = client.submit_reports("survey", reports, batch_size=10)
    assert (result.accepted, result.rejected) == (28, 2)
    assert [o.id for o in result.outcomes] == [r.id for r in reports]

    server.stored.clear()
    server.reject_ids = set()
    before = len(server.report_posts())
    original = server.serve

    def reject_in_first_and_last_batch(request: httpx.Request) -> httpx.Response:
        batch_number = len(server.report_posts()) - before  # 1, 2, 3
        if batch_number in (1, 3):
            server.reject_ids.add(json.loads(request.content)["reports"][0]["id"])
        return original(request)

    server.serve = reject_in_first_and_last_batch  # type: ignore[method-assign]
    with pytest.raises(ReportRejectedError) as info:
        client.submit("survey", make_records(30), batch_size=10)
    assert len(server.report_posts()) - before == 3  # every batch was sent
    assert len(info.value.rejected) == 2
    assert set(info.value.rejected.values()) == {"rejected on purpose"}
    assert len(server.stored["survey"]) == 28


def test_a_config_hash_mismatch_is_a_rejection(make_client: MakeClient, server: FakeAggregator):
    client = make_client()
    reports = client.privatize_many("survey", make_records(2))
    forged = [r.model_copy(update={"config_hash": "f" * 64}) for r in reports]
    result = client.submit_reports("survey", forged)
    assert result.rejected == 2
    assert {o.reason for o in result.outcomes} == {"config hash of another config"}


def test_too_large_batches_are_split(make_client: MakeClient, server: FakeAggregator):
    server.max_batch = 3
    ticks: list[int] = []
    summary = make_client().submit("survey", make_records(10), batch_size=8, progress=ticks.append)
    assert summary.accepted == 10 and sum(ticks) == 10
    # [8, 2] -> 8 too large -> [4, 4] -> 4 too large -> [2, 2] ... the same ids throughout
    assert [len(ids) for ids in server.report_posts()] == [8, 4, 2, 2, 4, 2, 2, 2]
    assert len(server.stored["survey"]) == 10


def test_one_report_too_large_raises(make_client: MakeClient, server: FakeAggregator):
    server.max_batch = 0
    with pytest.raises(PayloadTooLargeError):
        make_client().submit("survey", make_records(2))


def test_submitting_nothing_sends_nothing(make_client: MakeClient, server: FakeAggregator):
    assert make_client().submit("survey", []) == SubmitSummary(0, 0, 0, {})
    assert server.report_posts() == []


def test_privatize_columns_through_the_client(make_client: MakeClient):
    records = make_records(5)
    columns = {name: [r[name] for r in records] for name in ("browser", "age", "basket")}
    client = make_client()
    reports = client.privatize_columns("survey", columns)
    assert client.submit_reports("survey", reports).accepted == 5


# ------------------------------------------------------------------ analyst and admin


def test_frequencies_send_the_token_and_parameters(make_client: MakeClient, server: FakeAggregator):
    make_client().submit("survey", make_records(20))
    result = make_client(token=ANALYST).frequencies(
        "survey", "browser", confidence=0.9, postprocess="norm-sub"
    )
    assert isinstance(result, FrequencyResult)
    assert (result.confidence, result.postprocess, result.n_reports) == (0.9, "norm-sub", 20)
    (request,) = server.sent("GET", "/frequencies")
    assert request.headers["authorization"] == f"Bearer {ANALYST}"
    assert request.url.params["attribute"] == "browser"


def test_analyst_routes_without_a_token(make_client: MakeClient):
    with pytest.raises(AuthenticationError):
        make_client().frequencies("survey", "browser")
    with pytest.raises(AuthenticationError):
        make_client().list_collections()


def test_insufficient_reports_is_typed(make_client: MakeClient, server: FakeAggregator):
    server.fail(
        "GET",
        "/v1/collections/survey/frequencies",
        lambda request, serve: problem(InsufficientReportsError, "12 of 100 reports"),
    )
    with pytest.raises(InsufficientReportsError, match="12 of 100"):
        make_client(token=ANALYST).frequencies("survey", "browser")


def test_create_and_list_collections(make_client: MakeClient, server: FakeAggregator):
    admin = make_client(token=ADMIN)
    spec = {**SPEC.model_dump(mode="json"), "name": "survey-2"}
    config = admin.create_collection(spec)
    assert config.name == "survey-2" and config.spec.name == "survey-2"
    assert admin.list_collections() == ["survey", "survey-2"]
    with pytest.raises(ConflictError):
        admin.create_collection(spec)
    with pytest.raises(PermissionDeniedError):
        make_client(token=ANALYST).create_collection({**spec, "name": "survey-3"})
    (post, *_) = server.sent("POST", "/v1/collections")
    assert post.headers["authorization"] == f"Bearer {ADMIN}"
    # the created config is cached: submitting needs no further GET
    admin.submit("survey-2", make_records(2))
    assert server.sent("GET", "/v1/collections/survey-2") == []


def test_an_invalid_spec_is_refused_before_sending(make_client: MakeClient, server: FakeAggregator):
    with pytest.raises(ConfigurationError):
        make_client(token=ADMIN).create_collection({"name": "x", "attributes": []})
    assert server.requests == []


def test_create_is_not_repeated_after_a_lost_answer(
    make_client: MakeClient, server: FakeAggregator
):
    server.fail("POST", "/v1/collections", lose_answer(httpx.ReadTimeout))
    with pytest.raises(TransportError):
        make_client(token=ADMIN).create_collection({**SPEC.model_dump(), "name": "new"})
    assert len(server.sent("POST", "/v1/collections")) == 1
    assert "new" in server.configs  # it was created; the caller can GET it


def test_create_is_repeated_when_it_surely_did_not_arrive(
    make_client: MakeClient, server: FakeAggregator
):
    server.fail("POST", "/v1/collections", raise_(httpx.ConnectError), status(503))
    config = make_client(token=ADMIN).create_collection({**SPEC.model_dump(), "name": "new"})
    assert config.name == "new"
    assert len(server.sent("POST", "/v1/collections")) == 3


# ------------------------------------------------------------------ construction


@pytest.mark.parametrize(
    "kwargs",
    [
        {"token": "has space"},
        {"token": ""},
        {"token": "line\nbreak"},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"retries": -1},
        {"backoff": -1.0},
        {"rng": 42},
    ],
)
def test_bad_arguments_are_configuration_errors(make_client: MakeClient, kwargs):
    with pytest.raises(ConfigurationError):
        make_client(**kwargs)


def test_bad_batch_size_is_refused_before_privatizing(
    make_client: MakeClient, server: FakeAggregator
):
    with pytest.raises(ConfigurationError):
        make_client().submit("survey", make_records(2), batch_size=0)
    assert server.requests == []


def test_a_create_answered_with_another_spec_is_refused(
    make_client: MakeClient, server: FakeAggregator
):
    def weaker(request: httpx.Request, serve) -> httpx.Response:
        spec = json.loads(request.content)
        spec["epsilon"] = 20.0
        config = build_config(CollectionSpec.model_validate(spec))
        return httpx.Response(201, json=config.model_dump(mode="json"))

    server.fail("POST", "/v1/collections", weaker)
    with pytest.raises(ConfigurationError, match="another spec"):
        make_client(token=ADMIN).create_collection({**SPEC.model_dump(), "name": "new"})


@pytest.mark.parametrize("cls", [LDPClient, AsyncLDPClient])
@pytest.mark.parametrize(
    "url", ["ftp://aggregator.test", "aggregator.test", "http://", "http://h/?q=1", 42]
)
def test_bad_base_urls_are_configuration_errors(cls, url):
    with pytest.raises(ConfigurationError):
        cls(url)


def test_a_base_url_with_a_path_prefix(server: FakeAggregator):
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json=server.configs["survey"])

    with LDPClient("http://aggregator.test/ldp/", transport=httpx.MockTransport(handler)) as c:
        c.get_config("survey")
    assert seen == ["/ldp/v1/collections/survey"]
