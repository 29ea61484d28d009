"""Synthetic Quest-style baskets, packing and FIMI files (ldp_simulation.baskets)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_simulation.baskets import (
    QUEST_BLOCK,
    QuestParameters,
    basket_lists,
    item_names,
    pack_baskets,
    pack_positions,
    quest_baskets,
    quest_chunks,
    read_fimi,
    unpack_baskets,
)


def test_quest_is_a_function_of_the_seed() -> None:
    params = QuestParameters(n_baskets=3000, n_items=100, n_patterns=200)
    first = quest_baskets(params, seed=1)
    assert first.shape == (3000, 13) and first.dtype == np.uint8
    assert np.array_equal(first, quest_baskets(params, seed=1))
    assert not np.array_equal(first, quest_baskets(params, seed=2))
    # padding bits (items 100..103) are never set
    assert not unpack_baskets(first, 104)[:, 100:].any()


def test_quest_prefixes_and_blocks_are_stable() -> None:
    params = QuestParameters(n_baskets=QUEST_BLOCK + 500, n_items=50, n_patterns=40)
    whole = quest_baskets(params, seed=9)
    part = np.concatenate(list(quest_chunks(params, seed=9, rows=QUEST_BLOCK + 10)))
    assert np.array_equal(part, whole[: QUEST_BLOCK + 10])


def test_quest_baskets_look_like_t10i4() -> None:
    params = QuestParameters(n_baskets=20_000, n_items=1000)
    matrix = unpack_baskets(quest_baskets(params, seed=3), 1000)
    sizes = matrix.sum(axis=1)
    # target sizes ~ Poisson(10), shrunk a little by overlaps and corruption, never empty
    assert 7.0 < sizes.mean() < 11.0
    assert sizes.min() >= 1
    # patterns make pairs co-occur far above independence for the top items
    support = matrix.mean(axis=0)
    top = np.argsort(support)[-20:]
    joint = (matrix[:, top].T.astype(float) @ matrix[:, top]) / matrix.shape[0]
    lift = joint / np.outer(support[top], support[top])
    np.fill_diagonal(lift, 0.0)
    assert lift.max() > 3.0


@pytest.mark.parametrize(
    "changes",
    [
        {"n_baskets": 0},
        {"n_items": 1},
        {"avg_basket_size": 0.0},
        {"avg_pattern_size": -1.0},
        {"n_patterns": 0},
        {"correlation": 1.5},
        {"corruption_mean": 1.0},
    ],
)
def test_quest_parameters_are_checked(changes: dict) -> None:
    values = {"n_baskets": 10, **changes}
    with pytest.raises(ConfigurationError):
        QuestParameters(**values)


def test_pack_and_lists_round_trip() -> None:
    names = item_names(20)
    assert names[0] == "item0001" and names[-1] == "item0020" and len(set(names)) == 20
    baskets = [["item0003", "item0001"], [], ["item0020", "item0020"]]
    packed = pack_baskets(baskets, names)
    assert packed.shape == (3, 3)
    assert basket_lists(packed, names) == [["item0001", "item0003"], [], ["item0020"]]
    assert np.array_equal(packed, pack_positions(np.array([0, 0, 2]), np.array([0, 2, 19]), 3, 20))


def test_an_item_outside_the_catalogue_is_an_error() -> None:
    with pytest.raises(InvalidRecordError, match="'milk'"):
        pack_baskets([["bread"], ["milk"]], ["bread", "eggs"])
    with pytest.raises(ConfigurationError, match="duplicate"):
        pack_baskets([["bread"]], ["bread", "bread"])


def test_read_fimi(tmp_path: Path) -> None:
    path = tmp_path / "tiny.dat"
    path.write_text("3 7 10 \n7 \n\n10 3 \n", encoding="ascii")
    data = read_fimi(path)
    assert data.items == ["3", "7", "10"]
    assert data.n_baskets == 4 and data.n_items == 3
    assert unpack_baskets(data.packed, 3).astype(int).tolist() == [
        [1, 1, 1],
        [0, 1, 0],
        [0, 0, 0],
        [1, 0, 1],
    ]
