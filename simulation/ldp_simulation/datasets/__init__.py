"""Small public data sets shipped with ldpcollect (see LICENSE.md beside this file)."""

from __future__ import annotations

import csv
import gzip
import io
import math
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


@dataclass(frozen=True)
class MixedDataset:
    """Records of bounded numbers and categorical values: each numeric attribute with the
    range its documentation gives, each categorical one with its full domain."""

    name: str
    bounds: dict[str, tuple[float, float]]
    domains: dict[str, list[str]]
    records: list[dict[str, int | str]]
    citation: str


# The bounds come from how the data were made, not from the values in the file:
# Becker's extraction kept the 1994 Census (CPS) records with AAGE > 16 and HRSWK > 0
# (adult.names), so age >= 17 and hours >= 1; at the top, the CPS public-use files of
# the time top-coded age at 90, and the usual hours per week is a two-digit field, so
# 99 is the most it can say. An analyst could fix these before seeing any record.
ADULT_BOUNDS: dict[str, tuple[float, float]] = {"age": (17, 90), "hours_per_week": (1, 99)}
ADULT_DOMAINS: dict[str, list[str]] = {"sex": ["Female", "Male"]}

ADULT_CITATION = (
    "UCI Adult (Kohavi and Becker, 1996), UCI Machine Learning Repository, CC BY 4.0; "
    "columns age, hours-per-week and sex of adult.data"
)


def load_adult() -> MixedDataset:
    """The 32,561 records of UCI Adult's ``adult.data``, three columns: ``age`` and
    ``hours_per_week`` (whole numbers) and ``sex`` (see LICENSE.md for the extract)."""
    packed = resources.files(__package__).joinpath("adult.csv.gz").read_bytes()
    text = gzip.decompress(packed).decode("ascii")
    records: list[dict[str, int | str]] = [
        {"age": int(row["age"]), "hours_per_week": int(row["hours_per_week"]), "sex": row["sex"]}
        for row in csv.DictReader(io.StringIO(text))
    ]
    return MixedDataset("adult", ADULT_BOUNDS, ADULT_DOMAINS, records, ADULT_CITATION)


CANCER_MEASUREMENTS = (
    "radius",
    "texture",
    "perimeter",
    "area",
    "smoothness",
    "compactness",
    "concavity",
    "concave_points",
    "symmetry",
    "fractal_dimension",
)
CANCER_FEATURES = [
    f"{statistic}_{measurement}"
    for statistic in ("mean", "se", "worst")
    for measurement in CANCER_MEASUREMENTS
]
"""The 30 features in file order: each measurement's mean, then standard errors, then worst."""

CANCER_CITATION = (
    "UCI Breast Cancer Wisconsin (Diagnostic) (Wolberg, Mangasarian, Street and Street, 1993),"
    " UCI Machine Learning Repository, CC BY 4.0"
)


@dataclass(frozen=True)
class NumericDataset:
    """Records of numeric features and a binary label (``"benign"``/``"malignant"``)."""

    name: str
    features: list[str]
    values: list[list[float]]
    labels: list[str]
    citation: str

    def bounds(self) -> dict[str, tuple[float, float]]:
        """Each feature's range in the file, widened to whole numbers of its magnitude.

        A simulation's stand-in for the public bounds an analyst would take from the
        measuring instrument's documentation: taken from the data, so not a private
        choice; the simulation says so.
        """
        out = {}
        for j, name in enumerate(self.features):
            column = [row[j] for row in self.values]
            out[name] = (_round_out(min(column), down=True), _round_out(max(column), down=False))
        return out


def _round_out(value: float, down: bool) -> float:
    """``value`` rounded away from the data to two significant digits."""
    if value == 0.0:
        return 0.0
    scale = 10.0 ** (math.floor(math.log10(abs(value))) - 1)
    steps = math.floor(value / scale) if down else math.ceil(value / scale)
    return float(f"{steps * scale:.12g}")


def load_breast_cancer() -> NumericDataset:
    """The 569 records of UCI Breast Cancer Wisconsin (Diagnostic): 30 numeric features
    and the diagnosis (see LICENSE.md)."""
    packed = resources.files(__package__).joinpath("breast_cancer.csv.gz").read_bytes()
    rows = list(csv.reader(io.StringIO(gzip.decompress(packed).decode("ascii"))))[1:]
    values = [[float(v) for v in row[:30]] for row in rows]
    labels = ["benign" if row[30] == "1" else "malignant" for row in rows]
    return NumericDataset("breast_cancer", CANCER_FEATURES, values, labels, CANCER_CITATION)
