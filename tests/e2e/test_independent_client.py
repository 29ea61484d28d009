"""docs/wire-format.md is enough to write a client: an independent one interoperates.

``independent_client`` was written from the documents alone (no ``ldp_shared``). Here it

* reproduces the documents' worked examples byte for byte and laplace's table of
  lattices (no server);
* verifies real configs (every published number recomputed), also at the ends of the
  accepted range of ε, and refuses tampered ones;
* sends 20,000 reports to each of two mixed collections (numbers with ``duchi``,
  ``piecewise``, ``hybrid``, ``laplace``; categories with ``grr``, ``oue`` and the ordinal
  ``exponential``), every one accepted, and the released means and frequencies cover the
  truth (Bonferroni over all intervals at the suite's fixed ``ALPHA``);
* checks the answers it sent against its own channels (Pearson χ²; power: the same test
  rejects the answers of the samplers built with ε·1.3 and ε/1.3);
* sees the aggregator reject reports no honest device can send.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from typing import Any

import httpx
import numpy as np
import pytest
from tests.statistical._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    Chi2Result,
    chi2_gof_rows,
    chi2_quantile,
    wrong_epsilons,
)

from . import independent_client as ic
from .conftest import ADMIN, ANALYST

pytestmark = pytest.mark.e2e

NUMERIC = ("duchi", "piecewise", "hybrid", "laplace")
RATINGS = ["awful", "poor", "fair", "good", "great"]
CATEGORIES = {"colour": ["red", "green", "blue"], "fruit": list("abcde"), "rating": RATINGS}
SHARES = {"colour": [0.5, 0.3, 0.2], "fruit": [0.1, 0.4, 0.2, 0.2, 0.1]}
SHARES["rating"] = [0.05, 0.15, 0.3, 0.35, 0.15]


def mixed_spec(name: str, epsilon: float, weights: list[float], calibration: str) -> Any:
    attrs: list[dict[str, Any]] = [{"name": m, "mechanism": m, "lo": 17, "hi": 90} for m in NUMERIC]
    attrs += [{"name": "colour", "mechanism": "grr", "domain": CATEGORIES["colour"]}]
    attrs += [{"name": "fruit", "mechanism": "oue", "domain": CATEGORIES["fruit"]}]
    attrs += [
        {
            "name": "rating",
            "mechanism": "exponential",
            "utility": "ordinal",
            "calibration": calibration,
            "domain": RATINGS,
        }
    ]
    for attr, weight in zip(attrs, weights, strict=True):
        attr["weight"] = weight
    return {"name": name, "epsilon": epsilon, "release": {"min_reports": 1000}, "attributes": attrs}


# ε_j = 2 everywhere (the worked examples' share); then unequal shares from 0.4 to 1:
# hybrid below 0.61 (two cells), laplace on K = 1, a textbook exponential mechanism.
SPECS = [
    mixed_spec("mixed-high", 14.0, [1.0] * 7, "tight"),
    mixed_spec("mixed-low", 4.0, [1.0, 1.0, 0.8, 1.2, 1.0, 1.0, 2.0], "textbook"),
]
N = 20_000
POWER_N = 40_000  # devices per true value in the power checks
LEVEL = ALPHA / 14  # two χ² tests for each of 7 attributes
TIMEOUT = 120.0  # seconds: two cores are shared with other test runs


# -- the documents' examples, computed by the independent client ----------------------------

AGE_60 = 2.0 * (60 - 17) / (90 - 17) - 1.0
U = np.array([2 * 10**15])


def column_at(weights: np.ndarray, level: int, cell: int) -> tuple[int, int, int]:
    cum = np.cumsum(weights[:, level])
    return int(cum[cell - 1]), int(cum[cell]), int(weights[cell, level])


def test_the_documents_worked_examples_byte_for_byte() -> None:
    # Section 2: OUE bits and a two-byte GRR index.
    bits = np.array([[1, 0, 0, 0, 0, 0, 0, 0, 1, 1]], dtype=bool)
    assert np.packbits(bits, axis=1, bitorder="big").tobytes() == b"\x80\xc0"
    assert ic.index_bytes_of(np.array([258]), 2).tobytes() == b"\x01\x02"
    # duchi at ε = 1: C = 2.1640, P(+C | t = 0.178) = 0.541.
    assert pytest.approx(0.178, abs=5e-4) == AGE_60
    assert (math.e + 1) / (math.e - 1) == pytest.approx(2.1640, abs=5e-5)
    assert ic.duchi_plus(1.0, AGE_60) == pytest.approx(0.541, abs=5e-4)
    # piecewise at ε_j = 2: s = 75.3973, level 76, U = 2e15 → cell 116, byte 0x74.
    assert pytest.approx(75.3973, abs=5e-5) == (AGE_60 + 1) * 128 / 2
    piecewise = ic.quantise(ic.piecewise_matrix(2.0, 128, 256))
    assert column_at(piecewise, 76, 116) == (1904947142889186, 2000588182184000, 95641039294814)
    assert ic.answer_for(piecewise, np.array([76]), U).tolist() == [116]
    assert ic.index_bytes_of(np.array([116]), 1).tobytes() == b"\x74"
    # hybrid at ε_j = 2: α = 0.63212, U = 2e15 at level 76 → cell 128, byte 0x80.
    assert ic.hybrid_alpha(2.0) == pytest.approx(0.63212, abs=5e-6)
    hybrid = ic.quantise(ic.hybrid_matrix(2.0, 128))
    assert column_at(hybrid, 76, 128)[:2] == (1990568962929396, 2051501666885031)
    assert ic.answer_for(hybrid, np.array([76]), U).tolist() == [128]
    # laplace at ε_j = 2 (K = 2, M = 11, G = 25): s = 1.178, level 1 → cell 11, byte 0x0B.
    laplace = ic.quantise(ic.laplace_matrix(2.0, 2, 11))
    assert laplace.shape == (25, 3) and pytest.approx(1.178, abs=5e-4) == (AGE_60 + 1)
    assert column_at(laplace, 1, 11) == (891154458221144, 2422408970132803, 1531254511911659)
    assert ic.answer_for(laplace, np.array([1]), U).tolist() == [11]
    assert ic.index_bytes_of(np.array([11]), 1).tobytes() == b"\x0b"
    # The ordinal exponential mechanism at ε_j = 2: λ = 0.5, `good` → `fair`, byte 0x02.
    matrix, lam = ic.exponential_matrix(2.0, 5, "ordinal", "tight")
    rating = ic.quantise(matrix)
    assert lam == 0.5
    assert rating[:, 3].tolist() == [
        716735727805739,
        1181697439904059,
        1948289704701708,
        3212186677627778,
        1948289704701708,
    ]
    assert ic.answer_for(rating, np.array([3]), U).tolist() == [2]
    assert ic.channel_epsilon(rating) == pytest.approx(1.9999999999999998, rel=1e-12)


def test_the_laplace_lattice_of_the_documents_table() -> None:
    """docs/wire-format.md, laplace: ε_j → K, G measured at 0.5, 1, 2, 4 and 8."""
    table = {0.5: (1, 46), 1.0: (1, 26), 2.0: (2, 25), 4.0: (4, 25), 8.0: (16, 43)}
    for eps, lattice in table.items():
        levels = ic.laplace_levels(eps)
        margin = ic.laplace_margin(eps, levels)
        assert margin is not None and (levels, levels + 2 * margin + 1) == lattice, eps


# -- against a real aggregator ------------------------------------------------------------


def create(server: str, spec: Any) -> ic.Plan:
    with httpx.Client(
        base_url=server, timeout=TIMEOUT, headers={"Authorization": f"Bearer {ADMIN}"}
    ) as admin:
        assert admin.post("/v1/collections", json=spec).status_code == 201
    with httpx.Client(base_url=server, timeout=TIMEOUT) as device:
        return ic.fetch_plan(device, spec["name"])


def population(gen: np.random.Generator) -> dict[str, np.ndarray]:
    ages = np.round(gen.normal(39.0, 14.0, N))  # some outside [17, 90]: clipped
    columns = dict.fromkeys(NUMERIC, ages)
    for name, shares in SHARES.items():
        columns[name] = gen.choice(len(shares), size=N, p=shares)
    return columns


def answer_distribution(attr: ic.Attribute, value: float) -> Any:
    """Rows of the answer distribution of a device whose true value is ``value``: one row
    over the answers (index and sign segments), or one ``[P(0), P(1)]`` row per bit (OUE,
    whose bits are drawn independently)."""
    if attr.mechanism == "oue":
        q = attr.derived["q"]
        bit = np.where(np.arange(len(attr.domain)) == value, 0.5, q)
        return np.column_stack([1.0 - bit, bit])
    if attr.mechanism == "grr":
        p, q = attr.derived["p"], attr.derived["q"]
        return np.where(np.arange(len(attr.domain)) == value, p, q)[None, :]
    if attr.mechanism == "duchi":
        plus = float(ic.duchi_plus(attr.eps, ic.scaled(attr, np.array([value]))[0]))
        return np.array([[1.0 - plus, plus]])
    assert attr.weights is not None
    prob = attr.weights / float(ic.TWO53)
    if attr.mechanism == "exponential":
        return prob[:, int(value)][None, :]
    s = (float(ic.scaled(attr, np.array([value]))[0]) + 1.0) * attr.levels / 2.0
    low = min(math.floor(s), attr.levels - 1)
    return ((1.0 - (s - low)) * prob[:, low] + (s - low) * prob[:, low + 1])[None, :]


def answer_counts(attr: ic.Attribute, sent: np.ndarray) -> Any:
    """Rows of counts matching :func:`answer_distribution`, for segments of one truth."""
    if attr.mechanism == "oue":
        ones = np.unpackbits(sent, axis=1, bitorder="big")[:, : len(attr.domain)].sum(axis=0)
        return np.column_stack([len(sent) - ones, ones])
    index = sent[:, 0].astype(np.int64) if attr.byte_length == 1 else sent.view(">u2")[:, 0]
    cells = 2 if attr.mechanism == "duchi" else attr.counters
    return np.bincount(index, minlength=cells)[None, :]


def answers_fit(
    attr: ic.Attribute, sent: np.ndarray, values: np.ndarray, by_value: bool = True
) -> Chi2Result:
    """Pearson χ² of the segments ``sent`` against ``attr``'s channel.

    ``by_value``: devices grouped by true value, i.i.d. within a group (multinomial rows,
    summed; for a few truths with many devices each). Otherwise all devices in one row
    against the mean of their distributions: independent but not identically distributed
    answers have a covariance below the multinomial one, so the test keeps its level
    (for a population of many distinct values)."""
    groups = [(values == v, answer_distribution(attr, float(v))) for v in np.unique(values)]
    observed = [answer_counts(attr, sent[mine]) for mine, _ in groups]
    expected = [dist for _, dist in groups]
    if not by_value:
        weights = [np.sum(mine) / values.size for mine, _ in groups]
        observed = [sum(observed)]
        expected = [sum(w * dist for w, dist in zip(weights, expected, strict=True))]
    return chi2_gof_rows(np.vstack(observed), np.vstack(expected))


def assert_power(right: ic.Attribute, wrong: ic.Attribute, values: np.ndarray) -> None:
    """Design check before sampling: under ``wrong`` the χ² statistic, noncentral with
    ``λ = Σ n (q − p)²/p`` over the cells expected at least 5, is expected above the
    critical value at LEVEL by POWER_MARGIN_SD of its standard deviations."""
    lam, df = 0.0, 0
    for value in np.unique(values):
        n = int(np.sum(values == value))
        p, q = answer_distribution(right, float(value)), answer_distribution(wrong, float(value))
        big = n * p >= 5.0
        lam += n * float(np.sum((q[big] - p[big]) ** 2 / p[big]))
        pooled = (n * np.where(big, 0.0, p).sum(axis=1) >= 5.0).astype(int)
        df += int(np.sum(big.sum(axis=1) + pooled - 1))
    critical = chi2_quantile(1.0 - LEVEL, df)
    spread = math.sqrt(2.0 * (df + 2.0 * lam))
    assert df + lam - POWER_MARGIN_SD * spread > critical, (right.name, wrong.eps, lam, df)


def miscalibrated(attr: ic.Attribute, spec_attr: Any, wrong: float) -> ic.Attribute:
    """The attribute's sampler built with the ε ``wrong``, on the same lattice."""
    if attr.mechanism == "laplace":  # K and M depend on ε: keep the right ones
        matrix = ic.laplace_matrix(wrong, attr.levels, attr.derived["margin"])
        return dataclasses.replace(attr, eps=wrong, weights=ic.quantise(matrix))
    liar = ic.plan_attribute(spec_attr, wrong)
    assert liar.counters == attr.counters
    return liar


@pytest.mark.parametrize("spec", SPECS, ids=[s["name"] for s in SPECS])
def test_an_independent_client_interoperates(server: str, spec: Any) -> None:
    plan = create(server, spec)
    gen = np.random.default_rng(2_024_061)
    columns = population(gen)
    reports = ic.perturb(plan, columns, gen)
    assert reports.shape == (N, plan.report_bytes)
    with httpx.Client(base_url=server, timeout=TIMEOUT) as device:
        outcomes = ic.upload(device, plan, reports, gen, batch=5_000)
    assert [o["status"] for o in outcomes] == ["accepted"] * N

    # Two χ² tests per attribute, each at ALPHA/14: the answers sent follow this client's
    # channel given the population's values; devices at the ends and the middle of the
    # domain answer so too, while the samplers built with ε·1.3 and ε/1.3 fail that test.
    for attr, spec_attr in zip(plan.attributes, spec["attributes"], strict=True):
        start = attr.derived["byte_offset"]
        sent = reports[:, start : start + attr.byte_length]
        fit = answers_fit(attr, sent, columns[attr.name], by_value=False)
        assert fit.pvalue > LEVEL, (attr.name, fit)
        ends = [17.0, 53.5, 90.0] if attr.mechanism in NUMERIC else range(len(attr.domain))
        truth = np.repeat(np.asarray(ends, dtype=np.float64), POWER_N)
        values = truth if attr.mechanism in NUMERIC else truth.astype(np.int64)
        fit = answers_fit(attr, ic.perturb_segment(attr, values, gen), values)
        assert fit.pvalue > LEVEL, (attr.name, fit)
        for wrong in wrong_epsilons(attr.eps):
            liar = miscalibrated(attr, spec_attr, wrong)
            assert_power(attr, liar, values)
            lies = ic.perturb_segment(liar, values, gen)
            assert answers_fit(attr, lies, values).pvalue < LEVEL, (attr.name, wrong)

    # The released estimates cover the truth: 4 means and 13 frequencies, Bonferroni.
    config = httpx.get(f"{server}/v1/collections/{plan.name}", timeout=TIMEOUT).json()
    confidence = 1.0 - ALPHA / 17
    truth = float(np.clip(columns["duchi"], 17, 90).mean())
    with httpx.Client(
        base_url=server, timeout=TIMEOUT, headers={"Authorization": f"Bearer {ANALYST}"}
    ) as analyst:
        for name in NUMERIC:
            mean = analyst.get(
                f"/v1/collections/{plan.name}/means",
                params={"attribute": name, "confidence": confidence},
            ).json()
            assert mean["n_reports"] == N and mean["mechanism"] == name
            assert mean["ci_low"] < truth < mean["ci_high"], (name, mean, truth)
            published = next(a for a in config["attributes"] if a["name"] == name)
            assert mean["epsilon"] == published["epsilon"]  # verified against ours above
        for name, shares in SHARES.items():
            freq = analyst.get(
                f"/v1/collections/{plan.name}/frequencies",
                params={"attribute": name, "confidence": confidence},
            ).json()
            actual = np.bincount(columns[name], minlength=len(shares)) / N
            assert freq["values"] == CATEGORIES[name]
            assert (np.array(freq["ci_low"]) < actual).all(), (name, freq, actual)
            assert (actual < np.array(freq["ci_high"])).all(), (name, freq, actual)


EDGES = [  # (ε, {mechanism: weight}): the far ends of what the aggregator accepts
    (0.61, {"piecewise": 1.0, "hybrid": 1.0, "laplace": 28.0}),  # ε_j = 0.0203 and 0.569
    (0.05, {"laplace": 1.0}),  # K = 1, a wide margin
    (15.5, {"laplace": 1.0}),  # no margin left for K ≥ 32
    (20.0, {"duchi": 1.0}),  # P(+C | −1) near 2e-9
    (48.0, {"piecewise": 1.0, "hybrid": 3.0}),  # ε_j = 12: piecewise spends 11.54
]


def test_configs_at_the_ends_of_the_range_verify(server: str) -> None:
    for i, (eps, weights) in enumerate(EDGES):
        attrs = [
            {"name": m, "mechanism": m, "lo": 0, "hi": 1, "weight": w} for m, w in weights.items()
        ]
        create(server, {"name": f"edge-{i}", "epsilon": eps, "attributes": attrs})


def test_tampered_configs_are_refused(server: str) -> None:
    create(server, SPECS[0])
    config = httpx.get(f"{server}/v1/collections/{SPECS[0]['name']}").json()
    changes = [
        ("laplace", "epsilon", lambda x: x * (1 + 1e-9)),  # beyond one weight's rounding
        ("piecewise", "scale", lambda x: x * (1 + 1e-11)),
        ("hybrid", "pm_probability", lambda x: x + 1e-9),
        ("laplace", "margin", lambda x: x + 1),
        ("rating", "scale", lambda x: x * 1.01),
        ("colour", "p", lambda x: x + 1e-9),
        ("fruit", "byte_offset", lambda x: x + 1),
        ("duchi", "epsilon", lambda x: x * (1 + 1e-11)),
    ]
    for name, key, change in changes:
        bad = {**config, "attributes": [dict(a) for a in config["attributes"]]}
        entry = next(a for a in bad["attributes"] if a["name"] == name)
        entry[key] = change(entry[key])
        with pytest.raises(ic.ConfigMismatchError, match=name):
            ic.verify_config(bad)
    for key, value in [("config_hash", "0" * 64), ("epsilon", config["epsilon"] * 1.01)]:
        with pytest.raises(ic.ConfigMismatchError, match=key):
            ic.verify_config({**config, key: value})
    spec = {**config["spec"], "epsilon": config["spec"]["epsilon"] * 1.3}  # hash included
    with pytest.raises(ic.ConfigMismatchError):
        ic.verify_config({**config, "spec": spec})


def test_reports_no_device_can_send_are_rejected(server: str) -> None:
    plan = create(server, SPECS[0])
    gen = np.random.default_rng(5)
    good = ic.perturb(plan, {k: v[:1] for k, v in population(gen).items()}, gen)[0]
    offsets = {a.name: a.derived["byte_offset"] for a in plan.attributes}
    laplace = next(a for a in plan.attributes if a.name == "laplace")
    bad = [(good.tobytes()[:-1], "wrong length")]
    for name, byte, reason in [
        ("laplace", laplace.counters, "'laplace': value index outside the domain"),  # cell G
        ("duchi", 2, "'duchi': sign byte is neither 0 nor 1"),
        ("fruit", good[offsets["fruit"]] | 0x01, "'fruit': padding bits"),  # 5 bits of 8
        ("rating", 5, "'rating': value index outside the domain"),
    ]:
        report = good.copy()
        report[offsets[name]] = byte
        bad.append((report.tobytes(), reason))
    bodies = [(good.tobytes(), plan.config_hash, "")]
    bodies += [(r, plan.config_hash, reason) for r, reason in bad]
    bodies += [(good.tobytes(), "f" * 64, "config hash of another config")]
    reports = [
        {"id": f"report-{i:04d}", "config_hash": h, "bits": base64.b64encode(b).decode()}
        for i, (b, h, _) in enumerate(bodies)
    ]
    url = f"{server}/v1/collections/{plan.name}/reports"
    answer = httpx.post(url, json={"reports": reports}, timeout=TIMEOUT)
    assert answer.status_code == 200
    outcomes = answer.json()["outcomes"]
    assert [o["status"] for o in outcomes] == ["accepted"] + ["rejected"] * (len(bodies) - 1)
    for outcome, (_, _, reason) in zip(outcomes[1:], bodies[1:], strict=True):
        assert reason in outcome["reason"], outcome
