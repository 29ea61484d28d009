"""Place-squatting (#21 item 1): an anonymous client that loops ``POST .../participations``
and never reports must not stall a training job.

The squatter asks as fast as one thread can (well above the reported 4 requests/s) while
honest devices ask, compute and report. With the defence (tokens issued beyond the
places once a place lapsed unanswered, the round closing at its first ``round_size``
reports) the job finishes all its rounds within a bound; with it switched off
(``training_overissue=False``) the same attack holds round 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.aggregator.conftest import ADMIN, ADMIN_TOKEN, ANALYST, ANALYST_TOKEN, spec_payload
from tests.aggregator.training_helpers import answer, jobs_path, records, spec
from tests.engines import database_url

from ldp_aggregator import training_place_wait
from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.training import Participation, TrainingJob

HOLD_SECONDS = 2.0
"""``participation_seconds`` of the attacked job: a place lapses 2 to 4 s after issue."""

FINISH_WITHIN = 90.0
"""The bound on the defended job's three rounds of 20 (they take a few seconds here)."""

ROUND_PLACES = 20
"""Places in a round of the attacked job (``spec()``: 18 gradient and 2 loss reports)."""


@dataclass
class Tally:
    squatter_requests: int = 0
    honest_places: int = 0
    honest_refused: int = 0  # 429: every place held
    honest_late: int = 0  # 409 round-closed on the report: spent, not kept
    kept: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _app(tmp_path: Path, overissue: bool) -> Iterator[TestClient]:
    settings = Settings(
        database_url=database_url(tmp_path / "ldp.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        training_overissue=overissue,
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.post("/v1/collections", json=spec_payload(name="train"), headers=ADMIN)
        assert response.status_code == 201, response.text
        yield client


def _squat(client: TestClient, job_id: str, tally: Tally) -> None:
    """Ask for places in a loop with no body and never report."""
    url = f"{jobs_path()}/{job_id}/participations"
    while not tally.stop.is_set():
        response = client.post(url)
        with tally.lock:
            tally.squatter_requests += 1
        if response.status_code == 409:  # the job is done
            return


def _device_loop(client: TestClient, job_id: str, seed: int, tally: Tally) -> None:
    """An honest device after another: ask, compute, report; wait Retry-After on 429."""
    rng = seeded_rng(seed)
    url = f"{jobs_path()}/{job_id}/participations"
    for record in records(400, seed=seed):
        while not tally.stop.is_set():
            response = client.post(url)
            if response.status_code == 429:
                with tally.lock:
                    tally.honest_refused += 1
                time.sleep(float(response.headers["Retry-After"]))
                continue
            if response.status_code == 409:  # the job has finished
                return
            assert response.status_code == 201, response.text
            break
        else:
            return
        with tally.lock:
            tally.honest_places += 1
        result = answer(client, Participation.model_validate(response.json()), record, rng)
        with tally.lock:
            if result.status_code == 200:
                tally.kept += 1
            else:
                assert result.json()["type"].endswith("/round-closed"), result.text
                tally.honest_late += 1


def _attack(client: TestClient, seconds: float) -> tuple[TrainingJob, Tally, float]:
    """Start the squatter, let it fill round 0, then run four honest devices beside it
    until the job is done or ``seconds`` pass; the job as it stands and the tally."""
    response = client.post(
        jobs_path(), json=spec(participation_seconds=HOLD_SECONDS), headers=ANALYST
    )
    assert response.status_code == 201, response.text
    job_id = response.json()["id"]
    tally = Tally()
    squatter = threading.Thread(target=_squat, args=(client, job_id, tally))
    squatter.start()
    # every place of round 0 is the squatter's before a device asks (at most 30 s)
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        with tally.lock:
            if tally.squatter_requests >= ROUND_PLACES:
                break
        time.sleep(0.01)
    devices = [
        threading.Thread(target=_device_loop, args=(client, job_id, 10 + k, tally))
        for k in range(4)
    ]
    started = time.monotonic()
    for device in devices:
        device.start()
    job = TrainingJob.model_validate(client.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json())
    while job.status != "done" and time.monotonic() - started < seconds:
        time.sleep(0.25)
        job = TrainingJob.model_validate(
            client.get(f"{jobs_path()}/{job_id}", headers=ANALYST).json()
        )
    elapsed = time.monotonic() - started
    tally.stop.set()
    for thread in [squatter, *devices]:
        thread.join(timeout=30)
    return job, tally, elapsed


def test_a_job_finishes_while_a_squatter_loops_participations(tmp_path: Path) -> None:
    for client in _app(tmp_path, overissue=True):
        job, tally, elapsed = _attack(client, FINISH_WITHIN)
        assert job.status == "done", (job.round, tally)
        assert job.round == 3 and len(job.curve) == 3
        assert all(log.gradient_reports + log.loss_reports == 20 for log in job.curve)
        assert elapsed < FINISH_WITHIN
        # the attack ran at full speed (well over 4 requests/s) the whole time
        assert tally.squatter_requests / elapsed > 4
        # honest devices got places, and 60 of their reports made the model
        assert tally.kept == 60 and tally.honest_places >= 60


def test_without_the_defence_the_same_attack_holds_round_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check that fails if the defence does nothing: switched off, the squatter
    retakes each place as it lapses and the devices are refused. (A request does not
    wait for a place here: waiting, an honest device would win lapsed places as often as
    the squatter, which is not the defence.)"""
    monkeypatch.setattr(training_place_wait, "PLACE_WAIT_SECONDS", 0.0)
    for client in _app(tmp_path, overissue=False):
        job, tally, _ = _attack(client, 4 * HOLD_SECONDS)
        assert job.status == "running" and job.round == 0, tally
        assert tally.honest_refused > tally.honest_places


@pytest.mark.parametrize("overissue", [True, False])
def test_without_squatters_no_token_is_issued_beyond_the_places(
    tmp_path: Path, overissue: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Honest devices that answer in time never see an over-issued token: the 21st ask
    of a full round is refused (429, after its wait), with or without the defence."""
    monkeypatch.setattr(training_place_wait, "PLACE_WAIT_SECONDS", 0.2)
    for client in _app(tmp_path, overissue=overissue):
        response = client.post(jobs_path(), json=spec(participation_seconds=600), headers=ANALYST)
        url = f"{jobs_path()}/{response.json()['id']}/participations"
        assert all(client.post(url).status_code == 201 for _ in range(20))
        assert client.post(url).status_code == 429
