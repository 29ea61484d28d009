"""L-OSUE end to end: an analyst creates the collection through the SDK, a fleet of fresh
devices and a few ledgered devices reporting daily send over HTTP to a real aggregator;
each ledger charges ε∞ per distinct value; the estimates cover the truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldp_client import LDPClient, Ledger, privatize_columns
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, device_key, z_bar

pytestmark = pytest.mark.e2e

PAGES = [f"page-{i}" for i in range(30)]
SHARE = np.r_[np.full(3, 0.2), np.full(27, 0.4 / 27)]
INFINITY = 4.0
SPEC = {
    "name": "pages",
    "epsilon": 1.0,
    "attributes": [
        {"name": "page", "mechanism": "l-osue", "domain": PAGES, "permanent_epsilon": INFINITY}
    ],
    "release": {"min_reports": 100},
}
FRESH, DEVICES, DAYS = 5_000, 6, 20


def test_daily_devices_over_http(server: str, tmp_path: Path) -> None:
    with LDPClient(server, token=ADMIN) as admin:
        config = admin.create_collection(SPEC)
    gen = np.random.default_rng(13)
    fresh = gen.choice(PAGES, size=FRESH, p=SHARE)
    with LDPClient(server) as fleet:
        reports = privatize_columns(config, {"page": fresh}, rng=seeded_rng(14))
        assert fleet.submit_reports("pages", reports).accepted == FRESH
    true = np.array([np.sum(fresh == p) for p in PAGES], dtype=float)
    for device in range(DEVICES):
        days = [PAGES[device]] * 12 + [PAGES[device + 10]] * (DAYS - 12)  # one change
        with (
            Ledger(tmp_path / f"d{device}.sqlite3", memo_key=device_key(device)) as ledger,
            LDPClient(server, ledger=ledger, rng=seeded_rng(device)) as phone,
        ):
            for page in days:
                assert phone.submit("pages", [{"page": page}]).accepted == 1
            assert phone.ledger is not None
            spent = phone.ledger.spending("pages")
        assert (spent.reports, spent.values) == (DAYS, 2)
        assert spent.epsilon == pytest.approx(2 * INFINITY, rel=1e-9)  # not 20 × ε = 20
        for page in days:
            true[PAGES.index(page)] += 1
    n = FRESH + DEVICES * DAYS
    with LDPClient(server, token=ANALYST) as analyst:
        result = analyst.frequencies("pages", "page")
    assert result.n_reports == n and result.values == PAGES
    estimate, stderr = np.asarray(result.estimate), np.asarray(result.stderr)
    z = (estimate - true / n) / stderr
    assert np.all(np.abs(z) < z_bar(len(PAGES))), z
    # power: the same check rejects a uniform share (what a broken perturbation tends to)
    assert np.any(np.abs((estimate - 1 / len(PAGES)) / stderr) >= z_bar(len(PAGES)))
