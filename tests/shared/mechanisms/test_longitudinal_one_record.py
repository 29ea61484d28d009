"""A device's one-record path of the longitudinal mechanisms (plain Python, permanent
responses kept in memory, instantaneous draws taken in blocks from the generator).

* Deterministic parts: the permanent response is the vector path's (the same PRF draws
  and arithmetic), memoised, bounded; dBitFlipPM's answer (no fresh noise) is the vector
  path's; the bulk draws are used once each, per generator, and dropped after a fork.
* Distribution (``statistical``, fixed seeds, α = 0.001, each with a power check that
  rejects ε₁·1.3 and ε₁/1.3): the answers of one-record calls, over fresh devices (a key
  each: the chained channel) and over one device's repeated reports (the instantaneous
  channel around its one memoised response), for L-GRR and L-OSUE.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from numpy.typing import NDArray
from tests.statistical._stats import (
    ALPHA,
    assert_chi2_power,
    assert_z_power,
    binomial_pvalue,
    chi2_gof,
    pooled_noncentrality,
    wrong_epsilons,
)

from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms import DBitFlipPM, LongitudinalGRR, LongitudinalOSUE, longitudinal
from ldp_shared.mechanisms.longitudinal import (
    PermanentMemo,
    prf_uniform_list,
    prf_uniforms,
)
from ldp_shared.rand import seeded_rng


def keys(count: int, seed: int = 7) -> list[bytes]:
    gen = np.random.default_rng(seed)
    return [row.tobytes() for row in gen.integers(0, 256, size=(count, 32), dtype=np.uint8)]


def one(v: int) -> NDArray[np.int64]:
    return np.array([v], dtype=np.int64)


def test_prf_lists_are_the_prf_arrays() -> None:
    for key in keys(20):
        for count in (1, 2, 4, 5, 24):
            assert (
                prf_uniform_list(key, b"m\n3", count)
                == prf_uniforms(key, [b"m\n3"], count)[0].tolist()
            )


@pytest.mark.parametrize(
    ("d", "epsilon", "infinity"), [(2, 0.5, 1.0), (8, 1.0, 2.0), (100, 4.0, 4.0)]
)
def test_lgrr_one_record_has_the_vector_paths_permanent_response(
    d: int, epsilon: float, infinity: float
) -> None:
    mech = LongitudinalGRR(d=d, epsilon=epsilon, epsilon_infinity=infinity)
    seen = set()
    for i, key in enumerate(keys(300)):
        v = i % d
        z = mech.permanent_one(v, key)
        assert z == int(mech.permanent(np.array([v, v]), key)[0])  # the same PRF draws
        seen.add(z == v)
        fast = mech.perturb_memoised(one(v), key, seeded_rng(i))
        assert fast.shape == (1,) and fast.dtype == np.int64 and 0 <= fast[0] < d
        if mech.p2 == 1.0:  # ε₁ = ε∞: no instantaneous noise, the answer is z
            assert int(fast[0]) == z
    assert seen == {True, False}  # both branches of the permanent GRR step were taken


@pytest.mark.parametrize(("d", "b"), [(8, 2), (24, 2), (5, 5), (30, 7)])
def test_dbitflip_one_record_equals_the_vector_path(d: int, b: int) -> None:
    mech = DBitFlipPM(d=d, b=b, epsilon=1.0)
    for i, key in enumerate(keys(200)):
        v = (i * 7) % d
        fast = mech.perturb_memoised(one(v), key)
        slow = mech.perturb_memoised(np.array([v, v]), key)[:1]
        assert fast.tolist() == slow.tolist()
        fast[0, 0] = -1  # the caller owns its answer: the memoised one is untouched
        assert mech.perturb_memoised(one(v), key).tolist() == slow.tolist()


def test_one_record_refuses_a_value_outside_the_domain() -> None:
    for mech in (
        LongitudinalGRR(d=4, epsilon=1.0, epsilon_infinity=2.0),
        LongitudinalOSUE(d=4, epsilon=1.0, epsilon_infinity=2.0),
        DBitFlipPM(d=4, b=2, epsilon=1.0),
    ):
        for bad in (one(4), one(-1), np.array([1.0]), np.array([[1]])):
            with pytest.raises(InvalidRecordError):
                mech.perturb_memoised(bad, b"k" * 32, seeded_rng(0))
        assert mech.perturb_memoised(np.array([3], dtype=np.uint8), b"k" * 32).shape[0] == 1


def test_the_memo_is_bounded_first_in_first_out() -> None:
    memo: PermanentMemo[int] = PermanentMemo(entries=3)
    for v in range(5):
        memo.put(b"k", v, 10 * v)
    assert len(memo) == 3
    assert [memo.get(b"k", v) for v in range(5)] == [None, None, 20, 30, 40]
    assert memo.get(b"other", 4) is None


def test_a_mechanism_keeps_at_most_memo_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(longitudinal, "MEMO_ENTRIES", 10)
    mech = LongitudinalGRR(d=8, epsilon=1.0, epsilon_infinity=2.0)
    for key in keys(50):
        mech.perturb_memoised(one(3), key, seeded_rng(0))
    assert len(mech._permanent_memo) == 10


@pytest.mark.parametrize(
    "mech",
    [
        LongitudinalGRR(d=6, epsilon=1.0, epsilon_infinity=2.0),
        LongitudinalOSUE(d=6, epsilon=1.0, epsilon_infinity=2.0),
        DBitFlipPM(d=6, b=2, epsilon=1.0),
    ],
    ids=["l-grr", "l-osue", "dbitflippm"],
)
def test_a_pickled_randomizer_leaves_its_memo_and_draws_behind(mech: object) -> None:
    assert isinstance(mech, LongitudinalGRR | LongitudinalOSUE | DBitFlipPM)
    mech.perturb_memoised(one(2), b"k" * 32, seeded_rng(0))
    assert "_permanent_memo" in vars(mech)
    copy = pickle.loads(pickle.dumps(mech))
    assert copy == mech
    assert not {"_permanent_memo", "_one_record_draws", "_sampled_memo"} & set(vars(copy))


# ---------------------------------------------------------------- distribution

SEED = 20_261_127
D, EPSILON, INFINITY = 8, 1.0, 3.0
DEVICES = 20_000
REPEATS = 20_000


def lgrr(epsilon: float = EPSILON) -> LongitudinalGRR:
    return LongitudinalGRR(d=D, epsilon=epsilon, epsilon_infinity=INFINITY)


def losue(epsilon: float = EPSILON) -> LongitudinalOSUE:
    return LongitudinalOSUE(d=D, epsilon=epsilon, epsilon_infinity=INFINITY)


def grr_cells(d: int, at: int, keep: float) -> NDArray[np.float64]:
    cells = np.full(d, (1.0 - keep) / (d - 1))
    cells[at] = keep
    return cells


def lgrr_fresh_counts(mech: LongitudinalGRR, seed: int) -> NDArray[np.int64]:
    """Answers of one-record calls for value 0, each from a new device (a key each)."""
    gen = seeded_rng(seed)
    answers = [int(mech.perturb_memoised(one(0), key, gen)[0]) for key in keys(DEVICES, seed)]
    return np.bincount(answers, minlength=D)


def lgrr_repeated_counts(mech: LongitudinalGRR, key: bytes, seed: int) -> NDArray[np.int64]:
    """One device's answers to ``REPEATS`` one-record calls for value 0."""
    gen = seeded_rng(seed)
    answers = [int(mech.perturb_memoised(one(0), key, gen)[0]) for _ in range(REPEATS)]
    return np.bincount(answers, minlength=D)


@pytest.mark.statistical
def test_lgrr_one_record_answers_follow_the_chained_channel() -> None:
    right = lgrr()
    expected = grr_cells(D, 0, right.p)
    assert chi2_gof(lgrr_fresh_counts(right, SEED), expected).pvalue >= ALPHA
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = lgrr(wrong_epsilon)
        lam = pooled_noncentrality(DEVICES, expected, grr_cells(D, 0, wrong.p))
        assert_chi2_power(lam, D - 1)
        assert chi2_gof(lgrr_fresh_counts(wrong, SEED + 1 + k), expected).pvalue < ALPHA


@pytest.mark.statistical
def test_lgrr_one_devices_reports_follow_the_instantaneous_channel() -> None:
    right = lgrr()
    key = keys(1, SEED)[0]
    z = right.permanent_one(0, key)
    expected = grr_cells(D, z, right.p2)
    assert chi2_gof(lgrr_repeated_counts(right, key, SEED + 3), expected).pvalue >= ALPHA
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = lgrr(wrong_epsilon)
        assert wrong.permanent_one(0, key) == z  # the same permanent step (same ε∞)
        lam = pooled_noncentrality(REPEATS, expected, grr_cells(D, z, wrong.p2))
        assert_chi2_power(lam, D - 1)
        counts = lgrr_repeated_counts(wrong, key, SEED + 4 + k)
        assert chi2_gof(counts, expected).pvalue < ALPHA


def losue_fresh_bits(mech: LongitudinalOSUE, seed: int) -> NDArray[np.bool_]:
    """``DEVICES × d`` answers of one-record calls for value ``i mod d``, a key each."""
    gen = seeded_rng(seed)
    rows = [
        mech.perturb_memoised(one(i % D), key, gen)[0] for i, key in enumerate(keys(DEVICES, seed))
    ]
    return np.array(rows)


def split_counts(bits: NDArray[np.bool_]) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(ones, trials)`` at the true bits and at the others (value ``i mod d``)."""
    truth = np.arange(bits.shape[0]) % D
    on = int(bits[np.arange(bits.shape[0]), truth].sum())
    return (on, bits.shape[0]), (int(bits.sum()) - on, bits.size - bits.shape[0])


@pytest.mark.statistical
def test_losue_one_record_answers_follow_the_chained_channel() -> None:
    right = losue()
    (on, on_n), (off, off_n) = split_counts(losue_fresh_bits(right, SEED + 6))
    assert binomial_pvalue(on, on_n, right.p) >= ALPHA / 2
    assert binomial_pvalue(off, off_n, right.q) >= ALPHA / 2
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = losue(wrong_epsilon)
        assert_z_power(off_n, right.q, wrong.q, ALPHA / 2)
        (on, on_n), (off, off_n) = split_counts(losue_fresh_bits(wrong, SEED + 7 + k))
        assert min(binomial_pvalue(on, on_n, right.p), binomial_pvalue(off, off_n, right.q)) < (
            ALPHA / 2
        )


def losue_flips(mech: LongitudinalOSUE, key: bytes, seed: int) -> tuple[int, int]:
    """(bits that differ from the memoised vector, bits) over one device's repeats."""
    gen = seeded_rng(seed)
    permanent = mech.permanent_one(2, key)
    answers = np.vstack([mech.perturb_memoised(one(2), key, gen) for _ in range(REPEATS)])
    return int((answers != permanent).sum()), answers.size


@pytest.mark.statistical
def test_losue_one_devices_reports_flip_its_vector_at_q2() -> None:
    right = losue()
    key = keys(1, SEED + 9)[0]
    flipped, total = losue_flips(right, key, SEED + 10)
    assert binomial_pvalue(flipped, total, right.q2) >= ALPHA
    for k, wrong_epsilon in enumerate(wrong_epsilons(EPSILON)):
        wrong = losue(wrong_epsilon)
        assert_z_power(total, right.q2, wrong.q2, ALPHA)
        flipped, total = losue_flips(wrong, key, SEED + 11 + k)
        assert binomial_pvalue(flipped, total, right.q2) < ALPHA
