"""The SDK and label collections: bad records never leave the device; the naive Bayes
calls validate their arguments before any request (sync and async clients)."""

from __future__ import annotations

import pytest

from ldp_client import InvalidQueryError, InvalidRecordError
from ldp_client.naive_bayes import model_path, predict_naive_bayes_call
from ldp_shared.errors import ModelNotFoundError
from ldp_shared.schema import CollectionSpec
from ldp_simulation.datasets import load_car

from .conftest import MakeClient
from .fake_aggregator import ANALYST, FakeAggregator

CAR = load_car()
LABELLED = CollectionSpec.model_validate(
    {
        "name": "car-nb",
        "epsilon": 2.0,
        "budget": "sample",
        "label": "class",
        "attributes": [{"name": n, "domain": d} for n, d in CAR.domains.items()],
        "release": {"min_reports": 1},
    }
)


@pytest.fixture
def labelled(server: FakeAggregator) -> FakeAggregator:
    server.add(LABELLED)
    return server


def test_labelled_records_are_sent(make_client: MakeClient, labelled: FakeAggregator) -> None:
    summary = make_client().submit("car-nb", CAR.records[:100])
    assert summary.accepted == 100


def test_a_record_without_label_is_never_sent(
    make_client: MakeClient, labelled: FakeAggregator
) -> None:
    unlabelled = {k: v for k, v in CAR.records[3].items() if k != "class"}
    with pytest.raises(InvalidRecordError, match="record 1 has no label 'class'"):
        make_client().submit("car-nb", [CAR.records[0], unlabelled])
    assert labelled.sent("POST", "/reports") == []


def test_a_label_outside_its_classes_is_never_sent(
    make_client: MakeClient, labelled: FakeAggregator
) -> None:
    wrong = dict(CAR.records[3], **{"class": "superb"})
    with pytest.raises(InvalidRecordError, match="'superb' is not one of its classes"):
        make_client().submit("car-nb", [CAR.records[0], wrong])
    with pytest.raises(InvalidRecordError):
        make_client().privatize("car-nb", dict(CAR.records[0], **{"class": None}))
    assert labelled.sent("POST", "/reports") == []


def test_naive_bayes_arguments_are_checked_before_sending(
    make_client: MakeClient, labelled: FakeAggregator
) -> None:
    client = make_client(token=ANALYST)
    with pytest.raises(InvalidQueryError, match="alpha"):
        client.train_naive_bayes("car-nb", alpha=-1.0)
    with pytest.raises(InvalidQueryError, match="confidence"):
        client.train_naive_bayes("car-nb", confidence=1.5)
    with pytest.raises(ModelNotFoundError):
        client.get_naive_bayes("car-nb", "../../collections")
    with pytest.raises(InvalidQueryError):
        client.predict_naive_bayes("car-nb", "abcdefgh1234", {"buying": "low"})
    with pytest.raises(InvalidQueryError, match="records"):
        client.predict_naive_bayes("car-nb", "abcdefgh1234", [{"buying": 3}])
    with pytest.raises(InvalidQueryError):
        client.predict_naive_bayes("car-nb", "abcdefgh1234", [])
    assert [r for r in labelled.requests if "/models/" in r.url.path] == []


def test_call_shapes() -> None:
    call = predict_naive_bayes_call("car-nb", "abcdefgh1234", [{"buying": "low"}])
    assert call.method == "POST" and call.auth and call.idempotent
    assert call.path == "/v1/collections/car-nb/models/naive-bayes/abcdefgh1234/predict"
    assert model_path("car-nb", "A_b-c123") == "/v1/collections/car-nb/models/naive-bayes/A_b-c123"
