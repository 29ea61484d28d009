"""The naive Bayes part of ``ldpcollect demo``: a label collection, a model, its accuracy.

Against a running aggregator: the bundled car data is split once (a fixed seeded split,
:func:`ldp_shared.analyses.naive_bayes.holdout_split`: 80% training, 20% held out); only the
training records are replicated, one simulated client each, and reported through the SDK
over HTTP to a collection whose label is ``class`` (features reported jointly with the
class, Yilmaz et al. 2019). The analyst trains a model over HTTP, classifies the held-out
records over HTTP, and the demo compares its accuracy with a non-private naive Bayes
(scikit-learn's ``CategoricalNB``, or the identical exact-count model when scikit-learn
is not installed) fit on the true training records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ldp_client import LDPClient
from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.collection import build_config
from ldp_shared.mechanisms.base import DEFAULT_MECHANISM, spec_class
from ldp_shared.schema import CollectionSpec
from ldp_simulation.datasets import load_car
from ldp_simulation.fleet import ANALYSIS_TIMEOUT, DemoOptions, replicate, report_records
from ldp_simulation.progress import Progress

NB_COLLECTION = "car-demo-nb"
LABEL = "class"
SEED_OFFSET = 1_000_003  # the NB clients' noise differs from the frequency clients'


@dataclass(frozen=True)
class NaiveBayesDemo:
    """What ``demo --json`` reports under ``"naive_bayes"``."""

    accuracy: float
    baseline_accuracy: float
    epsilon: float
    budget: str
    mechanism: str
    baseline: str
    collection: str
    model_id: str
    n_reports: int
    n_train_records: int
    n_test: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def naive_bayes_spec(options: DemoOptions) -> CollectionSpec:
    """The label collection: the demo's ε, its budget mode, and the demo's mechanism if it
    can report features jointly with the class (unary encoding), else the default (OUE)."""
    car = load_car()
    joins_label = spec_class(options.mechanism).joins_label
    mechanism = options.mechanism if joins_label else DEFAULT_MECHANISM
    return CollectionSpec.model_validate(
        {
            "name": NB_COLLECTION,
            "description": f"ldpcollect demo, naive Bayes: {car.citation}",
            "epsilon": options.epsilon,
            "budget": options.budget,
            "label": LABEL,
            "attributes": [
                {"name": name, "domain": domain, "mechanism": mechanism}
                for name, domain in car.domains.items()
            ],
            "release": {"min_reports": 1000},
        }
    )


def baseline_accuracy(
    spec: CollectionSpec, train: Sequence[dict[str, str]], test: Sequence[dict[str, str]]
) -> tuple[float, str]:
    """Non-private naive Bayes (α = 1) on the true training records, scored on ``test``."""
    config = build_config(spec)
    try:
        from sklearn.naive_bayes import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            CategoricalNB,
        )
    except ImportError:
        model = nb.non_private_model(config, train, alpha=1.0)
        return nb.accuracy(model, test), "exact-count naive Bayes, alpha=1 (= CategoricalNB)"
    features = [a for a in config.attributes if a.is_feature]
    assert config.label is not None
    classes = config.label.domain

    def encode(records: Sequence[dict[str, str]]) -> np.ndarray[Any, Any]:
        return np.array([[a.values.index(r[a.name]) for a in features] for r in records])

    estimator = CategoricalNB(alpha=1.0, min_categories=[a.d for a in features])
    estimator.fit(encode(train), [classes.index(r[LABEL]) for r in train])
    predicted = estimator.predict(encode(test))
    hits = sum(classes[int(c)] == r[LABEL] for c, r in zip(predicted, test, strict=True))
    return hits / len(test), "scikit-learn CategoricalNB(alpha=1)"


def simulate_naive_bayes(
    base_urls: Sequence[str],
    admin_token: str,
    analyst_token: str,
    options: DemoOptions,
    progress: Progress | None = None,
) -> NaiveBayesDemo:
    """Report the training split through the SDK, train over HTTP, score the held-out split."""
    car = load_car()
    train, test = nb.holdout_split(car.records)
    records = replicate(train, options.clients)
    spec = naive_bayes_spec(options)
    report_records(base_urls, admin_token, spec, records, options, progress, SEED_OFFSET)
    with LDPClient(base_urls[0], token=analyst_token, timeout=ANALYSIS_TIMEOUT) as analyst:
        model = analyst.train_naive_bayes(NB_COLLECTION)
        predicted = analyst.predict_naive_bayes(NB_COLLECTION, model.id, test).predictions
    hits = sum(p.predicted == r[LABEL] for p, r in zip(predicted, test, strict=True))
    baseline, baseline_name = baseline_accuracy(spec, train, test)
    return NaiveBayesDemo(
        accuracy=hits / len(test),
        baseline_accuracy=baseline,
        epsilon=model.epsilon,
        budget=model.budget,
        mechanism=spec.attributes[0].mechanism,
        baseline=baseline_name,
        collection=NB_COLLECTION,
        model_id=model.id,
        n_reports=model.n_reports,
        n_train_records=len(train),
        n_test=len(test),
    )


def format_naive_bayes(block: dict[str, Any], requested_mechanism: str | None = None) -> list[str]:
    """The demo table's naive Bayes lines, from the ``"naive_bayes"`` JSON block.

    ``requested_mechanism`` is the demo's ``--mechanism``: when the collection could not
    use it (:func:`naive_bayes_spec`), the heading says so and why.
    """
    mechanism = block["mechanism"].upper()
    if requested_mechanism is not None and requested_mechanism != block["mechanism"]:
        mechanism += (
            f" (not {requested_mechanism.upper()}: only unary encoding reports a value"
            " together with its class)"
        )
    rows = [
        ("ldpcollect, trained from the perturbed reports", f"{block['accuracy']:.1%}"),
        ("non-private: " + block["baseline"], f"{block['baseline_accuracy']:.1%}"),
    ]
    width = max(len(name) for name, _ in rows)
    return [
        f"naive Bayes on the label '{LABEL}' ({block['n_reports']:,} clients reported the "
        f"{block['n_train_records']:,} training records jointly with their class, "
        f"{mechanism}, budget '{block['budget']}', ε = {block['epsilon']:.3g} per record)",
        f"  {'model':<{width}} accuracy on the {block['n_test']} held-out records",
        *(f"  {name:<{width}} {accuracy}" for name, accuracy in rows),
    ]
