"""The car data set and the collection specs the naive Bayes tests share."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.naive_bayes import CategoricalNB

from ldp_shared.schema import CollectionSpec
from ldp_simulation.datasets import load_car

CAR = load_car()
FEATURES = [name for name in CAR.domains if name != "class"]
CLASSES = CAR.domains["class"]


def domain(d: int) -> list[str]:
    return [f"v{i}" for i in range(d)]


def car_spec(budget: str = "split", mechanism: str = "oue", **changes: Any) -> CollectionSpec:
    payload: dict[str, Any] = {
        "name": "car-nb",
        "epsilon": 2.0,
        "budget": budget,
        "label": "class",
        "attributes": [
            {"name": name, "domain": domain, "mechanism": mechanism}
            for name, domain in CAR.domains.items()
        ],
        "release": {"min_reports": 100},
    }
    payload.update(changes)
    return CollectionSpec.model_validate(payload)


def sample_spec(*attributes: dict[str, Any]) -> CollectionSpec:
    """Collection ``s`` of ε = 1 under the ``sample`` budget with the given attributes."""
    return CollectionSpec.model_validate(
        {"name": "s", "epsilon": 1.0, "budget": "sample", "attributes": list(attributes)}
    )


def matrix(records: list[dict[str, str]]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    x = np.array([[CAR.domains[f].index(r[f]) for f in FEATURES] for r in records])
    y = np.array([CLASSES.index(r["class"]) for r in records])
    return x, y


def categorical_nb(records: list[dict[str, str]], alpha: float) -> Any:
    """scikit-learn's ``CategoricalNB(alpha)`` fit on the car ``records`` (the reference)."""
    x, y = matrix(records)
    reference = CategoricalNB(alpha=alpha, min_categories=[len(CAR.domains[f]) for f in FEATURES])
    reference.fit(x, y)
    return reference
