"""The SDK against a real aggregator (uvicorn) with a tight upload limit: it waits the
``Retry-After`` it is sent and resends the same reports; over a minute it gives up."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ldp_client import LDPClient, RateLimitedError
from ldp_shared.wire.releases import FrequencyResult

from .conftest import ADMIN, ANALYST, e2e_settings, serving

SPEC = {
    "name": "survey",
    "epsilon": 2.0,
    "attributes": [{"name": "color", "domain": ["red", "green", "blue"], "mechanism": "oue"}],
    "release": {"min_reports": 1},
}
RECORDS = [{"color": "red"}, {"color": "green"}, {"color": "blue"}, {"color": "red"}]


def n_reports(url: str) -> int:
    with LDPClient(url, token=ANALYST) as analyst:
        result: FrequencyResult = analyst.frequencies("survey", "color")
        return result.n_reports


def test_the_sdk_waits_retry_after_and_resends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 reports at once, then 1 per second: the second upload (2 reports) waits 2 s
    settings = e2e_settings(tmp_path, upload_rate_per_collection=1.0, upload_burst_per_collection=4)
    waits: list[float] = []
    real_sleep = time.sleep

    def recording_sleep(seconds: float) -> None:
        waits.append(seconds)
        real_sleep(seconds)

    with serving(settings) as url:
        monkeypatch.setattr("ldp_client.client.time.sleep", recording_sleep)  # once started
        with LDPClient(url, token=ADMIN) as admin:
            admin.create_collection(SPEC)
        with LDPClient(url, retries=2) as device:
            assert device.submit("survey", RECORDS).accepted == 4
            second = device.submit("survey", RECORDS[:2])
        assert second.accepted == 2 and second.duplicate == 0
        assert waits == [2.0]
        assert n_reports(url) == 6


def test_the_sdk_gives_up_at_once_when_told_to_wait_long(tmp_path: Path) -> None:
    settings = e2e_settings(
        tmp_path, upload_rate_per_collection=0.001, upload_burst_per_collection=4
    )
    with serving(settings) as url:
        with LDPClient(url, token=ADMIN) as admin:
            admin.create_collection(SPEC)
        with LDPClient(url, retries=3) as device:
            device.submit("survey", RECORDS)
            started = time.monotonic()
            with pytest.raises(RateLimitedError) as info:
                device.submit("survey", RECORDS[:1])
            assert time.monotonic() - started < 5
        assert info.value.retry_after is not None and info.value.retry_after > 900
        assert n_reports(url) == 4
