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
* sees the aggregator reject reports no honest device can send;
* for the open domains (``flh`` over open strings and integers, ``pem``, ``hadamard`` with
  ``domain_size``): reproduces the document's table of hash keys and buckets, verifies
  their configs (and refuses tampered ones), sends 5,500 reports (500 of them drawn from
  :class:`~independent_client.SecureSource`, as a device draws), every one accepted and
  following the client's channel, and ``frequencies?values=`` covers the planted and an
  absent value while ``heavy-hitters`` finds the planted words.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import unicodedata
from collections import Counter
from typing import Any

import httpx
import numpy as np
import pytest
from tests.statistical._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    Chi2Result,
    assert_z_power,
    binomial_pvalue,
    chi2_gof,
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


# -- open domains: flh, pem, hadamard ---------------------------------------------------

ZERO_SALT = bytes(16)
CAFE_NFC, CAFE_NFD = "caf\u00e9", "cafe\u0301"


def test_the_documents_hash_examples_byte_for_byte() -> None:
    """docs/wire-format.md, "Hashed values": the table of keys and buckets (salt zero)."""
    hello = ic.TAG_STRING + ic.string_bytes("hello", 64)
    cafes = [ic.TAG_STRING + ic.string_bytes(v, 64) for v in (CAFE_NFC, CAFE_NFD)]
    seven = ic.TAG_INTEGER + ic.integer_bytes(7)
    assert hello == b"shello" and seven == b"i\x00\x00\x00\x00\x00\x00\x00\x07"
    assert cafes == [b"scaf\xc3\xa9"] * 2  # NFD input is normalised to NFC
    table = [  # value, key x, h_0 and h_1 (g = 56), h_65535 (g = 256)
        (hello, 0x9877CD1C0291A9CA, 37, 12, 109),
        (cafes[0], 0x5833E6511BC994F6, 19, 7, 234),
        (cafes[1], 0x5833E6511BC994F6, 19, 7, 234),
        (seven, 0xB3244923CEB588AE, 54, 2, 226),
    ]
    for tagged, key, h0, h1, h65535 in table:
        x = ic.hash_key(tagged, ZERO_SALT)
        assert x == key, (tagged, hex(x))
        assert ic.bucket_of([x, x], [0, 1], 56).tolist() == [h0, h1]
        assert ic.bucket_of(x, 65535, 256).tolist() == [h65535]
    # The table's g = 56 is flh's at ε_j = 4; g is held within [2, 256].
    assert [ic.open_buckets(e) for e in (4.0, 0.01, 5.0, 5.6, 30.0)] == [56, 2, 149, 256, 256]
    rows = {2: 2, 3: 4, 4: 4, 5000: 8192, 8192: 8192, 8193: 16384}
    assert {d: ic.hadamard_rows(d) for d in rows} == rows
    # The same keys through the client's memoised path (flh: one column; pem: levels).
    flh = ic.Attribute("u", "flh", 4.0, {}, 3, 0, salt=ZERO_SALT, max_length=64)
    keys = ic.value_keys(flh, ["hello", CAFE_NFD, CAFE_NFC, "hello"])
    hello, cafe = 0x9877CD1C0291A9CA, 0x5833E6511BC994F6
    assert keys[:, 0].tolist() == [hello, cafe, cafe, hello]
    integer = ic.Attribute("n", "flh", 4.0, {}, 3, 0, salt=ZERO_SALT, value_type="integer")
    assert ic.value_keys(integer, [7])[0, 0] == 0xB3244923CEB588AE
    pem = ic.Attribute("w", "pem", 4.0, {}, 4, 0, salt=ZERO_SALT, max_length=6, levels=6)
    levels = ic.value_keys(pem, ["hello"])[0].tolist()
    prefixes = [ic.hash_key(b"p" + b"hello"[:n], ZERO_SALT) for n in range(1, 5)]
    assert levels == [*prefixes, hello, hello]
    for bad in ["", "x" * 65, b"bytes", 3]:
        with pytest.raises(ValueError):
            ic.value_keys(flh, [bad])
    for bad in [-1, 2**64, True, 1.0, "7"]:
        with pytest.raises(ValueError):
            ic.value_keys(integer, [bad])
    # frequencies?values=: a comma or backslash inside a value escaped, integers in decimal
    text = ic.escape_values(["a,b\\c", CAFE_NFC, 2**64 - 1])
    assert text == "a\\,b\\\\c,café,18446744073709551615"


def test_the_secure_source_draws_uniformly() -> None:
    """SecureSource: the device's draws. Rejection keeps ``[0, m)`` uniform where a plain
    remainder would not (``m = 3·2^61``: the thirds would have 3/8, 3/8 and 1/4)."""
    source = ic.SecureSource()
    bound, n = 3 << 61, 30_000
    draws = ic.uniform_below(source, bound, n)
    assert draws.dtype == np.int64 and (draws >= 0).all() and (draws < bound).all()
    thirds = np.bincount(draws // (1 << 61), minlength=3)
    assert chi2_gof(thirds, [1 / 3] * 3).pvalue > ALPHA / 3
    assert chi2_gof(thirds, [3 / 8, 3 / 8, 1 / 4]).pvalue < ALPHA / 3  # power: a remainder's
    small = ic.uniform_below(source, np.array([1, 2, 56] * 1000), 3000).reshape(-1, 3)
    assert (small[:, 0] == 0).all() and set(small[:, 1]) == {0, 1} and small[:, 2].max() < 56
    doubles = source.random((200, 3))
    assert doubles.shape == (200, 3) and ((doubles >= 0) & (doubles < 1)).all()
    eighths = np.bincount((doubles * 8).astype(int).ravel(), minlength=8)
    assert chi2_gof(eighths, [1 / 8] * 8).pvalue > ALPHA / 3
    assert len(source.bytes(16)) == 16 and len(set(ic.report_ids(100, source))) == 100


OPEN_SPEC: dict[str, Any] = {
    "name": "open-domains",
    "epsilon": 16.0,  # ε_j = 4 each: flh and pem on g = 56 buckets (the table's)
    "release": {"min_reports": 1000},
    "attributes": [
        {"name": "url", "mechanism": "flh", "domain": "open", "max_length": 64},
        {"name": "number", "mechanism": "flh", "domain": "open", "value_type": "integer"},
        {"name": "word", "mechanism": "pem", "max_length": 6},  # hashes left to the server
        {"name": "item", "mechanism": "hadamard", "domain_size": 5000},
    ],
}
PLANTED: dict[str, dict[Any, float]] = {
    "url": {"https://example.com/": 0.3, "alpha,beta\\gamma": 0.2, CAFE_NFD: 0.15},
    "number": {7: 0.35, 2**64 - 1: 0.2, 123_456_789: 0.15},
    "word": {"apple": 0.3, "apply": 0.2, "naïve": 0.15},  # naïve: 6 bytes, ï cut at ℓ = 3
    "item": {0: 0.25, 4999: 0.2, 1234: 0.15},
}
ABSENT = {"url": "never-sent", "number": 0, "word": "zzz", "item": 17}
N_SEEDED, N_SECURE = 5_000, 500  # reports from the seeded generator and from SecureSource


def open_population(gen: np.random.Generator, n: int, tag: str) -> dict[str, list[Any]]:
    """``n`` records: each planted value in its share, the rest held by one device each
    (hadamard: uniform over the domain)."""
    columns: dict[str, list[Any]] = {}
    for name, shares in PLANTED.items():
        column = [v for v, share in shares.items() for _ in range(round(share * n))]
        rest = n - len(column)
        if name == "url":
            column += [f"https://example.com/{tag}/{i}" for i in range(rest)]
        elif name == "number":
            column += [int(x) for x in gen.integers(1 << 32, 1 << 62, rest)]
        elif name == "word":
            column += ["".join(chr(97 + c) for c in gen.integers(0, 26, 6)) for _ in range(rest)]
        else:
            column += [int(x) for x in gen.integers(0, 5000, rest)]
        columns[name] = [column[i] for i in gen.permutation(n)]
    return columns


def canonical(value: Any) -> Any:
    return unicodedata.normalize("NFC", value) if isinstance(value, str) else value


def decode(attr: ic.Attribute, seg: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
    """``(ℓ − 1 or None, j, y)`` of hashed segments; ``(None, j, s)`` of hadamard ones."""
    if attr.mechanism == "hadamard":
        word = (seg[:, 0].astype(np.int64) << 16) | (seg[:, 1].astype(np.int64) << 8) | seg[:, 2]
        return None, word >> 1, word & 1
    level = seg[:, 0].astype(np.int64) if attr.mechanism == "pem" else None
    rest = seg[:, 1:] if attr.mechanism == "pem" else seg
    j = (rest[:, 0].astype(np.int64) << 8) | rest[:, 1]
    return level, j, rest[:, 2].astype(np.int64)


def kept_rate(attr: ic.Attribute, eps: float) -> float:
    """The chance that a report keeps the true bucket (sign) at ``eps`` on ``attr``'s g."""
    e = math.exp(eps)
    return e / (e + 1.0) if attr.mechanism == "hadamard" else e / (e + attr.buckets - 1.0)


def check_open_channel(attr: ic.Attribute, seg: np.ndarray, values: list[Any]) -> None:
    """The segments this client sent follow its channel: the true bucket (sign) kept with
    the rate of ε (a binomial test that the samplers at ε·1.3 and ε/1.3 fail by design),
    ``j`` (and ``ℓ``) uniform (χ² over 16 equal bins of ``j``, over the ``L`` levels)."""
    level, j, y = decode(attr, seg)
    n = len(values)
    if attr.mechanism == "hadamard":
        v = np.array(values, dtype=np.int64)
        kept = (np.bitwise_count(j & v) % 2 == 0) == (y == 1)
        draws = attr.rows
    else:
        keys = ic.value_keys(attr, values)
        keys = keys[np.arange(n), level] if level is not None else keys[:, 0]
        kept = y == ic.bucket_of(keys, j, attr.buckets).astype(np.int64)
        draws = attr.hashes
        assert (y < attr.buckets).all()
    rate = kept_rate(attr, attr.eps)
    assert binomial_pvalue(int(kept.sum()), n, rate) > OPEN_LEVEL, (attr.name, kept.mean(), rate)
    for wrong in wrong_epsilons(attr.eps):
        assert_z_power(n, rate, kept_rate(attr, wrong), OPEN_LEVEL)
    assert (j < draws).all()
    sixteenths = np.bincount(j * 16 // draws, minlength=16)
    assert chi2_gof(sixteenths, [1 / 16] * 16).pvalue > OPEN_LEVEL, attr.name
    if level is not None:
        share = [1 / attr.levels] * attr.levels
        assert chi2_gof(np.bincount(level, minlength=attr.levels), share).pvalue > OPEN_LEVEL


OPEN_LEVEL = ALPHA / 9  # 2 tests per attribute, 3 for pem
QUERIES = 4 * 4 + 3  # 4 values per attribute, the 3 words heavy-hitters finds


def test_open_domains_interoperate(server: str) -> None:
    plan = create(server, OPEN_SPEC)
    attrs = {a.name: a for a in plan.attributes}
    assert [attrs[n].buckets for n in ("url", "number", "word")] == [56] * 3
    assert (attrs["word"].levels, attrs["item"].rows, plan.report_bytes) == (6, 8192, 13)
    gen = np.random.default_rng(20_240_612)
    seeded, secure = open_population(gen, N_SEEDED, "a"), open_population(gen, N_SECURE, "b")
    reports = ic.perturb(plan, seeded, gen)
    device_reports = ic.perturb(plan, secure, ic.SecureSource())  # as a device draws
    assert reports.shape == (N_SEEDED, 13) and device_reports.shape == (N_SECURE, 13)
    with httpx.Client(base_url=server, timeout=TIMEOUT) as device:
        outcomes = ic.upload(device, plan, reports, gen, batch=5_000)
        outcomes += ic.upload(device, plan, device_reports, ic.SecureSource(), batch=5_000)
    assert [o["status"] for o in outcomes] == ["accepted"] * (N_SEEDED + N_SECURE)
    every = np.vstack([reports, device_reports])
    columns = {name: seeded[name] + secure[name] for name in PLANTED}
    n = N_SEEDED + N_SECURE
    for attr in plan.attributes:
        start = attr.derived["byte_offset"]
        check_open_channel(attr, every[:, start : start + attr.byte_length], columns[attr.name])

    confidence = 1.0 - ALPHA / QUERIES
    with httpx.Client(
        base_url=server, timeout=TIMEOUT, headers={"Authorization": f"Bearer {ANALYST}"}
    ) as analyst:
        url = f"/v1/collections/{plan.name}"
        for name, shares in PLANTED.items():
            asked = [canonical(v) for v in shares] + [ABSENT[name]]
            counts = Counter(canonical(v) for v in columns[name])
            truth = np.array([counts[v] / n for v in asked])
            freq = analyst.get(
                f"{url}/frequencies",
                params={
                    "attribute": name,
                    "values": ic.escape_values(asked),
                    "confidence": confidence,
                },
            ).json()
            assert freq["n_reports"] == n and freq["mechanism"] == attrs[name].mechanism, freq
            assert freq["values"] == [str(v) for v in asked]
            assert freq["epsilon"] == pytest.approx(4.0, rel=1e-12)
            assert (np.array(freq["ci_low"]) < truth).all(), (name, freq, truth)
            assert (truth < np.array(freq["ci_high"])).all(), (name, freq, truth)

        # One value, two spellings: NFD names the value NFC does, and both at once are refused.
        one = [
            analyst.get(f"{url}/frequencies", params={"attribute": "url", "values": v}).json()
            for v in (CAFE_NFC, CAFE_NFD)
        ]
        assert one[0]["estimate"] == one[1]["estimate"]
        both = {"attribute": "url", "values": f"{CAFE_NFC},{CAFE_NFD}"}
        assert analyst.get(f"{url}/frequencies", params=both).status_code == 422

        # pem: the heavy hitters, found from the statistics alone, are the planted words.
        found = analyst.get(
            f"{url}/heavy-hitters", params={"attribute": "word", "k": 10, "confidence": confidence}
        ).json()
        assert set(PLANTED["word"]) <= set(found["values"]), found
        counts = Counter(canonical(v) for v in columns["word"])
        for value, low, high in zip(
            found["values"], found["ci_low"], found["ci_high"], strict=True
        ):
            if value in PLANTED["word"]:
                assert low < counts[value] / n < high, (value, found)


OPEN_EDGES = [  # (ε, attributes): g = 2, g held at 256, declared lists, pem's own k
    (0.1, [{"name": "a", "mechanism": "flh", "domain": "open", "hashes": 1}]),
    (5.6, [{"name": "a", "mechanism": "flh", "domain": ["x", CAFE_NFC], "max_length": 8}]),
    (8.0, [{"name": "a", "mechanism": "pem", "max_length": 32}]),  # the server picks k
    (2.0, [{"name": "a", "mechanism": "pem", "max_length": 2, "hashes": 65536}]),
    (1.0, [{"name": "a", "mechanism": "hadamard", "domain": ["x", "y", "z"]}]),
    (3.0, [{"name": "a", "mechanism": "hadamard", "domain_size": 2}]),
]


def test_open_configs_at_the_ends_verify_and_accept(server: str) -> None:
    values = {"flh": ["x", CAFE_NFD] * 50, "pem": ["é", "a"] * 50, "hadamard": [0, 1] * 50}
    for i, (eps, attrs) in enumerate(OPEN_EDGES):
        plan = create(server, {"name": f"open-edge-{i}", "epsilon": eps, "attributes": attrs})
        (attr,) = plan.attributes
        reports = ic.perturb(plan, {"a": values[attr.mechanism]}, ic.SecureSource())
        with httpx.Client(base_url=server, timeout=TIMEOUT) as device:
            outcomes = ic.upload(device, plan, reports, ic.SecureSource(), batch=100)
        assert {o["status"] for o in outcomes} == {"accepted"}, (attrs, outcomes[:3])


def test_tampered_open_configs_are_refused(server: str) -> None:
    create(server, OPEN_SPEC)
    config = httpx.get(f"{server}/v1/collections/{OPEN_SPEC['name']}").json()
    ic.verify_config(config)
    changes = [
        ("url", "buckets", lambda x: x + 1),
        ("url", "hashes", lambda x: x // 2),  # the spec states 1024
        ("number", "p", lambda x: x + 1e-9),
        ("number", "q", lambda x: x * (1 + 1e-11)),
        ("word", "levels", lambda x: x + 1),
        ("word", "epsilon", lambda x: x * (1 + 1e-11)),
        ("word", "encoding", lambda x: "hashed"),
        ("word", "byte_length", lambda x: 3),
        ("item", "rows", lambda x: x * 2),
        ("item", "p", lambda x: x - 1e-9),
        ("item", "stats_offset", lambda x: x + 1),
    ]
    for name, key, change in changes:
        bad = {**config, "attributes": [dict(a) for a in config["attributes"]]}
        entry = next(a for a in bad["attributes"] if a["name"] == name)
        entry[key] = change(entry[key])
        with pytest.raises(ic.ConfigMismatchError, match=name):
            ic.verify_config(bad)
    # Members the client does not know, in the config or in the spec, are refused.
    for where, member in [("config", "domain_size"), ("spec", "normalisation")]:
        bad = {**config, "attributes": [dict(a) for a in config["attributes"]]}
        bad["spec"] = {
            **config["spec"],
            "attributes": [dict(a) for a in config["spec"]["attributes"]],
        }
        entries = bad["attributes"] if where == "config" else bad["spec"]["attributes"]
        entries[3 if where == "config" else 0][member] = "NFKC" if where == "spec" else 5000
        with pytest.raises(ic.ConfigMismatchError):
            ic.verify_config(bad)
    # pem's k, which the document does not derive, is taken from the config but must fit
    # the uint16 j and agree with the layout and stats_length that follow from it.
    for hashes in [70_000, 512]:
        bad = {**config, "attributes": [dict(a) for a in config["attributes"]]}
        bad["attributes"][2]["hashes"] = hashes
        with pytest.raises(ic.ConfigMismatchError):
            ic.verify_config(bad)
    # Another salt is another hash family: the config hash no longer matches.
    spec = {**config["spec"], "attributes": [dict(a) for a in config["spec"]["attributes"]]}
    spec["attributes"][0]["salt"] = "0" * 32
    with pytest.raises(ic.ConfigMismatchError, match="config_hash"):
        ic.verify_config({**config, "spec": spec})


def test_open_reports_no_device_can_send_are_rejected(server: str) -> None:
    plan = create(server, OPEN_SPEC)
    gen = np.random.default_rng(6)
    good = ic.perturb(plan, open_population(gen, 1, "c"), gen)[0].tobytes()
    bad = [  # (offset, bytes): url j = k, url y = g, word ℓ = L + 1, word y = g, item j = D
        (0, b"\x04\x00"),
        (2, b"\x38"),
        (6, b"\x06"),
        (9, b"\x38"),
        (10, b"\x00\x40\x01"),
    ]
    bodies = [good] + [good[:at] + b + good[at + len(b) :] for at, b in bad]
    reports = [
        {
            "id": f"open-{i:04d}",
            "config_hash": plan.config_hash,
            "bits": base64.b64encode(b).decode(),
        }
        for i, b in enumerate(bodies)
    ]
    answer = httpx.post(f"{server}/v1/collections/{plan.name}/reports", json={"reports": reports})
    outcomes = answer.json()["outcomes"]
    assert [o["status"] for o in outcomes] == ["accepted"] + ["rejected"] * len(bad), outcomes
    for outcome, name in zip(outcomes[1:], ["url", "url", "word", "word", "item"], strict=True):
        assert f"'{name}'" in outcome["reason"], outcome
