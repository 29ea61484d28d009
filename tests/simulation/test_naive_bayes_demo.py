"""``ldpcollect demo`` also trains naive Bayes on the car data and scores a held-out split;
its lines in the table keep their columns and say which mechanism reported."""

from __future__ import annotations

import json

import pytest

from ldp_simulation.demo import format_table, run_demo
from ldp_simulation.demo_naive_bayes import NB_COLLECTION, format_naive_bayes, naive_bayes_spec
from ldp_simulation.fleet import DemoOptions

NON_PRIVATE_ACCURACY = 298 / 346  # CategoricalNB(alpha=1) on the fixed split (see below)


@pytest.mark.e2e
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


BLOCK = {
    "n_reports": 100_000,
    "n_train_records": 1_382,
    "mechanism": "oue",
    "budget": "sample",
    "epsilon": 4.0,
    "n_test": 346,
    "accuracy": 0.845,
    "baseline_accuracy": 0.861,
}


@pytest.mark.parametrize(
    "baseline",
    ["scikit-learn CategoricalNB(alpha=1)", "exact-count naive Bayes, alpha=1 (= CategoricalNB)"],
)
def test_the_accuracies_line_up_whatever_the_baseline_is_called(baseline: str) -> None:
    lines = format_naive_bayes({**BLOCK, "baseline": baseline})
    header, ours, theirs = lines[1:]
    column = header.index("accuracy on")
    assert ours.index("84.5%") == theirs.index("86.1%") == column
    assert theirs[:column].rstrip().endswith(baseline)


@pytest.mark.parametrize(("requested", "used"), [("grr", "oue"), ("sue", "sue"), ("oue", "oue")])
def test_the_heading_says_when_the_mechanism_asked_for_is_not_used(
    requested: str, used: str
) -> None:
    spec = naive_bayes_spec(DemoOptions(epsilon=4.0, clients=10_000, mechanism=requested))
    assert {a.mechanism for a in spec.attributes} == {used}
    block = {**BLOCK, "mechanism": used, "baseline": "scikit-learn CategoricalNB(alpha=1)"}
    heading = format_naive_bayes(block, requested)[0]
    assert f", {used.upper()}" in heading
    explained = f"(not {requested.upper()}: only unary encoding reports a value together"
    assert (explained in heading) == (requested != used)
