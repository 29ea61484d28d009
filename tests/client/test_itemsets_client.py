"""The SDK's itemset calls (sync and async): the job is polled to its end, a failed job
raises its typed error, arguments are checked before any request, and a basket with an
item outside the catalogue never leaves the device."""

from __future__ import annotations

import inspect
import json
from typing import Any

import httpx
import pytest

from ldp_client import AsyncLDPClient, InvalidQueryError, InvalidRecordError, LDPClient
from ldp_client.itemsets import build_itemset_query, is_informative, itemset_job_call, job_result
from ldp_shared.errors import NotFoundError, TransportError
from ldp_shared.wire.itemsets import (
    ItemsetJob,
    ItemsetQuery,
    ItemsetResult,
    MaskPrivacy,
    RuleEstimate,
)

from .conftest import BASE_URL, MakeClient
from .fake_aggregator import FakeAggregator

JOB_ID = "AbCdEfGhIjKlMnOpQrStUv"
PRIVACY = MaskPrivacy(
    attribute="basket",
    keep_probability=0.9,
    n_items=9,
    item_epsilon=2.2,
    basket_epsilon=19.8,
    average_support=0.01,
    weight=1.0,
    R1=0.07,
    R0=0.99,
    R=0.07,
    privacy=93.0,
)
RESULT = ItemsetResult(
    collection="survey",
    attribute="basket",
    n_reports=100,
    keep_probability=0.9,
    min_support=0.1,
    support_reduction=0.0,
    threshold=0.1,
    max_size=None,
    min_confidence=0.5,
    confidence=0.95,
    itemsets=[{"items": ["milk"], "support": 0.3, "stderr": 0.04, "ci_low": 0.22, "ci_high": 0.38}],
    by_length={"1": 1},
    rules=[],
    rules_total=0,
    privacy=PRIVACY,
    levels=[],
    seconds=0.1,
)


def _job(status: str, **changes: Any) -> dict[str, Any]:
    job = ItemsetJob(
        id=JOB_ID,
        collection="survey",
        status=status,  # type: ignore[arg-type]
        query=ItemsetQuery(min_support=0.1),
        created_unix=1,
        updated_unix=2,
        **changes,
    )
    return json.loads(job.model_dump_json())


class JobServer:
    """Answers the mining POST with a queued job, then ``states`` to successive polls."""

    def __init__(self, states: list[dict[str, Any]]) -> None:
        self.states = states
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.method == "POST":
            return httpx.Response(202, json=_job("queued"))
        if request.url.path.endswith("/privacy"):
            return httpx.Response(200, json=json.loads(PRIVACY.model_dump_json()))
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return httpx.Response(200, json=state)


def test_mine_itemsets_polls_until_done(make: Any) -> None:
    server = JobServer([_job("running"), _job("running"), _job("done", result=RESULT)])
    result = make(server).mine_itemsets("survey", min_support=0.1, poll_interval=0.0)
    assert result == RESULT
    methods = [r.method for r in server.requests]
    assert methods == ["POST", "GET", "GET", "GET"]
    body = json.loads(server.requests[0].content)
    assert body["min_support"] == 0.1 and body["wait_seconds"] == 5.0
    assert server.requests[1].url.path == f"/v1/collections/survey/itemsets/{JOB_ID}"
    assert all(r.headers["authorization"] == "Bearer t" for r in server.requests)
    assert result.table() == {"support": [0.3], "itemsets": [frozenset({"milk"})]}


def test_a_failed_job_raises_its_error(make: Any) -> None:
    error = {
        "type": "https://ldpcollect.dev/problems/invalid-query",
        "title": "Invalid query",
        "status": 422,
        "detail": "level 2 would count 9,000,000 candidate itemsets",
    }
    server = JobServer([_job("failed", error=error)])
    with pytest.raises(InvalidQueryError, match="9,000,000"):
        make(server).mine_itemsets("survey", min_support=0.1, poll_interval=0.0)


def test_a_job_that_outlives_the_timeout(make: Any) -> None:
    server = JobServer([_job("running")])
    with pytest.raises(TransportError, match=JOB_ID):
        make(server).mine_itemsets("survey", min_support=0.1, timeout=0.0, poll_interval=0.0)
    job = make(server).start_itemsets("survey", min_support=0.1, wait_seconds=0.0)
    assert job.status == "queued" and job.id == JOB_ID
    assert make(server).itemset_job("survey", JOB_ID).status == "running"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_support": 0.0},
        {"min_support": 2.0},
        {"min_support": 0.1, "min_confidence": 1.5},
        {"min_support": 0.1, "max_size": 0},
        {"min_support": 0.1, "support_reduction": -0.5},
        {"min_support": 0.1, "max_rules": -1},
    ],
)
def test_bad_arguments_never_leave_the_client(make: Any, kwargs: dict[str, Any]) -> None:
    server = JobServer([_job("done", result=RESULT)])
    with pytest.raises(InvalidQueryError):
        make(server).mine_itemsets("survey", **kwargs)
    assert server.requests == []


def test_job_ids_are_checked_locally() -> None:
    with pytest.raises(NotFoundError):
        itemset_job_call("survey", "../../admin")
    assert job_result(ItemsetJob.model_validate(_job("running"))) is None
    assert build_itemset_query(min_support=0.5).min_support == 0.5


def test_mask_privacy_needs_no_token(make: Any) -> None:
    server = JobServer([])
    client = make(server)
    assert client.mask_privacy("survey", 0.01, weight=1.0) == PRIVACY
    request = server.requests[0]
    assert "authorization" not in request.headers
    assert request.url.params["average_support"] == "0.01"
    with pytest.raises(InvalidQueryError):
        client.mask_privacy("survey", float("nan"))


def test_an_item_outside_the_catalogue_is_never_sent(
    make_client: MakeClient, server: FakeAggregator
) -> None:
    records = [
        {"browser": "firefox", "age": "<30", "basket": {"milk", "bread"}},
        {"browser": "chrome", "age": "<30", "basket": {"milk", "caviar"}},
    ]
    with pytest.raises(InvalidRecordError, match="'caviar' is not in the catalogue"):
        make_client().submit("survey", records)
    assert server.sent("POST", "/reports") == []


def test_the_server_wait_stays_inside_the_http_timeout() -> None:
    server = JobServer([_job("done", result=RESULT)])
    transport = httpx.MockTransport(server)
    with LDPClient(BASE_URL, token="t", transport=transport, timeout=4.0) as client:
        client.mine_itemsets("survey", min_support=0.1, poll_interval=0.0)
    assert json.loads(server.requests[0].content)["wait_seconds"] == 2.0


def _keywords(function: Any, *leave_out: str) -> dict[str, tuple[Any, Any]]:
    parameters = inspect.signature(function).parameters.values()
    return {
        p.name: (p.annotation, p.default)
        for p in parameters
        if p.kind is p.KEYWORD_ONLY and p.name not in leave_out
    }


@pytest.mark.parametrize("client", [LDPClient, AsyncLDPClient])
def test_the_mining_signatures_are_the_query_s_fields(client: Any) -> None:
    """build_itemset_query's parameters are ItemsetQuery's fields (it validates them by
    name), and the SDK methods spell its keyword arguments with the same types and defaults."""
    query = _keywords(build_itemset_query)
    fields = ItemsetQuery.model_fields
    assert set(query) == set(fields)
    for name, (_, default) in query.items():
        field = fields[name]
        assert default == (inspect.Parameter.empty if field.is_required() else field.default)
    assert _keywords(client.start_itemsets) == query
    started = {name: query[name] for name in query if name != "wait_seconds"}
    assert _keywords(client.mine_itemsets, "timeout", "poll_interval") == started


def _rule(low: float, high: float) -> RuleEstimate:
    return RuleEstimate(
        antecedent=["milk"],
        consequent=["bread"],
        support=0.2,
        confidence=(low + high) / 2,
        lift=1.2,
        antecedent_support=0.4,
        consequent_support=0.5,
        confidence_stderr=(high - low) / 3.92,
        confidence_ci_low=low,
        confidence_ci_high=high,
        lift_stderr=0.1,
        lift_ci_low=1.0,
        lift_ci_high=1.4,
    )


def test_a_rule_whose_interval_spans_half_the_range_is_uninformative() -> None:
    assert is_informative(_rule(0.6, 0.8))
    assert is_informative(_rule(0.3, 0.79))
    assert not is_informative(_rule(0.3, 0.8))
    assert not is_informative(_rule(0.0, 1.0))
