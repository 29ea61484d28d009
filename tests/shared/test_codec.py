"""Records to packed reports and back: layout, exact round trip, invalid input."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from ldp_shared import codec
from ldp_shared.codec import Privatizer, decode_reports, records_to_columns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InvalidRecordError, InvalidReportError
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, Mask, UnaryEncoding
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

DOMAINS = {
    "colour": [
        "red",
        "green",
        "blue",
        "cyan",
        "magenta",
        "yellow",
        "black",
        "white",
        "grey",
        "pink",
    ],
    "size": [f"s{i}" for i in range(300)],
    "items": ["bread", "milk", "eggs", "jam", "tea"],
    "yes_no": ["no", "yes"],
    "level": ["low", "mid", "high", "max"],
}
MECHANISMS = {"colour": "oue", "size": "grr", "items": "mask", "yes_no": "sue", "level": "grr"}


def make_config(epsilon: float = 2.0) -> CollectionConfig:
    attributes: list[dict[str, Any]] = []
    for name, domain in DOMAINS.items():
        a: dict[str, Any] = {"name": name, "domain": domain, "mechanism": MECHANISMS[name]}
        if MECHANISMS[name] == "mask":
            a["keep_probability"] = 0.9
        attributes.append(a)
    spec = CollectionSpec.model_validate(
        {"name": "codec", "epsilon": epsilon, "attributes": attributes}
    )
    return build_config(spec)


class _Unchanged(Mask):
    """MASK's segment and statistics, but it reports its input (MASK cannot reach p = 1)."""

    def perturb(self, baskets: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        return np.asarray(baskets, dtype=bool)


@pytest.fixture
def noiseless(monkeypatch: pytest.MonkeyPatch) -> CollectionConfig:
    """The mixed config, privatized at ε = inf: SUE and GRR at ∞ are the identity.

    A collection spec refuses ε = inf, so the randomizers are swapped in where the
    privatizer reads them; layout and packing are those of the real config. OUE at ∞
    keeps the true bit with 1/2, so its attribute is served by SUE at ∞ as well.
    """
    config = make_config()

    def noiseless_mechanisms(cfg: CollectionConfig) -> list[object]:
        out: list[object] = []
        for spec_attr in cfg.spec.attributes:
            if spec_attr.mechanism == "mask":
                out.append(_Unchanged(len(spec_attr.domain), 0.9))
            elif spec_attr.mechanism == "grr":
                out.append(spec_attr.randomizer(math.inf))
            else:
                out.append(UnaryEncoding(len(spec_attr.domain), math.inf, "sue"))
        return out

    monkeypatch.setattr(CollectionConfig, "randomizers", property(noiseless_mechanisms))
    return config


def random_records(n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    records = []
    for _ in range(n):
        record: dict[str, Any] = {}
        for name, domain in DOMAINS.items():
            if name == "items":
                record[name] = {v for v in domain if rng.random() < 0.4}
            else:
                record[name] = domain[int(rng.integers(len(domain)))]
        records.append(record)
    return records


def true_sums(config: CollectionConfig, records: list[dict[str, Any]]) -> np.ndarray:
    sums = np.zeros(config.stats_length, dtype=np.int64)
    for a in config.attributes:
        for r in records:
            values = r[a.name] if a.mechanism == "mask" else [r[a.name]]
            for v in values:
                sums[a.stats_offset + a.domain.index(v)] += 1
    return sums


def test_round_trip_at_infinite_epsilon(noiseless: CollectionConfig) -> None:
    records = random_records(500, np.random.default_rng(0))
    packed = Privatizer(noiseless).privatize_many(records, seeded_rng(1))
    assert packed.shape == (500, noiseless.report_bytes) and packed.dtype == np.uint8
    batch = decode_reports(noiseless, packed)
    assert batch.valid.all() and batch.reasons == [None] * 500
    np.testing.assert_array_equal(batch.sums, true_sums(noiseless, records))


def test_round_trip_in_chunks(noiseless: CollectionConfig) -> None:
    records = random_records(37, np.random.default_rng(1))
    columns = records_to_columns(noiseless, records)
    whole = Privatizer(noiseless).privatize_columns(columns, seeded_rng(2))
    chunked = Privatizer(noiseless).privatize_columns(columns, seeded_rng(2), chunk=5)
    np.testing.assert_array_equal(whole, chunked)


def test_single_record_bytes(noiseless: CollectionConfig) -> None:
    record = {
        "colour": "red",
        "size": "s258",
        "items": ["milk", "tea"],
        "yes_no": "yes",
        "level": "max",
    }
    packed = Privatizer(noiseless).privatize(record, seeded_rng(0))
    assert isinstance(packed, bytes) and len(packed) == noiseless.report_bytes == 7
    assert packed == bytes(
        [
            0b1000_0000, 0b0000_0000,  # colour: bit 0 of 10, MSB first, 6 zero padding bits
            0x01, 0x02,  # size: GRR index 258, two bytes big-endian
            0b0100_1000,  # items: milk (1) and tea (4) of 5
            0b0100_0000,  # yes_no: bit 1 of 2
            0x03,  # level: GRR index 3, one byte
        ]
    )  # fmt: skip


def test_wire_format_examples() -> None:
    """docs/wire-format.md: OUE d=10 bits 1,0,0,0,0,0,0,0,1,1 is 0x80 0xC0; GRR d=300
    value 258 is 0x01 0x02."""
    spec = CollectionSpec.model_validate(
        {
            "name": "doc",
            "epsilon": 1.0,
            "attributes": [
                {"name": "a", "domain": [str(i) for i in range(10)], "mechanism": "oue"},
                {"name": "b", "domain": [str(i) for i in range(300)], "mechanism": "grr"},
            ],
        }
    )
    config = build_config(spec)
    batch = decode_reports(config, np.frombuffer(bytes([0x80, 0xC0, 0x01, 0x02]), dtype=np.uint8))
    assert batch.valid.tolist() == [True]
    expected = np.zeros(310, dtype=np.int64)
    expected[[0, 8, 9]] = 1
    expected[10 + 258] = 1
    np.testing.assert_array_equal(batch.sums, expected)


def test_privatize_output_has_report_bytes() -> None:
    config = make_config()
    record = {"colour": "red", "size": "s0", "items": [], "yes_no": "no", "level": "low"}
    p = Privatizer(config)
    assert len(p.privatize(record, seeded_rng(3))) == config.report_bytes
    assert len(p.privatize(record)) == config.report_bytes  # secure default
    assert p.privatize_many([record] * 4, seeded_rng(3)).shape == (4, config.report_bytes)
    assert p.privatize_many([], seeded_rng(3)).shape == (0, config.report_bytes)


def test_real_reports_always_decode_as_valid() -> None:
    config = make_config(epsilon=0.5)
    records = random_records(2000, np.random.default_rng(5))
    batch = decode_reports(config, Privatizer(config).privatize_many(records, seeded_rng(6)))
    assert batch.valid.all()
    assert batch.sums.sum() > 0


def test_grr_two_byte_index_is_big_endian() -> None:
    config = make_config()
    size = config.attribute("size")
    assert (size.encoding, size.byte_length) == ("index", 2)
    values = np.array([0, 1, 255, 256, 258, 299], dtype=np.int64)
    segment = codec._perturb_segment(
        GeneralizedRandomizedResponse(300, math.inf), values, seeded_rng(0)
    )
    assert segment.tolist() == [[0, 0], [0, 1], [0, 255], [1, 0], [1, 2], [1, 43]]


# ---------------------------------------------------------------- invalid reports


def _zero_report(config: CollectionConfig) -> np.ndarray:
    return np.zeros(config.report_bytes, dtype=np.uint8)


def test_padding_bits_make_a_report_invalid() -> None:
    config = make_config()
    colour = config.attribute("colour")  # d = 10: 6 padding bits in its second byte
    good = _zero_report(config)
    reports = []
    for bit in range(6):
        r = good.copy()
        r[colour.byte_offset + 1] = 1 << bit
        reports.append(r)
    batch = decode_reports(config, np.array([good, *reports]))
    assert batch.valid.tolist() == [True] + [False] * 6
    assert batch.reasons[0] is None
    for reason in batch.reasons[1:]:
        assert reason is not None and "colour" in reason and "padding" in reason


def test_the_last_data_bit_is_not_padding() -> None:
    config = make_config()
    colour = config.attribute("colour")
    r = _zero_report(config)
    r[colour.byte_offset + 1] = 0b0100_0000  # bit 9, the last of 10
    batch = decode_reports(config, r)
    assert batch.valid.tolist() == [True]
    assert batch.sums[colour.stats_offset + 9] == 1


@pytest.mark.parametrize(
    ("name", "index"), [("level", 4), ("level", 255), ("size", 300), ("size", 65535)]
)
def test_grr_index_outside_the_domain_is_invalid(name: str, index: int) -> None:
    config = make_config()
    a = config.attribute(name)
    r = _zero_report(config)
    r[a.byte_offset : a.byte_offset + a.byte_length] = list(index.to_bytes(a.byte_length, "big"))
    batch = decode_reports(config, r)
    assert batch.valid.tolist() == [False]
    assert (
        batch.reasons[0] is not None and name in batch.reasons[0] and "domain" in batch.reasons[0]
    )


def test_grr_last_index_is_valid() -> None:
    config = make_config()
    a = config.attribute("size")
    r = _zero_report(config)
    r[a.byte_offset : a.byte_offset + 2] = [1, 43]  # 299
    batch = decode_reports(config, r)
    assert batch.valid.tolist() == [True]
    assert batch.sums[a.stats_offset + 299] == 1


def test_sums_count_valid_reports_only_and_first_reason_wins() -> None:
    config = make_config()
    level = config.attribute("level")
    colour = config.attribute("colour")
    ok = _zero_report(config)
    ok[level.byte_offset] = 2
    both = ok.copy()
    both[colour.byte_offset + 1] = 1  # padding in colour (first attribute)
    both[level.byte_offset] = 9  # and a bad index in level
    batch = decode_reports(config, np.array([ok, both, ok]))
    assert batch.valid.tolist() == [True, False, True]
    assert batch.reasons[1] is not None and "colour" in batch.reasons[1]
    assert batch.sums[level.stats_offset + 2] == 2
    assert batch.sums[config.attribute("size").stats_offset + 0] == 2  # two valid reports


def test_decode_empty_batch() -> None:
    config = make_config()
    batch = decode_reports(config, np.zeros((0, config.report_bytes), dtype=np.uint8))
    assert batch.valid.size == 0 and batch.reasons == [] and not batch.sums.any()


@pytest.mark.parametrize("shape", [(2, 14), (7, 2), (14, 1), (2, 6), (5,), (1, 2, 7), ()])
def test_decode_refuses_a_batch_of_the_wrong_width(shape: tuple[int, ...]) -> None:
    """Reports of another length are not reinterpreted as reports of this layout."""
    config = make_config()
    assert config.report_bytes == 7
    with pytest.raises(InvalidReportError):
        decode_reports(config, np.zeros(shape, dtype=np.uint8))


def test_decode_accepts_concatenated_reports() -> None:
    config = make_config()
    flat = np.zeros(3 * config.report_bytes, dtype=np.uint8)
    assert decode_reports(config, flat).valid.tolist() == [True, True, True]


# ---------------------------------------------------------------- invalid records

GOOD = {"colour": "red", "size": "s1", "items": {"tea"}, "yes_no": "no", "level": "low"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "purple"}, "not in its domain"),
        ({"size": "s300"}, "not in its domain"),
        ({"level": 2}, "not in its domain"),
        ({"level": ["low"]}, "not in its domain"),
        ({"level": None}, "not in its domain"),
        ({"items": {"tea", "caviar"}}, "not in the catalogue"),
        ({"items": [1]}, "not in the catalogue"),
        ({"items": "tea"}, "set of items"),
        ({"items": None}, "set of items"),
        ({"items": 3}, "set of items"),
        ({"extra": "x"}, "unknown attributes ['extra']"),
    ],
)
def test_invalid_records(change: dict[str, Any], message: str) -> None:
    config = make_config()
    with pytest.raises(InvalidRecordError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Privatizer(config).privatize({**GOOD, **change}, seeded_rng(0))


def test_missing_attribute() -> None:
    config = make_config()
    record = {k: v for k, v in GOOD.items() if k != "level"}
    with pytest.raises(InvalidRecordError, match="missing attributes"):
        Privatizer(config).privatize(record, seeded_rng(0))


@pytest.mark.parametrize("record", [["red"], "red", None, 3])
def test_record_not_a_mapping(record: Any) -> None:
    with pytest.raises(InvalidRecordError):
        Privatizer(make_config()).privatize_many([record], seeded_rng(0))


def test_columns_must_match() -> None:
    config = make_config()
    columns: dict[str, list[Any]] = {name: [GOOD[name]] for name in DOMAINS}
    p = Privatizer(config)
    with pytest.raises(InvalidRecordError):
        p.privatize_columns({k: v for k, v in columns.items() if k != "size"}, seeded_rng(0))
    with pytest.raises(InvalidRecordError):
        p.privatize_columns({**columns, "size": ["s1", "s2"]}, seeded_rng(0))


def test_an_error_in_a_later_record_privatizes_nothing() -> None:
    config = make_config()
    with pytest.raises(InvalidRecordError, match="record 2"):
        Privatizer(config).privatize_many([GOOD, GOOD, {"colour": "red"}], seeded_rng(0))


def test_an_out_of_domain_value_lists_the_allowed_ones() -> None:
    """The error names the allowed values, the first ten of a long domain and how many more."""
    config = make_config()
    with pytest.raises(InvalidRecordError, match=r"allowed: 'red', 'green', .*, 'pink'$"):
        Privatizer(config).privatize({**GOOD, "colour": "purple"}, seeded_rng(0))
    with pytest.raises(InvalidRecordError, match=r"allowed: 's0', .*, 's9' \(and 290 more\)$"):
        Privatizer(config).privatize({**GOOD, "size": "s300"}, seeded_rng(0))


class _Record(Mapping[str, Any]):
    """A mapping that is not a dict (the record-by-record path)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_records_to_columns_reads_dicts_and_other_mappings_alike() -> None:
    config = make_config()
    records = [{**GOOD, "colour": colour} for colour in ("red", "green", "blue")]
    columns = records_to_columns(config, records)
    assert columns == records_to_columns(config, [_Record(r) for r in records])
    assert columns["colour"] == ["red", "green", "blue"]
    assert list(columns) == list(config.record_names)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({**GOOD, "extra": "x"}, r"record 2: missing attributes \[\], unknown attributes"),
        (
            {k: v for k, v in GOOD.items() if k != "level"},
            r"record 2: missing attributes \['level'\]",
        ),
        (["red"], "record 2 is not a mapping"),
    ],
)
def test_records_to_columns_names_the_first_bad_record(bad: Any, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        records_to_columns(make_config(), [GOOD, dict(GOOD), bad, dict(GOOD)])
