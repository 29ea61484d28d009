"""Coverage of the naive Bayes count intervals at n = 100 (score, the released default,
against the normal ``count ± z·stderr`` they replaced).

A label collection with one feature of 6 values and 2 classes (OUE, ε = 6, ``split``)
holds 100 records: 8 of the 12 joint cells have 2 records each, 4 have 21. Each of
``RUNS`` independent collections goes through the real path (``Privatizer`` → packed
reports → ``decode_reports`` → ``build_model``), and every released interval (12 joint
counts, 2 class counts) is checked against the true count.

* The score interval's coverage of every count is not significantly below 95 %
  (one-sided z-test over the runs, i.e. at least 95 % less the Monte-Carlo tolerance).
* Power: the same test rejects the normal interval on the same runs in each 2-record
  cell, where its exact coverage (summed over the cell count's distribution
  beforehand) is 80 %, so the design, not the seed, makes the rejection certain.

α = ALPHA for the test, Bonferroni over its sub-tests.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.kernel import z_value
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.naive_bayes import NaiveBayesTrainRequest

from ._stats import ALPHA, assert_z_power
from .test_score_interval import NOMINAL, exact_normal_coverage, one_sided_short

pytestmark = pytest.mark.statistical

SEED = 19_050_104
RUNS = 2_000
N = 100
VALUES = [f"v{i}" for i in range(6)]
CLASSES = ["a", "b"]
# true joint counts, class-major (row c, column v): eight cells of 2, four of 21
TRUTH = np.array([[21, 21, 2, 2, 2, 2], [21, 21, 2, 2, 2, 2]])


def config() -> CollectionConfig:
    return build_config(
        CollectionSpec.model_validate(
            {
                "name": "nb-small",
                "epsilon": 6.0,
                "budget": "split",
                "label": "y",
                "attributes": [
                    {"name": "x", "domain": VALUES, "mechanism": "oue"},
                    {"name": "y", "domain": CLASSES, "mechanism": "oue"},
                ],
                "release": {"min_reports": 1},
            }
        )
    )


def records() -> list[dict[str, str]]:
    return [
        {"x": v, "y": c}
        for (i, c) in enumerate(CLASSES)
        for (j, v) in enumerate(VALUES)
        for _ in range(int(TRUTH[i, j]))
    ]


def released(cfg: CollectionConfig) -> list[nb.NaiveBayesModel]:
    """``RUNS`` models, each from ``N`` freshly perturbed reports of :func:`records`."""
    reports = Privatizer(cfg).privatize_many(records() * RUNS, seeded_rng(SEED))
    request = NaiveBayesTrainRequest(confidence=NOMINAL)
    out = []
    for run in range(RUNS):
        sums = decode_reports(cfg, reports[run * N : (run + 1) * N]).sums
        out.append(nb.build_model(cfg, N, sums, request, model_id=f"m{run}", created_day="d"))
    return out


def covered(
    low: NDArray[np.float64], high: NDArray[np.float64], truth: NDArray[np.int64]
) -> NDArray[np.int64]:
    """How many of the runs (axis 0) each interval covers ``truth``."""
    return np.sum((low <= truth) & (truth <= high), axis=0)


def test_score_counts_cover_where_normal_ones_do_not() -> None:
    cfg = config()
    feature = cfg.features[0]
    assert (N, feature.epsilon) == (sum(map(sum, TRUTH.tolist())), 6.0)
    small = TRUTH == 2
    tests = TRUTH.size + len(CLASSES) + int(small.sum())
    normal_rate = exact_normal_coverage(feature.p, feature.q, N, 2)
    assert normal_rate < 0.85
    assert_z_power(RUNS, NOMINAL, normal_rate, ALPHA / tests)

    models = released(cfg)
    assert all(m.interval == "score" for m in models)
    table = [m.features[0] for m in models]
    low = np.array([f.ci_low for f in table])
    high = np.array([f.ci_high for f in table])
    class_low = np.array([m.class_counts_ci_low for m in models])
    class_high = np.array([m.class_counts_ci_high for m in models])
    hits = np.concatenate(
        [covered(low, high, TRUTH).ravel(), covered(class_low, class_high, TRUTH.sum(axis=1))]
    )
    for cell, hit in enumerate(hits):
        assert not one_sided_short(int(hit), RUNS, tests), (cell, hit)

    z = z_value(NOMINAL)
    counts = np.array([f.counts for f in table])
    stderr = np.array([f.stderr for f in table])
    normal_hits = covered(counts - z * stderr, counts + z * stderr, TRUTH)
    for cell in zip(*np.nonzero(small), strict=True):
        assert one_sided_short(int(normal_hits[cell]), RUNS, tests), (cell, normal_hits[cell])
