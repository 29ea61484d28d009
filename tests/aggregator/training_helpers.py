"""A small training job and simulated devices for the training-job tests (no SDK I/O: the
device's computation is :mod:`ldp_client.training`, driven here over a test client)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ldp_client import training
from ldp_shared.wire.reports import encode_bits
from ldp_shared.wire.training import Participation

LAYOUT: dict[str, Any] = {
    "numeric": [{"name": "x1", "lo": 0.0, "hi": 10.0}, {"name": "x2", "lo": -5.0, "hi": 5.0}],
    "categorical": [{"name": "color", "domain": ["red", "green", "blue"]}],
    "label": "y",
    "positive": "yes",
    "negative": "no",
}
COLORS = ["red", "green", "blue"]


def spec(**changes: Any) -> dict[str, Any]:
    """Three rounds of 20 reports (2 of them losses) with sampled Piecewise at ε = 2."""
    values: dict[str, Any] = {
        "layout": LAYOUT,
        "mechanism": "sampled-piecewise",
        "epsilon": 2.0,
        "round_size": 20,
        "rounds": 3,
        "loss_share": 0.1,
    }
    values.update(changes)
    return values


def records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Records whose label follows ``x1 + x2 + 3·[red] > 5`` (with 10% flipped)."""
    gen = np.random.default_rng(seed)
    x1, x2 = gen.uniform(0, 10, n), gen.uniform(-5, 5, n)
    color = gen.integers(0, 3, n)
    label = (x1 + x2 + 3.0 * (color == 0) > 5.0) ^ (gen.random(n) < 0.1)
    return [
        {"x1": float(a), "x2": float(b), "color": COLORS[int(c)], "y": "yes" if y else "no"}
        for a, b, c, y in zip(x1, x2, color, label, strict=True)
    ]


class Http(Protocol):
    def post(self, url: str, **kwargs: Any) -> Any: ...
    def put(self, url: str, **kwargs: Any) -> Any: ...


def jobs_path(collection: str = "train") -> str:
    return f"/v1/collections/{collection}/training-jobs"


def ask(http: Http, job_id: str, collection: str = "train") -> Participation:
    """A participation (the answer must be 201)."""
    response = http.post(f"{jobs_path(collection)}/{job_id}/participations")
    assert response.status_code == 201, response.text
    return Participation.model_validate(response.json())


def answer(
    http: Http, participation: Participation, record: dict[str, Any], rng: np.random.Generator
) -> Any:
    """Send the device's report for ``participation``; the raw response."""
    mechanisms = training.rebuild_mechanisms(participation)
    report = training.make_report(participation, mechanisms, record, rng)
    url = f"{jobs_path(participation.collection)}/{participation.job}/participations"
    return http.put(f"{url}/{participation.token}", json={"report": encode_bits(report)})


def take_part(
    http: Http, job_id: str, record: dict[str, Any], rng: np.random.Generator
) -> dict[str, Any]:
    """One device, start to end; the (200) result."""
    response = answer(http, ask(http, job_id), record, rng)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result
