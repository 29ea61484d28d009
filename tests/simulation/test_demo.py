"""``ldpcollect demo`` end to end: a real uvicorn aggregator, SQLite, the SDK over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from statistics import NormalDist

import numpy as np
import pytest

from ldp_simulation.datasets import load_car
from ldp_simulation.demo import run_demo
from ldp_simulation.fleet import DemoOptions

pytestmark = pytest.mark.e2e

# 25 intervals at 95%: P(more than 5 miss) < 0.001 for honest intervals
ALPHA_MAX_MISSES = 5


def test_demo_json_has_the_documented_shape_and_honest_intervals() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ldp_simulation.cli",
            "demo",
            "--json",
            "--clients",
            "20000",
            "--seed",
            "11",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    result = json.loads(run.stdout)
    car = load_car()
    assert result["collection"] == "car-demo"
    assert result["n_reports"] == 1728 * 12  # whole copies of the data: ≥ 20,000 clients
    assert result["epsilon"] == pytest.approx(4.0)
    assert set(result["frequencies"]) == set(car.domains)
    misses = 0
    for name, block in result["frequencies"].items():
        assert block["values"] == car.domains[name]
        for key in ("true", "estimate", "stderr", "ci_low", "ci_high"):
            assert len(block[key]) == len(block["values"])
        true = np.array(block["true"])
        low, high = np.array(block["ci_low"]), np.array(block["ci_high"])
        misses += int(np.sum((true < low) | (true > high)))
        assert sum(block["true"]) == pytest.approx(1.0)
    assert misses <= ALPHA_MAX_MISSES
    assert result["coverage"] == pytest.approx(1 - misses / 25)
    assert result["seconds"] > 0
    nb = result["naive_bayes"]
    assert set(nb) >= {"accuracy", "baseline_accuracy", "epsilon", "budget"}
    assert nb["budget"] in ("split", "sample")
    assert 0.0 <= nb["accuracy"] <= 1.0
    numeric = result["numeric"]
    assert set(numeric) >= {"collection", "n_reports", "epsilon", "budget", "means"}
    assert numeric["n_reports"] == 20_000  # the first 20,000 records of the Adult extract
    assert numeric["budget"] == "sample" and numeric["epsilon"] == pytest.approx(4.0)
    for name, mean in numeric["means"].items():
        assert mean["mechanism"] == "piecewise"  # the whole ε = 4 on one attribute
        assert mean["ci_low"] < mean["mean"] < mean["ci_high"]
        # two means, Bonferroni at the statistical suite's α = 0.001 (two-sided)
        z = NormalDist().inv_cdf(1 - 0.001 / 2 / 2)
        assert abs(mean["mean"] - mean["true_mean"]) <= z * mean["stderr"], name
        assert mean["variance"] > 0 and 0 < mean["n_reports"] < numeric["n_reports"]
    assert numeric["frequencies"]["sex"]["values"] == ["Female", "Male"]
    itemsets = result["itemsets"]
    assert set(itemsets) >= {"p", "min_support", "by_length", "top"}
    assert itemsets["p"] == pytest.approx(0.9)
    for length, metrics in itemsets["by_length"].items():
        assert int(length) >= 1
        assert set(metrics) >= {"rho", "sigma_plus", "sigma_minus"}
    assert itemsets["top"]


def test_demo_estimates_shrink_with_epsilon() -> None:
    """Power check of the whole path: the same run at a smaller ε has larger errors."""
    loose = run_demo(DemoOptions(epsilon=8.0, clients=10_000, seed=5))
    tight = run_demo(DemoOptions(epsilon=1.0, clients=10_000, seed=5))
    for name in loose.attributes:
        assert np.all(
            np.array(tight.attributes[name].stderr) > np.array(loose.attributes[name].stderr)
        )
    assert tight.epsilon == pytest.approx(1.0)
