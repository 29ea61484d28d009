"""Small public data sets shipped with ldpcollect (see LICENSE.md beside this file)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class CategoricalDataset:
    """Records of categorical attributes with their full value domains (in UCI order)."""

    name: str
    domains: dict[str, list[str]]
    records: list[dict[str, str]]
    citation: str


CAR_DOMAINS: dict[str, list[str]] = {
    "buying": ["vhigh", "high", "med", "low"],
    "maint": ["vhigh", "high", "med", "low"],
    "doors": ["2", "3", "4", "5more"],
    "persons": ["2", "4", "more"],
    "lug_boot": ["small", "med", "big"],
    "safety": ["low", "med", "high"],
    "class": ["unacc", "acc", "good", "vgood"],
}

CAR_CITATION = (
    "UCI Car Evaluation (Bohanec and Zupan, 1997), UCI Machine Learning Repository, CC BY 4.0"
)


def load_car() -> CategoricalDataset:
    """The 1,728 records of UCI Car Evaluation, 7 categorical attributes (class included)."""
    text = resources.files(__package__).joinpath("car.data").read_text(encoding="ascii")
    names = list(CAR_DOMAINS)
    records = [dict(zip(names, line.split(","), strict=True)) for line in text.splitlines() if line]
    return CategoricalDataset("car", CAR_DOMAINS, records, CAR_CITATION)
