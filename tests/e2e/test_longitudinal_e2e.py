"""Longitudinal mechanisms end to end: SDK devices with ledgers report daily to a real
aggregator over HTTP; each ledger charges ε∞ per distinct value; the aggregator's
estimates cover the truth.

A population of fresh devices (one report each, made with the pure ``privatize_columns``)
gives the estimates their size; ledgered devices then report every day for a fortnight,
some with a value that never changes, some with one that changes twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ldp_client import LDPClient, Ledger, privatize_columns
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, device_key, z_bar

pytestmark = pytest.mark.e2e

APPS = ["mail", "maps", "music", "news", "photos"]
SHARE = np.array([0.35, 0.25, 0.2, 0.15, 0.05])
INFINITY = 3.0
SPEC = {
    "name": "daily",
    "epsilon": 4.0,
    "attributes": [
        {"name": "app", "mechanism": "l-grr", "domain": APPS, "permanent_epsilon": INFINITY},
        {"name": "minutes", "mechanism": "dbitflippm", "lo": 0, "hi": 100, "buckets": 5, "bits": 2},
    ],
    "release": {"min_reports": 100},
}
FRESH, DEVICES, DAYS = 4_000, 12, 14


def history(device: int) -> list[dict[str, Any]]:
    """A fortnight of one device: even devices never change; odd ones change twice."""
    apps = [APPS[device % 5]] * DAYS
    minutes = [10.0 + 20 * (device % 5)] * DAYS
    if device % 2:
        apps[5:] = [APPS[(device + 1) % 5]] * (DAYS - 5)
        apps[10:] = [APPS[device % 5]] * (DAYS - 10)  # back to the first value
        minutes[7:] = [95.0] * (DAYS - 7)
    return [{"app": a, "minutes": m} for a, m in zip(apps, minutes, strict=True)]


def test_daily_devices_over_http(server: str, tmp_path: Path) -> None:
    with LDPClient(server, token=ADMIN) as admin:
        config = admin.create_collection(SPEC)
    gen = np.random.default_rng(11)
    columns = {
        "app": gen.choice(APPS, size=FRESH, p=SHARE),
        "minutes": gen.uniform(0, 100, size=FRESH),
    }
    with LDPClient(server) as fleet:
        reports = privatize_columns(config, columns, rng=seeded_rng(12))
        assert fleet.submit_reports("daily", reports).accepted == FRESH

    for device in range(DEVICES):
        path = tmp_path / f"device-{device}.sqlite3"
        with (
            Ledger(path, memo_key=device_key(device)) as ledger,
            LDPClient(server, ledger=ledger, rng=seeded_rng(device)) as phone,
        ):
            for record in history(device):
                assert phone.submit("daily", [record]).accepted == 1
            assert phone.ledger is not None
            spent = phone.ledger.spending("daily")
        assert spent.reports == DAYS
        apps_seen = len({r["app"] for r in history(device)})
        with Ledger(path) as reopened:
            minutes_keys = reopened.spending("daily").values - apps_seen
        assert 1 <= minutes_keys <= 2  # one bucket vector, or two after the change
        expected = apps_seen * INFINITY + minutes_keys * config.attribute("minutes").epsilon
        assert spent.epsilon == pytest.approx(expected, rel=1e-9)
        assert spent.epsilon < DAYS * config.epsilon / 4  # far below the naive 14 × ε

    n = FRESH + DEVICES * DAYS
    with LDPClient(server, token=ANALYST) as analyst:
        app = analyst.frequencies("daily", "app")
        minutes = analyst.frequencies("daily", "minutes")
    assert app.n_reports == minutes.n_reports == n
    assert app.values == APPS and minutes.values[0] == "[0, 20)"
    true_app = np.array([np.sum(columns["app"] == a) for a in APPS], dtype=float)
    true_minutes = np.bincount((columns["minutes"] // 20).astype(int), minlength=5).astype(float)
    for device in range(DEVICES):
        for record in history(device):
            true_app[APPS.index(record["app"])] += 1
            true_minutes[min(int(record["minutes"] // 20), 4)] += 1
    bar = z_bar(len(APPS) + len(minutes.values))  # every value of both attributes
    for result, truth in ((app, true_app / n), (minutes, true_minutes / n)):
        z = (np.asarray(result.estimate) - truth) / np.asarray(result.stderr)
        assert np.all(np.abs(z) < bar), z
    # power: the same check rejects a uniform share of apps (what a broken perturbation
    # tends to; the minutes are near uniform by design)
    app_z = (np.asarray(app.estimate) - 1 / len(APPS)) / np.asarray(app.stderr)
    assert np.any(np.abs(app_z) >= bar), app_z
