"""``ldpcollect demo`` also trains naive Bayes on the car data and scores a held-out split."""

from __future__ import annotations

import json

import pytest

from ldp_simulation.demo import format_table, run_demo
from ldp_simulation.demo_naive_bayes import NB_COLLECTION
from ldp_simulation.fleet import DemoOptions

pytestmark = pytest.mark.e2e

NON_PRIVATE_ACCURACY = 298 / 346  # CategoricalNB(alpha=1) on the fixed split (see below)


def test_demo_reports_naive_bayes_next_to_the_non_private_baseline() -> None:
    result = run_demo(DemoOptions(epsilon=4.0, clients=10_000, seed=7, budget="split"))
    document = json.loads(json.dumps(result.to_json()))
    block = document["naive_bayes"]
    assert {"accuracy", "baseline_accuracy", "epsilon", "budget"} <= set(block)
    assert block["budget"] == "split" and block["epsilon"] == pytest.approx(4.0)
    assert block["collection"] == NB_COLLECTION and block["mechanism"] == "oue"
    assert block["n_train_records"] == 1382 and block["n_test"] == 346
    assert block["n_reports"] == 1382 * 8  # whole copies of the training split only
    assert 0.0 <= block["accuracy"] <= 1.0
    # the baseline is deterministic: the same split, no noise
    assert block["baseline_accuracy"] == pytest.approx(NON_PRIVATE_ACCURACY)
    # the frequency part is unchanged: every attribute, class included
    assert "class" in document["frequencies"] and document["collection"] == "car-demo"
    table = format_table(result)
    assert "naive Bayes on the label 'class'" in table
    assert f"{block['accuracy']:.1%}" in table and f"{NON_PRIVATE_ACCURACY:.1%}" in table
