"""The public config: layout, budget split, parameters, hash, and its verification."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest

from ldp_shared.collection import (
    FORMAT_VERSION,
    CollectionConfig,
    allotted_epsilons,
    build_config,
    index_width,
    spec_hash,
    verify_config,
)
from ldp_shared.errors import ConfigurationError
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, Mask, UnaryEncoding
from ldp_shared.schema import CollectionSpec


def _domain(d: int) -> list[str]:
    return [f"v{i}" for i in range(d)]


MIXED: dict[str, Any] = {
    "name": "mixed",
    "epsilon": 3.0,
    "attributes": [
        {"name": "a", "domain": _domain(10), "mechanism": "oue", "weight": 1.0},
        {"name": "b", "domain": _domain(300), "mechanism": "grr", "weight": 2.0},
        {"name": "c", "domain": _domain(5), "mechanism": "mask", "keep_probability": 0.8},
        {"name": "e", "domain": _domain(3), "mechanism": "sue", "weight": 1.0},
        {"name": "f", "domain": _domain(4), "mechanism": "grr", "weight": 0.5},
        {"name": "g", "domain": _domain(16), "mechanism": "oue", "weight": 0.5},
    ],
}


def mixed_spec() -> CollectionSpec:
    return CollectionSpec.model_validate(MIXED)


def test_layout() -> None:
    config = build_config(mixed_spec())
    rows = [
        (a.name, a.encoding, a.byte_offset, a.byte_length, a.stats_offset, a.d)
        for a in config.attributes
    ]
    assert rows == [
        ("a", "bits", 0, 2, 0, 10),
        ("b", "index", 2, 2, 10, 300),
        ("c", "bits", 4, 1, 310, 5),
        ("e", "bits", 5, 1, 315, 3),
        ("f", "index", 6, 1, 318, 4),
        ("g", "bits", 7, 2, 322, 16),
    ]
    assert config.report_bytes == 9
    assert config.stats_length == 338
    assert config.format_version == FORMAT_VERSION == 1
    assert config.name == "mixed"
    assert config.attribute("f").byte_offset == 6
    with pytest.raises(KeyError):
        config.attribute("zz")


@pytest.mark.parametrize(("d", "width"), [(2, 1), (256, 1), (257, 2), (65_536, 2)])
def test_index_width(d: int, width: int) -> None:
    assert index_width(d) == width


def test_budget_split_by_weights() -> None:
    spec = mixed_spec()
    eps = allotted_epsilons(spec)
    assert eps[2] is None  # MASK: ε set by its p
    split = [e for e in eps if e is not None]
    assert math.fsum(split) == pytest.approx(3.0, rel=1e-12)
    total_weight = 1.0 + 2.0 + 1.0 + 0.5 + 0.5
    for e, a in zip(eps, MIXED["attributes"], strict=True):
        if e is not None:
            assert e == pytest.approx(3.0 * a["weight"] / total_weight, rel=1e-14)


def test_parameters_follow_the_wire_format() -> None:
    """p, q and ε of each attribute, recomputed from docs/wire-format.md's formulas."""
    config = build_config(mixed_spec())
    total_weight = 5.0
    mask_eps = 5 * math.log(0.8 / 0.2)
    for a, raw in zip(config.attributes, MIXED["attributes"], strict=True):
        if a.mechanism == "mask":
            p, q, eps = 0.8, 0.2, mask_eps
            assert a.keep_probability == 0.8
            assert a.item_epsilon == pytest.approx(math.log(4.0), rel=1e-12)
        else:
            eps = 3.0 * raw["weight"] / total_weight
            assert a.keep_probability is None and a.item_epsilon is None
            if a.mechanism == "sue":
                p = math.exp(eps / 2) / (math.exp(eps / 2) + 1)
                q = 1 - p
            elif a.mechanism == "oue":
                p, q = 0.5, 1 / (math.exp(eps) + 1)
            else:
                p = math.exp(eps) / (math.exp(eps) + a.d - 1)
                q = 1 / (math.exp(eps) + a.d - 1)
        assert a.p == pytest.approx(p, rel=1e-12)
        assert a.q == pytest.approx(q, rel=1e-12)
        assert a.epsilon == pytest.approx(eps, rel=1e-9)
    # the record's ε: the split budget plus MASK's per-basket ε (sequential composition)
    assert config.epsilon == pytest.approx(3.0 + mask_eps, rel=1e-9)


def test_record_epsilon_without_mask_is_the_stated_epsilon() -> None:
    for eps in (0.1, 1.0, 4.0, 10.0):
        spec = CollectionSpec.model_validate(
            {
                **MIXED,
                "epsilon": eps,
                "attributes": [a for a in MIXED["attributes"] if a["name"] != "c"],
            }
        )
        assert build_config(spec).epsilon == pytest.approx(eps, rel=1e-9)


def test_mask_only_collection() -> None:
    spec = CollectionSpec.model_validate(
        {
            "name": "baskets",
            "attributes": [
                {
                    "name": "items",
                    "domain": _domain(100),
                    "mechanism": "mask",
                    "keep_probability": 0.9,
                }
            ],
        }
    )
    config = build_config(spec)
    assert config.epsilon == pytest.approx(100 * math.log(9.0), rel=1e-12)
    assert config.report_bytes == 13 and config.stats_length == 100


def test_randomizers_of() -> None:
    config = build_config(mixed_spec())
    mechs = config.randomizers
    assert [type(m) for m in mechs] == [
        UnaryEncoding,
        GeneralizedRandomizedResponse,
        Mask,
        UnaryEncoding,
        GeneralizedRandomizedResponse,
        UnaryEncoding,
    ]
    for m, a in zip(mechs, config.attributes, strict=True):
        assert (m.d, m.p, m.q) == (a.d, a.p, a.q)


def test_non_finite_exact_epsilon_is_refused() -> None:
    """A spec may be valid yet run into float limits: OUE at ε = 800 has q = 0."""
    spec = CollectionSpec.model_validate(
        {"name": "x", "epsilon": 800.0, "attributes": [{"name": "a", "domain": ["0", "1"]}]}
    )
    with pytest.raises(ConfigurationError):
        build_config(spec)


# ---------------------------------------------------------------- the config hash

SIMPLE: dict[str, Any] = {
    "name": "c",
    "epsilon": 1.0,
    "attributes": [{"name": "a", "domain": ["x", "y"]}],
}


def test_hash_follows_the_documented_canonical_json() -> None:
    canonical = (
        '{"format_version":1,"spec":{"attributes":[{"domain":["x","y"],"keep_probability":null,'
        '"mechanism":"oue","name":"a","weight":1.0}],"budget":"split","description":"",'
        '"epsilon":1.0,"name":"c","release":{"min_reports":100}}}'
    )
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    spec = CollectionSpec.model_validate(SIMPLE)
    assert spec_hash(spec) == expected
    assert build_config(spec).config_hash == expected


def test_hash_keeps_non_ascii_as_utf8() -> None:
    spec = CollectionSpec.model_validate({**SIMPLE, "description": "é"})
    canonical = (
        '{"format_version":1,"spec":{"attributes":[{"domain":["x","y"],"keep_probability":null,'
        '"mechanism":"oue","name":"a","weight":1.0}],"budget":"split","description":"é",'
        '"epsilon":1.0,"name":"c","release":{"min_reports":100}}}'
    )
    assert spec_hash(spec) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_hash_is_stable() -> None:
    a = build_config(mixed_spec())
    b = build_config(CollectionSpec.model_validate_json(mixed_spec().model_dump_json()))
    assert a.config_hash == b.config_hash
    assert len(a.config_hash) == 64 and a.config_hash == a.config_hash.lower()


def _variant(path: tuple[Any, ...], value: Any) -> CollectionSpec:
    doc = mixed_spec().model_dump()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return CollectionSpec.model_validate(doc)


VARIANTS: list[tuple[tuple[Any, ...], Any]] = [
    (("name",), "mixed2"),
    (("description",), "changed"),
    (("epsilon",), 3.0000000001),
    (("release", "min_reports"), 101),
    (("attributes", 0, "name"), "a2"),
    (("attributes", 0, "mechanism"), "sue"),
    (("attributes", 0, "weight"), 1.5),
    (("attributes", 0, "domain"), [*_domain(9), "v9x"]),
    (("attributes", 0, "domain"), list(reversed(_domain(10)))),
    (("attributes", 2, "keep_probability"), 0.81),
    (("attributes", 1, "mechanism"), "oue"),
]


def test_hash_changes_with_any_parameter() -> None:
    hashes = {build_config(mixed_spec()).config_hash}
    for path, value in VARIANTS:
        hashes.add(build_config(_variant(path, value)).config_hash)
    assert len(hashes) == len(VARIANTS) + 1


# ---------------------------------------------------------------- verify_config


def test_verify_accepts_its_own_config_and_a_json_round_trip() -> None:
    config = build_config(mixed_spec())
    assert verify_config(config) == config
    received = CollectionConfig.model_validate_json(config.model_dump_json())
    assert verify_config(received) == config


def _tamper_attribute(config: CollectionConfig, index: int, **changes: Any) -> CollectionConfig:
    attributes = list(config.attributes)
    attributes[index] = attributes[index].model_copy(update=changes)
    return config.model_copy(update={"attributes": attributes})


@pytest.mark.parametrize(
    "changes",
    [
        {"p": 0.55},
        {"q": 0.3},
        {"epsilon": 0.1},
        {"byte_offset": 1},
        {"byte_length": 3},
        {"stats_offset": 1},
        {"encoding": "index"},
        {"domain": [*_domain(9), "other"]},
    ],
)
def test_verify_rejects_an_altered_attribute(changes: dict[str, Any]) -> None:
    config = build_config(mixed_spec())
    with pytest.raises(ConfigurationError):
        verify_config(_tamper_attribute(config, 0, **changes))


def test_verify_rejects_weaker_mask_noise() -> None:
    config = build_config(mixed_spec())
    with pytest.raises(ConfigurationError):
        verify_config(_tamper_attribute(config, 2, p=0.99, q=0.01))


@pytest.mark.parametrize(
    "changes",
    [
        {"epsilon": 1.0},
        {"report_bytes": 10},
        {"stats_length": 1},
        {"config_hash": "0" * 64},
        {"format_version": 2},
    ],
)
def test_verify_rejects_an_altered_config(changes: dict[str, Any]) -> None:
    config = build_config(mixed_spec())
    with pytest.raises(ConfigurationError):
        verify_config(config.model_copy(update=changes))


def test_verify_rejects_a_config_whose_spec_was_swapped() -> None:
    config = build_config(mixed_spec())
    other = _variant(("epsilon",), 30.0)
    with pytest.raises(ConfigurationError):
        verify_config(config.model_copy(update={"spec": other}))


def test_verify_tolerates_last_unit_differences_of_another_libm() -> None:
    """p, q and ε come from math.exp/log, which may differ in the last unit between the
    server's and the client's platform: that must not make a client refuse a config."""
    config = build_config(mixed_spec())
    a = config.attributes[0]
    nudged = _tamper_attribute(
        config,
        0,
        p=math.nextafter(a.p, 1.0),
        q=math.nextafter(a.q, 0.0),
        epsilon=math.nextafter(a.epsilon, math.inf),
    )
    nudged = nudged.model_copy(update={"epsilon": math.nextafter(config.epsilon, 0.0)})
    assert verify_config(nudged) == config  # the client gets its own numbers back


@pytest.mark.parametrize("field", ["p", "q", "epsilon"])
def test_verify_rejects_differences_beyond_rounding(field: str) -> None:
    config = build_config(mixed_spec())
    value = getattr(config.attributes[1], field)
    with pytest.raises(ConfigurationError):
        verify_config(_tamper_attribute(config, 1, **{field: value * (1.0 + 1e-9)}))


def test_verify_rejects_a_type_change() -> None:
    config = build_config(mixed_spec())
    with pytest.raises(ConfigurationError):
        verify_config(_tamper_attribute(config, 0, item_epsilon=0.0))
