"""Label collections (Yilmaz et al. 2019): estimated joint counts and marginals against the
truth and against their stated variances, with power checks.

1. Joint counts through the real client path (``Privatizer`` → packed reports →
   ``decode_reports`` → ``feature_counts``), SUE and OUE, ``split`` and ``sample``, on the
   car data ×20. Given the records every perturbed bit is independent, so the
   standardised errors ``(N̂ - N)/σ`` of the 84 joint cells (``σ`` at the true count)
   are independent and about standard normal: ``Σ z² ~ χ²_84``, Bonferroni over the four
   variants. The released 95% intervals (score intervals of the counts) miss about 5% of
   the cells: a binomial test on the number of misses over all variants (small n is
   tested in ``test_naive_bayes_intervals.py``).
   Power: reports made at ε·1.3 or ε/1.3 and estimated with the RIGHT config are
   rejected by the same χ² test (the design's non-centrality is checked first).
2. Marginals against their variance formulas (:mod:`ldp_shared.analyses.joint`): ``R`` fresh
   draws of the sufficient statistics (exact binomial sampling of every cell's count,
   which is the statistics' exact distribution; under ``sample`` the reporters of each
   feature are redrawn too). Bias (z-tests) and variance (``(R-1)s²/σ² ~ χ²_{R-1}``) of
   each feature's marginal and of the label's combined estimate. Under ``sample`` the
   label's stated variance is conservative by design (the features' samples are
   disjoint, hence negatively correlated), so that case is tested one-sided.
   Power: estimates made at ε·1.3 or ε/1.3 (debiased with their own, unbiased
   estimator) are rejected against the RIGHT variance.
3. The ``sample`` selector is uniform and independent of the record (χ² on the
   selector × class table); a data-dependent selector is rejected.

Fixed seeds, ALPHA = 0.001 per test (Bonferroni inside), as everywhere in this folder.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.analyses.joint import feature_marginal, label_estimate
from ldp_shared.codec import Privatizer, decode_reports, encode_columns, records_to_columns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.kernel import frequency_variance
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_simulation.datasets import load_car

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    assert_variance_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_gof_rows,
    chi2_quantile,
    chi2_sf,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

CAR = load_car()
EPSILON = 2.0
COPIES = 20
VARIANTS = [(m, b) for m in ("oue", "sue") for b in ("split", "sample")]
SEED = 19_050_103


def spec(mechanism: str, budget: str, epsilon: float = EPSILON) -> CollectionSpec:
    return CollectionSpec.model_validate(
        {
            "name": "car-nb",
            "epsilon": epsilon,
            "budget": budget,
            "label": "class",
            "attributes": [
                {"name": n, "domain": d, "mechanism": mechanism} for n, d in CAR.domains.items()
            ],
            "release": {"min_reports": 1},
        }
    )


RECORDS = CAR.records * COPIES


def true_cells(config: CollectionConfig, carried: NDArray[np.int64] | None) -> list[Any]:
    """Per feature: the true joint counts (class-major) among its reporters, and ``n_j``."""
    encoded = encode_columns(config, records_to_columns(config, RECORDS))
    out = []
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        mine = np.ones(len(RECORDS), bool) if carried is None else carried == attribute.sample_index
        counts = np.bincount(cells[mine], minlength=attribute.cells).reshape(attribute.d, -1).T
        out.append((counts.astype(np.float64), int(mine.sum())))
    return out


def joint_statistic(config: CollectionConfig, reports: NDArray[np.uint8]) -> tuple[float, int, int]:
    """``Σ z²`` over all joint cells (σ at the truth), the cell count, and the misses of
    the released 95% intervals."""
    decoded = decode_reports(config, reports)
    assert decoded.valid.all()
    carried = reports[:, 0].astype(np.int64) if config.selector_bytes else None
    estimated = nb.feature_counts(config, len(reports), decoded.sums)
    statistic, cells, misses = 0.0, 0, 0
    for attribute, f, (truth, n_j) in zip(
        config.attributes, estimated, true_cells(config, carried), strict=True
    ):
        assert f.n_reports == n_j
        sigma = n_j * np.sqrt(frequency_variance(truth / n_j, n_j, attribute.p, attribute.q))
        statistic += float(np.sum(((f.counts - truth) / sigma) ** 2))
        cells += truth.size
        low, high = f.score_interval(1.959963984540054)
        misses += int(np.sum((truth < low) | (truth > high)))
    return statistic, cells, misses


@pytest.fixture(scope="module")
def joint_results() -> dict[tuple[str, str], tuple[float, int, int]]:
    out = {}
    for k, (mechanism, budget) in enumerate(VARIANTS):
        config = build_config(spec(mechanism, budget))
        reports = Privatizer(config).privatize_many(RECORDS, seeded_rng(SEED + k))
        out[(mechanism, budget)] = joint_statistic(config, reports)
    return out


def test_joint_counts_match_the_truth(
    joint_results: dict[tuple[str, str], tuple[float, int, int]],
) -> None:
    pvalues = [chi2_sf(statistic, cells) for statistic, cells, _ in joint_results.values()]
    assert not bonferroni_reject(pvalues, ALPHA), pvalues


def test_released_intervals_cover_at_the_stated_rate(
    joint_results: dict[tuple[str, str], tuple[float, int, int]],
) -> None:
    misses = sum(m for _, _, m in joint_results.values())
    cells = sum(c for _, c, _ in joint_results.values())
    assert binomial_pvalue(misses, cells, 0.05) > ALPHA, (misses, cells)


def _noncentrality(right: CollectionConfig, wrong: CollectionConfig) -> float:
    """``Σ bias²/σ²`` of the right estimator fed with reports made at the wrong ε (split)."""
    total = 0.0
    for a, w, (truth, n_j) in zip(
        right.attributes, wrong.attributes, true_cells(right, None), strict=True
    ):
        expected_sum = truth * w.p + (n_j - truth) * w.q
        bias = (expected_sum - n_j * a.q) / (a.p - a.q) - truth
        sigma = n_j * np.sqrt(frequency_variance(truth / n_j, n_j, a.p, a.q))
        total += float(np.sum((bias / sigma) ** 2))
    return total


@pytest.mark.parametrize("mechanism", ["oue", "sue"])
def test_joint_count_test_rejects_a_wrong_epsilon(mechanism: str) -> None:
    right = build_config(spec(mechanism, "split"))
    cells = sum(a.cells for a in right.attributes)
    critical = chi2_quantile(1.0 - ALPHA / len(VARIANTS), cells)
    for k, eps in enumerate(wrong_epsilons(EPSILON)):
        wrong = build_config(spec(mechanism, "split", eps))
        lam = _noncentrality(right, wrong)
        # design: the non-central χ² clears the critical value by POWER_MARGIN_SD sd
        assert cells + lam - POWER_MARGIN_SD * math.sqrt(2 * (cells + 2 * lam)) > critical
        reports = Privatizer(wrong).privatize_many(RECORDS, seeded_rng(SEED + 100 + k))
        statistic, _, _ = joint_statistic(right, reports)
        assert chi2_sf(statistic, cells) < ALPHA / len(VARIANTS), (eps, statistic)


# ------------------------------------------------------------------ marginal variances

R = 400
R_POWER = 800  # the ε·1.3 alternative has variance ratio ≈ 0.59: 400 repetitions are too few
N_RECORDS = CAR.records * 10


_ENCODED: dict[str, list[NDArray[Any]]] = {}


def encoded_records(config: CollectionConfig) -> list[NDArray[Any]]:
    """The joint cells of :data:`N_RECORDS` (cached per config)."""
    if config.config_hash not in _ENCODED:
        _ENCODED[config.config_hash] = encode_columns(config, records_to_columns(config, N_RECORDS))
    return _ENCODED[config.config_hash]


def simulate_sums(
    config: CollectionConfig, rng: np.random.Generator, reps: int = R
) -> list[NDArray[np.int64]]:
    """``reps`` draws of the statistics' exact distribution for the fixed records."""
    encoded = encoded_records(config)
    n = len(N_RECORDS)
    out = []
    for _ in range(reps):
        sums = np.zeros(config.stats_length, dtype=np.int64)
        carried = rng.integers(0, len(config.sampled), size=n) if config.selector_bytes else None
        for attribute, cells in zip(config.attributes, encoded, strict=True):
            mine = cells if carried is None else cells[carried == attribute.sample_index]
            n_j = mine.size
            if attribute.count_offset is not None:
                sums[attribute.count_offset] = n_j
            true = np.bincount(mine, minlength=attribute.cells)
            block = rng.binomial(true, attribute.p) + rng.binomial(n_j - true, attribute.q)
            sums[attribute.stats_offset : attribute.stats_offset + attribute.cells] = block
        out.append(sums)
    return out


def true_marginals() -> dict[str, NDArray[np.float64]]:
    return {
        name: np.array([sum(r[name] == v for r in CAR.records) for v in domain]) / 1728
        for name, domain in CAR.domains.items()
    }


def estimates(
    config: CollectionConfig, draws: list[NDArray[np.int64]]
) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Per attribute: the ``R × d`` estimates and the stated variance at the truth."""
    n = len(N_RECORDS)
    out: dict[str, Any] = {}
    truth = true_marginals()
    for attribute in config.attributes:
        rows = np.array([feature_marginal(attribute, n, s).estimate for s in draws])
        out[attribute.name] = (rows, _stated_variance(config, attribute.name, truth))
    rows = np.array([label_estimate(config, n, s).estimate for s in draws])
    out["class"] = (rows, _stated_variance(config, "class", truth))
    return out


def _stated_variance(
    config: CollectionConfig,
    name: str,
    truth: dict[str, NDArray[np.float64]],
) -> NDArray[np.float64]:
    """The formula's variance at the TRUE frequencies: statistics whose estimate is the truth."""
    n = len(N_RECORDS)
    ideal = np.zeros(config.stats_length, dtype=np.float64)
    encoded = encoded_records(config)
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        n_j = n if attribute.count_offset is None else n // len(config.sampled)
        if attribute.count_offset is not None:
            ideal[attribute.count_offset] = n_j
        f = np.bincount(cells, minlength=attribute.cells) / n
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.cells)
        ideal[block] = n_j * (f * (attribute.p - attribute.q) + attribute.q)
    if name == "class":
        result = label_estimate(config, n, ideal)
    else:
        result = feature_marginal(config.attribute(name), n, ideal)
    np.testing.assert_allclose(result.estimate, truth[name], atol=1e-12)
    variance: NDArray[np.float64] = result.stderr**2
    return variance


def moment_pvalues(
    rows: NDArray[np.float64], f: NDArray[np.float64], variance: NDArray[np.float64], *, upper: bool
) -> tuple[list[float], list[float]]:
    reps = rows.shape[0]
    mean, s2 = rows.mean(axis=0), rows.var(axis=0, ddof=1)
    bias = [
        normal_two_sided_pvalue((mean[j] - f[j]) / math.sqrt(variance[j] / reps))
        for j in range(f.size)
    ]
    if upper:  # only "larger than stated" is an error
        var = [
            chi2_sf((reps - 1) * float(s2[j]) / float(variance[j]), reps - 1) for j in range(f.size)
        ]
    else:
        var = [variance_ratio_pvalue(float(s2[j]), float(variance[j]), reps) for j in range(f.size)]
    return bias, var


@pytest.mark.parametrize(("mechanism", "budget"), VARIANTS)
def test_marginals_are_unbiased_with_the_stated_variance(mechanism: str, budget: str) -> None:
    config = build_config(spec(mechanism, budget))
    draws = simulate_sums(config, seeded_rng(SEED + 7))
    truth = true_marginals()
    bias_p: list[float] = []
    var_p: list[float] = []
    for name, (rows, variance) in estimates(config, draws).items():
        upper = name == "class" and budget == "sample"
        b, v = moment_pvalues(rows, truth[name], variance, upper=upper)
        bias_p += b
        var_p += v
    assert not bonferroni_reject(bias_p, ALPHA), bias_p
    assert not bonferroni_reject(var_p, ALPHA), var_p


@pytest.mark.parametrize("mechanism", ["oue", "sue"])
def test_marginal_variance_test_rejects_a_wrong_epsilon(mechanism: str) -> None:
    right = build_config(spec(mechanism, "split"))
    truth = true_marginals()
    right_var = {name: _stated_variance(right, name, truth) for name in CAR.domains}
    for k, eps in enumerate(wrong_epsilons(EPSILON)):
        wrong = build_config(spec(mechanism, "split", eps))
        wrong_var = {name: _stated_variance(wrong, name, truth) for name in CAR.domains}
        ratios = np.concatenate([wrong_var[n] / right_var[n] for n in CAR.domains])
        cells = ratios.size
        strongest = float(ratios[np.argmax(np.abs(np.log(ratios)))])
        assert_variance_power(strongest, R_POWER, ALPHA / cells)
        draws = simulate_sums(wrong, seeded_rng(SEED + 200 + k), R_POWER)
        var_p: list[float] = []
        for name, (rows, _) in estimates(wrong, draws).items():
            _, v = moment_pvalues(rows, truth[name], right_var[name], upper=False)
            var_p += v
        assert bonferroni_reject(var_p, ALPHA), (eps, min(var_p))


# ------------------------------------------------------------------ the selector


def selector_table(config: CollectionConfig, reports: NDArray[np.uint8]) -> NDArray[np.int64]:
    classes = [CAR.domains["class"].index(r["class"]) for r in RECORDS]
    table = np.zeros((4, len(config.sampled)), dtype=np.int64)
    np.add.at(table, (np.asarray(classes), reports[:, 0].astype(np.int64)), 1)
    return table


def test_selector_is_uniform_and_independent_of_the_record() -> None:
    config = build_config(spec("oue", "sample"))
    reports = Privatizer(config).privatize_many(RECORDS, seeded_rng(SEED + 300))
    table = selector_table(config, reports)
    uniform = np.full(table.shape, 1.0 / table.shape[1])
    assert chi2_gof_rows(table, uniform).pvalue > ALPHA
    # power: a selector that prefers feature 0 for one class (a leak) is rejected
    leaky = reports.copy()
    unacc = np.array([r["class"] == "unacc" for r in RECORDS])
    flip = unacc & (seeded_rng(SEED + 301).random(len(RECORDS)) < 0.05)
    leaky[flip, 0] = 0
    assert chi2_gof_rows(selector_table(config, leaky), uniform).pvalue < ALPHA
