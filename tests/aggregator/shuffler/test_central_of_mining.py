"""Frequent itemsets and kNN classifications of a shuffled collection carry its central
guarantee (``central``), as every other release does; those of an unshuffled collection
of the same spec, made from the same reports, are the same answer without the member.

The shuffler's part is played by hand here (seal each report to the published key, post
the blobs as batches with the shuffler's token): what is tested is the aggregator's
answer, the forwarding is tested in test_shuffled_path.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ldp_shared.analyses.knn.collection import collection_spec
from ldp_shared.central import released_central
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.knn_cells import KnnCells, device_columns
from ldp_shared.rand import seeded_rng
from ldp_simulation.baskets import basket_lists, item_names

from ..conftest import ADMIN, ANALYST, report_dicts
from .conftest import Parties
from .sealing_helpers import submit_sealed

ITEMS = item_names(6)
KEEP = 0.62
"""Six items kept with probability 0.62: a basket's ε₀ = 6 ln(0.62/0.38) ≈ 2.94, which
a few thousand shuffled reports amplify."""
CELLS = KnnCells.model_validate(
    {
        "features": [
            {"name": "height", "lo": 100, "hi": 220, "centre": 170, "spread": 10},
            {"name": "colour", "domain": ["red", "green", "blue"]},
        ],
        "tables": 2,
        "bits": 4,
    }
)


def _pair(client: TestClient, spec: dict[str, Any], packed: np.ndarray) -> CollectionConfig:
    """``shuffled`` and ``direct`` collections of ``spec`` holding the same reports; the
    shuffled one's config."""
    configs = {}
    for name, shuffled in (("shuffled", True), ("direct", False)):
        body = {**spec, "name": name, **({"shuffled": True} if shuffled else {})}
        created = client.post("/v1/collections", json=body, headers=ADMIN)
        assert created.status_code == 201, created.text
        configs[name] = CollectionConfig.model_validate(created.json())
    assert submit_sealed(client, "shuffled", report_dicts(configs["shuffled"], packed)) == len(
        packed
    )
    direct = {"reports": report_dicts(configs["direct"], packed)}
    answer = client.post("/v1/collections/direct/reports", json=direct)
    assert answer.status_code == 200 and answer.json()["accepted"] == len(packed), answer.text
    return configs["shuffled"]


def _expected_central(config: CollectionConfig, n: int) -> dict[str, Any]:
    central = released_central(config.epsilon, config.delta, n)
    assert central is not None
    assert central.epsilon < 0.8 * config.epsilon  # amplified, so the test can tell
    return central.model_dump()


def test_itemsets_of_a_shuffled_collection_state_the_central_guarantee(
    parties: Parties,
) -> None:
    client, n = parties.aggregator, 3000
    rng = np.random.default_rng(5)
    truth = rng.random((n, len(ITEMS))) < np.array([0.7, 0.6, 0.5, 0.3, 0.2, 0.1])
    columns = {"basket": basket_lists(np.packbits(truth, axis=1), ITEMS)}
    attribute = {"name": "basket", "domain": ITEMS, "mechanism": "mask", "keep_probability": KEEP}
    spec = {"attributes": [attribute], "release": {"min_reports": 100}}
    probe = CollectionConfig.model_validate(
        client.post("/v1/collections", json={**spec, "name": "probe"}, headers=ADMIN).json()
    )
    packed = Privatizer(probe).privatize_columns(columns, rng=seeded_rng(8))
    config = _pair(client, spec, packed)
    query = {"min_support": 0.2, "max_size": 2}
    jobs = {
        name: client.post(f"/v1/collections/{name}/itemsets", json=query, headers=ANALYST)
        for name in ("shuffled", "direct")
    }
    assert all(j.status_code == 200 for j in jobs.values()), jobs["shuffled"].text
    shuffled, direct = (jobs[name].json()["result"] for name in ("shuffled", "direct"))
    assert "central" not in direct
    assert shuffled["central"] == _expected_central(config, n)
    assert shuffled["central"]["n"] == shuffled["n_reports"] == n
    assert shuffled["itemsets"] == direct["itemsets"] and shuffled["rules"] == direct["rules"]
    # stored with the job: the polled result says the same
    polled = client.get(f"/v1/collections/shuffled/itemsets/{jobs['shuffled'].json()['id']}")
    assert polled.status_code == 401  # analyst only
    polled = client.get(
        f"/v1/collections/shuffled/itemsets/{jobs['shuffled'].json()['id']}", headers=ANALYST
    )
    assert polled.json()["result"]["central"] == shuffled["central"]


def test_knn_classifications_of_a_shuffled_collection_state_the_central_guarantee(
    parties: Parties,
) -> None:
    client, n = parties.aggregator, 4000
    spec = collection_spec("people", CELLS, 3.0, "tall", ["no", "yes"], 500)
    body = spec.model_dump(mode="json", exclude_none=True)
    rng = seeded_rng(8)
    points = np.column_stack([rng.uniform(140, 200, n), rng.integers(0, 3, n)])
    labels = ["yes" if h > 175 else "no" for h in points[:, 0]]
    probe = client.post("/v1/collections", json=body, headers=ADMIN)
    assert probe.status_code == 201, probe.text
    packed = Privatizer(CollectionConfig.model_validate(probe.json())).privatize_columns(
        device_columns(CELLS, "tall", points, labels), seeded_rng(9)
    )
    config = _pair(client, body, packed)
    query = {"points": [[150, 0], [195, 2]], "k": 50}
    answers = {
        name: client.post(f"/v1/collections/{name}/knn/classify", json=query, headers=ANALYST)
        for name in ("shuffled", "direct")
    }
    assert all(a.status_code == 200 for a in answers.values()), answers["shuffled"].text
    shuffled, direct = answers["shuffled"].json(), answers["direct"].json()
    assert "central" not in direct
    assert shuffled.pop("central") == _expected_central(config, n)
    assert shuffled["predictions"] == direct["predictions"] and shuffled["n_reports"] == n
    assert config.epsilon == pytest.approx(3.0)
