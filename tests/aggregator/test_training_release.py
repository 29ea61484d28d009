"""A device gives its place back (``DELETE .../participations/{token}``): the place is
free for another device at once, the token is deleted and nothing else is kept, a used
token cannot be given back, and a given-back place is not a lapsed one (no over-issue)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from tests.aggregator.conftest import ANALYST, TestClient
from tests.aggregator.training_helpers import answer, ask, jobs_path, records, spec

from ldp_aggregator import training_place_wait, training_rounds
from ldp_aggregator.storage.training import training_reports, training_tokens
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import Participation

pytestmark = pytest.mark.usefixtures("short_place_wait")


def full_round(train: TestClient) -> tuple[str, list[Participation]]:
    """A job whose 20 places of round 0 are all held, for 600 s."""
    created = train.post(jobs_path(), json=spec(participation_seconds=600), headers=ANALYST)
    assert created.status_code == 201, created.text
    job_id = str(created.json()["id"])
    return job_id, [ask(train, job_id) for _ in range(20)]


def release(train: TestClient, participation: Participation) -> Any:
    url = f"{jobs_path()}/{participation.job}/participations/{participation.token}"
    return train.delete(url)


def tokens(engine: Engine) -> int:
    with engine.connect() as connection:
        query = select(func.count()).select_from(training_tokens)
        return int(connection.execute(query).scalar_one())


def test_a_place_given_back_is_free_at_once(train: TestClient, engine: Engine) -> None:
    job_id, held = full_round(train)
    refused = train.post(f"{jobs_path()}/{job_id}/participations")
    assert refused.status_code == 429  # every place is held (the control)
    gone = release(train, held[3])
    assert gone.status_code == 204 and gone.content == b""
    assert tokens(engine) == 19  # the token is deleted: nothing of it is kept
    again = ask(train, job_id)  # the freed place, without waiting for a hold to end
    assert again.round == 0
    # the given-back token is unknown now: a repeat, or a report on it, is a 404
    assert release(train, held[3]).status_code == 404
    late = answer(train, held[3], records(1)[0], seeded_rng(1))
    assert late.status_code == 404
    with engine.connect() as connection:
        kept = select(func.count()).select_from(training_reports)
        assert connection.execute(kept).scalar_one() == 0


def test_a_given_back_place_is_not_a_lapse(train: TestClient) -> None:
    job_id, held = full_round(train)
    assert release(train, held[0]).status_code == 204
    ask(train, job_id)
    # the round is full again with live holds: no token beyond the places is issued
    assert train.post(f"{jobs_path()}/{job_id}/participations").status_code == 429


def test_a_used_token_cannot_be_given_back(train: TestClient, engine: Engine) -> None:
    job_id, held = full_round(train)
    assert answer(train, held[0], records(1)[0], seeded_rng(2)).status_code == 200
    refused = release(train, held[0])
    assert refused.status_code == 409
    assert refused.json()["type"].endswith("/already-participated")
    assert tokens(engine) == 20
    job = train.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json()
    assert job["received"] == 1  # the report still counts


def test_an_unknown_token_or_job_is_not_found(train: TestClient) -> None:
    job_id, held = full_round(train)
    other = held[0].model_copy(update={"token": "A" * 43})
    assert release(train, other).status_code == 404
    elsewhere = held[0].model_copy(update={"job": "B" * 22})
    assert release(train, elsewhere).status_code == 404
    assert train.delete(f"{jobs_path()}/{job_id}/participations/short").status_code == 422


def test_a_waiting_request_passes_the_upload_limits_once(
    train: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(training_place_wait, "PLACE_WAIT_SECONDS", 0.6)
    monkeypatch.setattr(training_place_wait, "POLL_SECONDS", 0.1)  # it asks several times
    job_id, _ = full_round(train)
    limits = train.app.state.ldp.upload_limits  # type: ignore[attr-defined]
    admitted: list[str] = []
    admit = limits.admit

    def counted(collection: str, reports: int, address: str | None) -> Any:
        admitted.append(collection)
        return admit(collection, reports, address)

    monkeypatch.setattr(limits, "admit", counted)
    asks: list[int] = []
    issue_in = training_rounds.issue_in

    def counted_issue(*args: Any, **kwargs: Any) -> bytes:
        asks.append(1)
        return issue_in(*args, **kwargs)

    monkeypatch.setattr(training_rounds, "issue_in", counted_issue)
    refused = train.post(f"{jobs_path()}/{job_id}/participations")
    assert refused.status_code == 429
    assert len(asks) >= 3  # it asked again while it waited (the control)
    assert admitted == ["train"]  # but the upload limits counted it once
