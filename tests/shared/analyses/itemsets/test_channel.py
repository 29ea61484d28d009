"""The bit channel (ldp_shared.analyses.itemsets.channel): its parameters and their ranges."""

from __future__ import annotations

import math

import pytest

from ldp_shared.analyses.itemsets import BitChannel
from ldp_shared.errors import ConfigurationError

from ._baskets import EXACT


def test_channel_parameters() -> None:
    mask = BitChannel.mask(0.9)
    assert (mask.p, mask.q) == (0.9, pytest.approx(0.1))
    assert mask.a == pytest.approx(1.25) and mask.b == pytest.approx(-0.125)
    # E[z²|x=1] - E[z²|x=0] = 1 for MASK (so the standard error formula has d = 1)
    assert mask.e1 - mask.e0 == pytest.approx(1.0)
    assert mask.e0 == pytest.approx(0.9 * 0.1 / 0.8**2)
    assert (EXACT.a, EXACT.b, EXACT.e0, EXACT.e1) == (1.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("p", [0.5, 1.0, 0.4, 1.2, math.nan])
def test_mask_channel_needs_p_in_the_open_interval(p: float) -> None:
    with pytest.raises(ConfigurationError, match=r"\(0.5, 1\)"):
        BitChannel.mask(p)


@pytest.mark.parametrize(("p", "q"), [(0.5, 0.5), (0.3, 0.6), (1.1, 0.0), (0.9, -0.1)])
def test_channel_needs_q_below_p(p: float, q: float) -> None:
    with pytest.raises(ConfigurationError):
        BitChannel(p, q)
