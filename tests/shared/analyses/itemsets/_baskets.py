"""Baskets shared by the itemset tests: Quest data, its distortion, mlxtend's supports."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from mlxtend.frequent_patterns import apriori, fpgrowth

from ldp_shared.analyses.itemsets import BitChannel
from ldp_shared.mechanisms import Mask
from ldp_shared.rand import seeded_rng
from ldp_simulation.baskets import QuestParameters, quest_baskets, unpack_baskets

EXACT = BitChannel.exact()


def quest(n: int = 3000, items: int = 40, seed: int = 7) -> np.ndarray:
    params = QuestParameters(
        n_baskets=n, n_items=items, avg_basket_size=6, avg_pattern_size=3, n_patterns=30
    )
    return quest_baskets(params, seed)


def distort(packed: np.ndarray, keep_probability: float, seed: int) -> np.ndarray:
    """The 40-item baskets ``packed`` after MASK with ``keep_probability``, packed again."""
    return np.packbits(
        Mask(d=40, keep_probability=keep_probability).perturb(
            unpack_baskets(packed, 40), seeded_rng(seed)
        ),
        axis=1,
    )


def mlxtend_supports(packed: np.ndarray, n_items: int, min_support: float, how: str) -> dict:
    frame = pd.DataFrame(unpack_baskets(packed, n_items))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found = (apriori if how == "apriori" else fpgrowth)(frame, min_support=min_support)
    return {
        frozenset(s): float(v) for s, v in zip(found["itemsets"], found["support"], strict=True)
    }
