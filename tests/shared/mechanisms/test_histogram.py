"""The histogram mechanism: its spec (edges, channel), the device's binning and clipping,
bad values, the exact ε of its channel, the ``auto`` rule against the CDF variances it is
derived from, and its place in a collection config."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ldp_shared.analyses.ordinal import normalised
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config, verify_config
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.mechanisms import AttributeSpec, HistogramSpec
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.histogram import MAX_BINS, grr_is_better
from ldp_shared.mechanisms.unary import UnaryEncoding
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

AGE = [17, 25, 35, 45, 55, 65, 90]


def spec(**changes: Any) -> HistogramSpec:
    data: dict[str, Any] = {"name": "age", "mechanism": "histogram", "edges": AGE}
    data.update(changes)
    parsed = AttributeSpec.model_validate(data)
    assert isinstance(parsed, HistogramSpec)
    return parsed


def test_bins_and_labels() -> None:
    s = spec(edges=[0, 0.5, 1e3, 1234.25])
    assert (s.lo, s.hi, s.bins, s.bin_edges) == (0.0, 1234.25, 3, [0.0, 0.5, 1000.0, 1234.25])
    assert s.values == ["[0, 0.5)", "[0.5, 1000)", "[1000, 1234.25]"]
    assert s.is_ordered and spec().values[-1] == "[65, 90]"


@pytest.mark.parametrize(
    ("edges", "message"),
    [
        ([1, 2], "at least 3"),
        ([], "at least 3"),
        ([1, 1, 2], "strictly increasing"),
        ([3, 2, 1], "strictly increasing"),
        ([-1.7e308, 1.6e308, 1.7e308], "width must be a finite number"),
        ([0, 1, math.nan], "finite"),
        ([-math.inf, 0, 1], "finite"),
        ([0, 1, math.inf], "finite"),
        (list(range(MAX_BINS + 2)), f"at most {MAX_BINS + 1}"),
        ("0,1,2", "list"),
        ([0, "a", 2], "number"),
    ],
)
def test_bad_edges_are_refused(edges: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(edges=edges)


def test_the_most_bins_and_unknown_fields() -> None:
    assert spec(edges=list(range(MAX_BINS + 1))).bins == MAX_BINS
    with pytest.raises(ValidationError, match="channel"):
        spec(channel="exponential")
    with pytest.raises(ValidationError, match="domain"):
        spec(domain=["a", "b"])
    with pytest.raises(ValidationError, match="edges"):
        AttributeSpec.model_validate({"name": "age", "mechanism": "histogram"})


def test_values_are_binned_after_clipping() -> None:
    values = [-5, 17, 24.999, 25, 34, 35, 64.9, 65, 89.99, 90, 1e300]
    bins = spec().encode(values)
    assert bins.tolist() == [0, 0, 0, 1, 1, 2, 4, 5, 5, 5, 5]
    assert bins.dtype == np.int64
    assert spec().encode(np.array([17, 90], dtype=np.int32)).tolist() == [0, 5]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([30, math.nan], "nan is not a finite number"),
        ([math.inf], "inf is not a finite number"),
        ([-math.inf], "-inf is not a finite number"),
        ([30, "40"], "'40' is not a number"),
        ([True], "True is not a number"),
        ([None], "None is not a number"),
        ([[30]], r"\[30\] is not a number"),
    ],
)
def test_bad_values_are_refused_on_the_device(values: list[Any], message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        spec().encode(values)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("channel", ["grr", "oue"])
def test_exact_epsilon_is_the_channels(epsilon: float, channel: str) -> None:
    s = spec(edges=[0, 1, 2, 3, 4], channel=channel)
    randomizer = s.randomizer(epsilon)
    expected = type(randomizer).__mro__[1]  # the channel's own class
    assert expected in (GeneralizedRandomizedResponse, UnaryEncoding)
    assert randomizer.published()["channel"] == channel
    # the channel's full matrix is ε-LDP and not (ε − 1e-6)-LDP
    assert_tight(randomizer.channel_matrix(), randomizer.exact_epsilon)  # type: ignore[attr-defined]
    assert randomizer.exact_epsilon == pytest.approx(epsilon, rel=1e-12)


def _worst_cdf_variance(randomizer: Any, bins: int) -> float:
    """Per report, the largest variance of the normalised CDF at the uniform distribution,
    from the mechanism's own covariance at its expected statistics."""
    n = 1_000_000
    f = np.full(bins, 1.0 / bins)
    if isinstance(randomizer, GeneralizedRandomizedResponse):
        counts = n * (randomizer.channel_matrix() @ f)
    else:
        counts = n * (randomizer.q + (randomizer.p - randomizer.q) * f)
    estimate = randomizer.estimate_stats({"counts": counts}, n, 0.95).estimate
    _, w = normalised(estimate, randomizer.frequency_covariance({"counts": counts}, n))
    return float(np.max(np.diagonal(np.cumsum(np.cumsum(w, axis=0), axis=1))[:-1]) * n)


@pytest.mark.parametrize(("epsilon", "largest_grr"), [(1.0, 7), (2.0, 18), (4.0, 132)])
def test_auto_picks_the_smaller_worst_cdf_variance(epsilon: float, largest_grr: int) -> None:
    """The closed-form rule agrees with the variances it is derived from, on both sides of
    the switch."""
    for bins in (largest_grr, largest_grr + 1):
        grr = spec(edges=list(range(bins + 1)), channel="grr").randomizer(epsilon)
        oue = spec(edges=list(range(bins + 1)), channel="oue").randomizer(epsilon)
        grr_wins = _worst_cdf_variance(grr, bins) < _worst_cdf_variance(oue, bins)
        assert grr_is_better(bins, epsilon) == grr_wins == (bins == largest_grr)
        chosen = spec(edges=list(range(bins + 1))).randomizer(epsilon).published()["channel"]
        assert chosen == ("grr" if grr_wins else "oue")
    assert grr_is_better(MAX_BINS, 800.0)  # no overflow at huge ε


def test_randomizer_needs_an_epsilon_and_no_label() -> None:
    with pytest.raises(ConfigurationError, match="needs an ε"):
        spec().randomizer(None)
    with pytest.raises(ConfigurationError, match="cannot join a label"):
        spec().randomizer(1.0, classes=3)


def test_in_a_collection() -> None:
    collection = CollectionSpec.model_validate(
        {
            "name": "people",
            "epsilon": 2.0,
            "attributes": [
                {"name": "age", "mechanism": "histogram", "edges": AGE},
                {
                    "name": "income",
                    "mechanism": "histogram",
                    "edges": [0, 1, 2, 3],
                    "channel": "oue",
                },
            ],
        }
    )
    config = verify_config(build_config(collection))
    age, income = config.attributes
    assert (age.encoding, age.byte_length, age.domain) == ("index", 1, spec().values)
    assert age.model_dump()["channel"] == "grr" and income.model_dump()["channel"] == "oue"
    assert (income.encoding, income.p) == ("bits", 0.5)
    records = [{"age": 30.5, "income": 9.0}, {"age": -1, "income": 0}]
    packed = Privatizer(config).privatize_many(records, rng=seeded_rng(1))
    assert decode_reports(config, packed).valid.all()
    with pytest.raises(InvalidRecordError, match="nan"):
        Privatizer(config).privatize_many([{"age": math.nan, "income": 1}], rng=seeded_rng(1))


@pytest.mark.parametrize("role", ["label", "feature"])
def test_cannot_join_a_label(role: str) -> None:
    attributes = [
        {"name": "age", "mechanism": "histogram", "edges": AGE},
        {"name": "cls", "domain": ["a", "b"]},
    ]
    label = "age" if role == "label" else "cls"
    with pytest.raises(ValidationError, match="'oue' or 'sue'"):
        CollectionSpec.model_validate(
            {"name": "c", "epsilon": 1.0, "attributes": attributes, "label": label}
        )


def test_the_wire_format_example() -> None:
    """docs/wire-format.md, Histograms: 6 age bins at ε = 1 (GRR), 12 (OUE)."""
    randomizer = spec().randomizer(1.0)
    assert randomizer.published() == {
        "p": 0.35218742835175143,
        "q": 0.12956251432964971,
        "channel": "grr",
    }
    assert spec().encode([42.5, 100, -3]).tolist() == [2, 5, 0]
    kept = randomizer.pack(np.array([2]))
    assert kept.tobytes() == b"\x02"
    fine = spec(edges=[17, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 91]).randomizer(1.0)
    assert fine.published() == {"p": 0.5, "q": 0.2689414213699951, "channel": "oue"}
    assert (fine.segment.encoding, fine.segment.byte_length) == ("bits", 2)
    assert spec(edges=[0, 0.5, 1000, 2000]).values[:2] == ["[0, 0.5)", "[0.5, 1000)"]
