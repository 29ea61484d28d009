"""Heavy hitters of strings nobody listed, through the SDK and a real aggregator.

Devices submit their strings with :meth:`LDPClient.submit` (privatized on the device, one
4-byte ``pem`` report each); the analyst asks ``GET .../heavy-hitters`` over HTTP (the
SDK has no call for it yet) and then ``GET .../frequencies?values=`` of what it found.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import httpx
import numpy as np
import pytest

from ldp_client import LDPClient
from ldp_shared import candidates
from ldp_shared.errors import InvalidRecordError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

NAME = "searches"
SPEC = {
    "name": NAME,
    "epsilon": 4.0,
    "release": {"min_reports": 1000},
    # a fixed salt (else the server draws one) and seeded devices: a run is repeatable
    "attributes": [{"name": "query", "mechanism": "pem", "max_length": 6, "salt": "5eed" * 8}],
}
N = 40_000
"""Within the default upload burst of one collection (50,000 reports)."""
PLANTED = {"hello": 0.3, "日本": 0.15, "naïve": 0.1}


def records(n: int, seed: int) -> list[dict[str, Any]]:
    gen = np.random.default_rng(seed)
    column: list[str] = []
    for value, share in PLANTED.items():
        column += [value] * round(share * n)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    column += ["".join(gen.choice(letters, size=m)) for m in gen.integers(2, 7, n - len(column))]
    return [{"query": column[i]} for i in gen.permutation(n)]


def get(server: str, path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        f"{server}/v1/collections/{NAME}/{path}",
        params=params,
        headers={"Authorization": f"Bearer {ANALYST}"},
        timeout=60,
    )


def test_planted_strings_are_discovered_over_http(server: str) -> None:
    data = records(N, seed=41)
    held = {r["query"] for r in data}
    with LDPClient(server, token=ADMIN) as admin:
        config = admin.create_collection(SPEC)
    assert config.report_bytes == 4 and config.attribute("query").encoding == "prefix-hashed"
    with LDPClient(server, rng=seeded_rng(42)) as device:
        with pytest.raises(InvalidRecordError, match="over the maximum of 6"):
            device.submit(NAME, [{"query": "日本語"}])  # 9 bytes: refused on the device
        with pytest.raises(InvalidRecordError, match="empty string"):
            device.submit(NAME, [{"query": ""}])
        early = get(server, "heavy-hitters", attribute="query")
        assert early.status_code == 409, early.text  # nothing was sent
        summary = device.submit(NAME, data, batch_size=5_000)
    assert summary.accepted == N

    response = get(server, "heavy-hitters", attribute="query", k=10, confidence=0.99)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n_reports"] == N and body["mechanism"] == "pem"
    assert body["values"][:3] == list(PLANTED), body["values"]
    assert set(body["values"]) <= held
    assert all(unicodedata.is_normalized("NFC", v) for v in body["values"])
    assert 0 < body["threshold"] < min(PLANTED.values())
    for i, share in enumerate(PLANTED.values()):
        assert body["ci_low"][i] < share < body["ci_high"][i], (body["values"][i], share)

    named = get(
        server,
        "frequencies",
        attribute="query",
        values=candidates.join(body["values"]),
        confidence=0.99,
    )
    assert named.status_code == 200, named.text
    frequencies = named.json()
    assert frequencies["values"] == body["values"]
    for key in ("estimate", "stderr", "ci_low", "ci_high"):
        np.testing.assert_allclose(body[key], frequencies[key], rtol=1e-12, err_msg=key)

    refused = get(server, "heavy-hitters", attribute="query", k=0)
    assert refused.status_code == 422
    assert refused.json()["type"].endswith("/invalid-query")
