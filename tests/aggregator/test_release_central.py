"""The release header every attribute release starts with (frequencies, heavy hitters,
means, quantiles) carries a shuffled collection's central guarantee, and nothing for an
unshuffled one."""

from __future__ import annotations

import pytest

from ldp_aggregator.release import central_of, release_header
from ldp_shared.central import released_central
from ldp_shared.collection import build_config
from ldp_shared.schema import CollectionSpec

SPEC = {
    "name": "people",
    "epsilon": 2.0,
    "attributes": [
        {"name": "word", "mechanism": "pem", "max_length": 8},
        {"name": "hours", "mechanism": "duchi", "lo": 0, "hi": 10},
    ],
}


@pytest.mark.parametrize("attribute", ["word", "hours"])
def test_the_header_carries_the_central_guarantee_only_when_shuffled(attribute: str) -> None:
    shuffled = build_config(CollectionSpec.model_validate({**SPEC, "shuffled": True}))
    plain = build_config(CollectionSpec.model_validate(SPEC))
    header = release_header(shuffled, shuffled.attribute(attribute), 50_000, 0.95)
    expected = released_central(shuffled.epsilon, shuffled.delta, 50_000)
    assert expected is not None and header["central"] == expected
    assert expected.epsilon < shuffled.epsilon / 5  # 50,000 reports amplify ε₀ = 2 a lot
    assert release_header(plain, plain.attribute(attribute), 50_000, 0.95)["central"] is None
    assert plain.shuffling is None and shuffled.shuffling is not None
    assert central_of(shuffled, 0) is None
