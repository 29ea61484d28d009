"""The data sets of ``bench/logistic.py``: UCI Adult and Wisconsin breast cancer, encoded
by a :class:`~ldp_shared.learning.layout.FeatureLayout`.

* **Adult** (``adult.data`` for training, ``adult.test`` held out): numeric age,
  education-num, capital-gain, capital-loss, hours-per-week; categorical workclass,
  marital-status, occupation, relationship, race, sex, native-country (domains from
  ``adult.names``, plus ``?`` for the three with missing values). Left out: fnlwgt (the
  census sampling weight, not a trait of the person) and education (education-num
  encodes it). Bounds: the census codes for
  age (17–90), education-num (1–16) and hours (1–99); the money amounts are clipped at
  the 99th percentile of ``adult.data`` rounded up (gain 0–15,000, loss 0–2,000), since
  their raw maxima (99,999 and 4,356) would squash 99% of the values against the lower
  bound. Label: income ``>50K``. d = 92.
* **Breast cancer** (``breast_cancer.csv``, 569 rows): the 30 numeric features, bounds
  the minimum and maximum of the training part (the analyst's public bounds stand-in);
  label 1 (benign). A fixed seeded split: 30% held out as test.

The training part of each is split again (a fixed seed, 20%) into a validation part,
on which the defaults were checked; the test parts were used for the final numbers only.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import naive_bayes
from ldp_shared.learning.layout import (
    CategoricalFeature,
    FeatureLayout,
    NumericFeature,
)
from ldp_shared.rand import seeded_rng

ADULT_NUMERIC = {
    "age": (0, 17.0, 90.0),
    "education_num": (4, 1.0, 16.0),
    "capital_gain": (10, 0.0, 15_000.0),
    "capital_loss": (11, 0.0, 2_000.0),
    "hours_per_week": (12, 1.0, 99.0),
}
ADULT_CATEGORICAL = {  # naive_bayes.py's columns, less education (education-num is numeric)
    name: column for name, column in naive_bayes.ADULT_CATEGORICAL.items() if name != "education"
}
SPLIT_SEED = 20_190_503
VALIDATION_FRACTION = 0.2
CANCER_TEST_FRACTION = 0.3


@dataclass(frozen=True)
class Split:
    """Encoded records: x (n × d) and y (0/1)."""

    x: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class Dataset:
    name: str
    layout: FeatureLayout
    train: Split
    validation: Split
    test: Split


def _holdout(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = seeded_rng(seed).permutation(n)
    cut = round(n * fraction)
    return np.sort(order[cut:]), np.sort(order[:cut])


def _split(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[Split, Split]:
    keep, held = _holdout(len(x), VALIDATION_FRACTION, seed)
    return Split(x[keep], y[keep]), Split(x[held], y[held])


WITH_MISSING = {"workclass", "occupation", "native-country"}
"""The attributes whose values are missing (``?``) in the data; the others get no ``?``
coordinate, which would always be 0 and only add noise."""


def adult_domains(names_file: Path) -> dict[str, list[str]]:
    domains = {}
    for line in names_file.read_text(encoding="ascii", errors="replace").splitlines():
        name, _, rest = line.partition(":")
        if name in ADULT_CATEGORICAL:
            values = [v.strip() for v in rest.strip().rstrip(".").split(",")]
            domains[name] = values + (["?"] if name in WITH_MISSING else [])
    return domains


def adult_columns(path: Path) -> dict[str, list[str]]:
    rows = []
    for line in path.read_text(encoding="ascii").splitlines():
        if line.strip() and not line.startswith("|"):
            rows.append([f.strip() for f in line.split(",")])
    columns = {name: [r[i] for r in rows] for name, (i, _, _) in ADULT_NUMERIC.items()}
    for name, i in ADULT_CATEGORICAL.items():
        columns[name.replace("-", "_")] = [r[i] for r in rows]
    columns["income"] = [r[14].rstrip(".") for r in rows]
    return columns


def load_adult(data_dir: Path) -> Dataset | None:
    files = [data_dir / f"adult.{ext}" for ext in ("data", "test", "names")]
    if not all(f.exists() for f in files):
        return None
    domains = adult_domains(files[2])
    layout = FeatureLayout(
        numeric=[NumericFeature(name=n, lo=lo, hi=hi) for n, (_, lo, hi) in ADULT_NUMERIC.items()],
        categorical=[
            CategoricalFeature(name=n.replace("-", "_"), domain=domains[n])
            for n in ADULT_CATEGORICAL
        ],
        label="income",
        positive=">50K",
    )
    encoded = []
    for f in files[:2]:
        columns = adult_columns(f)
        encoded.append((layout.encode(columns), layout.labels(columns["income"])))
    train, validation = _split(*encoded[0], SPLIT_SEED)
    return Dataset("adult", layout, train, validation, Split(*encoded[1]))


def load_breast_cancer(data_dir: Path) -> Dataset | None:
    path = data_dir / "breast_cancer.csv"
    if not path.exists():
        return None
    with path.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    values = np.array([[float(v) for v in r[:30]] for r in rows])
    target = np.array([r[30] for r in rows])
    keep, test = _holdout(len(rows), CANCER_TEST_FRACTION, SPLIT_SEED)
    lo, hi = values[keep].min(axis=0), values[keep].max(axis=0)
    layout = FeatureLayout(
        numeric=[
            NumericFeature(name=f"f{j:02d}", lo=float(lo[j]), hi=float(hi[j])) for j in range(30)
        ],
        label="target",
        positive="1",
    )

    def encode(rows_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        columns = {f"f{j:02d}": values[rows_, j] for j in range(30)}
        return layout.encode(columns), layout.labels(target[rows_])

    train, validation = _split(*encode(keep), SPLIT_SEED)
    return Dataset("breast_cancer", layout, train, validation, Split(*encode(test)))
