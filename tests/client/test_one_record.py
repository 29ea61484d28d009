"""The per-record path and the cheap report builder: same bytes, same checks, fresh ids."""

from __future__ import annotations

import base64
import copy
import math
import multiprocessing
import re

import numpy as np
import pytest
from tests.statistical._stats import (
    ALPHA,
    assert_z_power,
    binomial_pvalue,
    chi2_gof,
    chi2_gof_rows,
    wrong_epsilons,
)

from ldp_client import privatize
from ldp_client import reports as reports_module
from ldp_client.one_record import _flh_answer, record_path
from ldp_client.privatize import privatize_packed
from ldp_client.reports import build_reports, encode_rows, next_report_id, report_ids
from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms.hashing import buckets
from ldp_shared.mechanisms.local_hashing import LocalHashing, LocalHashingSpec
from ldp_shared.rand import seeded_rng, shared_secure_rng
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire.reports import REPORT_ID_PATTERN, Report, ReportBatch, decode_bits


def _config(*mechanisms: str, d: int = 11) -> CollectionConfig:
    attributes = [
        AttributeSpec(name=f"a{i}", domain=[f"v{j}" for j in range(d)], mechanism=m)
        for i, m in enumerate(mechanisms)
    ]
    return build_config(CollectionSpec(name="c", attributes=attributes, epsilon=2.0))


URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _letter_uniformity(ids: list[str]) -> float:
    """p-value of the ids' characters, position by position, being uniform over the
    URL-safe alphabet (22 positions × 64 letters)."""
    chars = np.frombuffer("".join(ids).encode("ascii"), dtype=np.uint8).reshape(len(ids), 22)
    letter = np.full(256, -1)
    letter[np.frombuffer(URL_SAFE.encode("ascii"), dtype=np.uint8)] = np.arange(64)
    found = letter[chars]
    assert (found >= 0).all()
    counts = np.stack([np.bincount(found[:, k], minlength=64) for k in range(22)])
    return chi2_gof_rows(counts, np.full((22, 64), 1 / 64)).pvalue


def test_report_ids_are_fresh_132_bit_tokens() -> None:
    ids = report_ids(20_000) + [next_report_id() for _ in range(300)]
    assert len(set(ids)) == len(ids)
    for token in ids[:50] + ids[-50:]:
        assert re.fullmatch(REPORT_ID_PATTERN, token) and len(token) == 22
    assert report_ids(0) == []


def test_report_id_letters_are_uniform(monkeypatch: pytest.MonkeyPatch) -> None:
    """The letters of the ids, from the id generator seeded for the test."""
    monkeypatch.setattr(reports_module, "_id_source", seeded_rng(11))
    assert _letter_uniformity(report_ids(20_000)) > ALPHA


def test_the_id_uniformity_check_has_power() -> None:
    """An id of 128 random bits in base64 (whose 22nd letter holds 4 bits) would fail."""
    rng = np.random.default_rng(8)
    ids = [
        base64.urlsafe_b64encode(rng.bytes(16)).decode("ascii").rstrip("=") for _ in range(20_000)
    ]
    assert _letter_uniformity(ids) < ALPHA


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 128, 129])
def test_encode_rows_is_base64_of_each_row(width: int) -> None:
    rows = np.random.default_rng(width).integers(0, 256, size=(7, width), dtype=np.uint8)
    expected = [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]
    assert encode_rows(rows) == expected


def test_built_reports_equal_validated_ones() -> None:
    built = build_reports(["abcdefgh12"], "f" * 64, ["AAE="])
    made = Report(id="abcdefgh12", config_hash="f" * 64, bits="AAE=")
    assert built == [made]
    assert built[0].model_dump_json() == made.model_dump_json()
    assert ReportBatch(reports=built).reports[0] == made


@pytest.mark.parametrize("mechanisms", [("grr",), ("sue",), ("oue", "grr", "sue")])
def test_one_record_path_gives_valid_reproducible_reports(mechanisms: tuple[str, ...]) -> None:
    config = _config(*mechanisms)
    assert record_path(config) is not None
    record = {f"a{i}": "v3" for i in range(len(mechanisms))}
    first = [privatize_packed(config, record, seeded_rng(4)) for _ in range(2)]
    assert first[0] == first[1]
    gen = seeded_rng(5)
    packed = [privatize_packed(config, record, gen) for _ in range(200)]
    matrix = np.frombuffer(b"".join(packed), dtype=np.uint8).reshape(200, -1)
    assert decode_reports(config, matrix).valid.all()
    report = privatize(config, record)
    assert len(decode_bits(report.bits)) == config.report_bytes
    assert report.config_hash == config.config_hash


def test_one_record_path_leaves_bad_records_to_the_checks() -> None:
    config = _config("grr", "sue")
    with pytest.raises(InvalidRecordError, match="not in its domain"):
        privatize(config, {"a0": "v3", "a1": "nope"})
    with pytest.raises(InvalidRecordError, match="missing"):
        privatize(config, {"a0": "v3"})
    with pytest.raises(InvalidRecordError):
        privatize(config, {"a0": ["v3"], "a1": "v1"})


def test_other_mechanisms_take_the_vectorised_path() -> None:
    spec = CollectionSpec(
        name="c",
        attributes=[AttributeSpec(name="x", mechanism="duchi", lo=0.0, hi=1.0)],
        epsilon=1.0,
    )
    config = build_config(spec)
    assert record_path(config) is None
    assert len(decode_bits(privatize(config, {"x": 0.5}).bits)) == config.report_bytes


def _child(queue: multiprocessing.Queue[object]) -> None:
    queue.put((len(reports_module._pool), shared_secure_rng().integers(0, 2**62), report_ids(4)))


def test_a_forked_child_draws_its_own_ids_and_noise() -> None:
    next_report_id()  # fill the pool
    parent_draw = int(shared_secure_rng().integers(0, 2**62))
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[object] = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    pool_size, child_draw, child_ids = queue.get(timeout=30)  # type: ignore[misc]
    child.join(timeout=30)
    assert pool_size == 0
    assert child_draw != int(shared_secure_rng().integers(0, 2**62)) != parent_draw
    assert child_ids != report_ids(4)  # the id generator too is keyed anew in the child


def _flh_config(epsilon: float, domain: list[str] | None = None) -> CollectionConfig:
    attribute = AttributeSpec(
        name="url", mechanism="flh", salt="0f" * 16, **({"domain": domain} if domain else {})
    )
    return build_config(CollectionSpec(name="c", attributes=[attribute], epsilon=epsilon))


def _flh_answers(config: CollectionConfig, value: object, n: int, seed: int) -> np.ndarray:
    gen = seeded_rng(seed)
    return _unpacked(b"".join(privatize_packed(config, {"url": value}, gen) for _ in range(n)))


def _unpacked(packed: bytes) -> np.ndarray:
    """``(j, y)`` of packed FLH answers."""
    rows = np.frombuffer(packed, dtype=np.uint8).reshape(-1, 3).astype(np.int64)
    return np.stack([(rows[:, 0] << 8) | rows[:, 1], rows[:, 2]], axis=1)


FLH_EPSILON = 2.0
FLH_VALUE = "https://example.org/a"
FLH_REPORTS = 20_000


def _own_buckets(config: CollectionConfig, answers: np.ndarray) -> np.ndarray:
    """The value's own bucket under the function each answer names."""
    key = config.spec.attributes[0].encode([FLH_VALUE])  # type: ignore[attr-defined]
    return buckets(np.repeat(key, len(answers)), answers[:, 0], config.randomizers[0].g)  # type: ignore[attr-defined]


def _at_epsilon(randomizer: LocalHashing, epsilon: float) -> LocalHashing:
    """The randomizer with the keep probability of ``epsilon`` at its own ``g``: a
    mechanism whose ε is wrong and whose answers look alike."""
    wrong = copy.copy(randomizer)
    e = math.exp(epsilon)
    object.__setattr__(wrong, "p", e / (e + randomizer.g - 1))
    return wrong


@pytest.mark.statistical
def test_flh_one_record_answers_have_the_mechanisms_distribution() -> None:
    config = _flh_config(FLH_EPSILON)
    assert record_path(config) is not None
    right = config.randomizers[0]
    assert isinstance(right, LocalHashing)
    answers = _flh_answers(config, FLH_VALUE, FLH_REPORTS, seed=11)
    own = _own_buckets(config, answers)
    kept = answers[:, 1] == own
    assert binomial_pvalue(int(kept.sum()), FLH_REPORTS, right.p) >= ALPHA
    # j uniform over the k functions (folded into 16 cells); a moved bucket uniform over
    # the g - 1 others (its rank among them)
    folded = np.bincount(answers[:, 0] % 16, minlength=16)
    assert chi2_gof(folded, np.full(16, 1 / 16)).pvalue >= ALPHA
    moved = answers[~kept]
    rank = moved[:, 1] - (moved[:, 1] > own[~kept])
    uniform = np.full(right.g - 1, 1 / (right.g - 1))
    assert chi2_gof(np.bincount(rank, minlength=right.g - 1), uniform).pvalue >= ALPHA
    spec = config.spec.attributes[0]
    assert isinstance(spec, LocalHashingSpec)
    for k, wrong_epsilon in enumerate(wrong_epsilons(FLH_EPSILON)):
        wrong = _at_epsilon(right, wrong_epsilon)
        assert_z_power(FLH_REPORTS, right.p, wrong.p, ALPHA)
        answer = _flh_answer(spec, wrong)
        gen = seeded_rng(12 + k)
        wrong_answers = _unpacked(b"".join(answer(FLH_VALUE, gen) for _ in range(FLH_REPORTS)))
        wrong_kept = int((wrong_answers[:, 1] == _own_buckets(config, wrong_answers)).sum())
        assert binomial_pvalue(wrong_kept, FLH_REPORTS, right.p) < ALPHA


def test_flh_one_record_path_equals_the_vectorised_encoding() -> None:
    for config in (_flh_config(4.0), _flh_config(4.0, domain=["a", "b", "café"])):
        assert record_path(config) is not None
        first = [privatize_packed(config, {"url": "b"}, seeded_rng(4)) for _ in range(2)]
        assert first[0] == first[1] and len(first[0]) == 3
        gen = seeded_rng(5)
        packed = [privatize_packed(config, {"url": "café"}, gen) for _ in range(300)]
        matrix = np.frombuffer(b"".join(packed), dtype=np.uint8).reshape(300, 3)
        assert decode_reports(config, matrix).valid.all()


@pytest.mark.parametrize(
    ("value", "problem"),
    [("", "empty string"), ("x" * 300, "over the maximum"), (7, "expected a string")],
)
def test_flh_one_record_path_leaves_bad_values_to_the_checks(value: object, problem: str) -> None:
    with pytest.raises(InvalidRecordError, match=problem):
        privatize(_flh_config(2.0), {"url": value})
    with pytest.raises(InvalidRecordError, match="not in its domain"):
        privatize(_flh_config(2.0, domain=["a", "b"]), {"url": "c"})
