"""On the device, a record whose label is not one of the job's layout values is refused
with a typed error naming the label: never reported as class 0."""

from __future__ import annotations

from typing import Any

import pytest
from tests.client.test_training_client import LAYOUT, participation

from ldp_client.training import make_report, rebuild_mechanisms
from ldp_shared.errors import InvalidRecordError
from ldp_shared.rand import seeded_rng


def _with_negative() -> Any:
    p = participation()
    return p.model_copy(update={"layout": LAYOUT.model_copy(update={"negative": "no"})})


@pytest.mark.parametrize("label", [1.0, True, "PD", None])
def test_a_wrong_label_is_refused_on_the_device(label: Any) -> None:
    p = _with_negative()
    record = {"x1": 4.0, "color": "blue", "y": label}
    with pytest.raises(InvalidRecordError, match=r"label 'y': .* is not one of the layout's"):
        make_report(p, rebuild_mechanisms(p), record, seeded_rng(0))


@pytest.mark.parametrize("label", ["yes", "no"])
def test_the_layout_values_are_reported(label: str) -> None:
    p = _with_negative()
    record = {"x1": 4.0, "color": "blue", "y": label}
    assert make_report(p, rebuild_mechanisms(p), record, seeded_rng(0))


@pytest.mark.parametrize("label", [1.0, True])
def test_a_label_that_is_not_text_is_refused_without_a_negative_value(label: Any) -> None:
    p = participation()
    with pytest.raises(InvalidRecordError, match="is not text"):
        make_report(p, rebuild_mechanisms(p), {"x1": 4.0, "color": "blue", "y": label},
                    seeded_rng(0))  # fmt: skip
