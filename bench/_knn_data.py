"""Data for ``bench/knn.py``: UCI Adult (the course report's set) and breast cancer.

Adult: all 14 attributes, the 8 categorical ones label-encoded over their domain in
``adult.names`` plus ``?`` (the report's encoding), the 6 numeric ones with public
bounds (age 17-90, fnlwgt 0-1,500,000, education-num 1-16, capital-gain 0-99,999,
capital-loss 0-4,356, hours-per-week 1-99: the ranges adult.names and the census coding
allow; values beyond are clipped on the device). Train on adult.data, test on adult.test.

Breast cancer (``breast_cancer.csv``, scikit-learn's copy of UCI WDBC): the 30 numeric
features, bounds the training split's range widened by 10% on each side (the analyst's
public bounds), a fixed seeded 70/30 split.

Both: the public centre and scale of each feature (the cell protocol's standardisation)
are the training split's mean and standard deviation, StandardScaler's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ldp_shared.analyses.knn import Feature, FeatureSpace, categorical, numeric
from ldp_shared.rand import seeded_rng

ADULT_NUMERIC = {
    0: ("age", 17.0, 90.0),
    2: ("fnlwgt", 0.0, 1_500_000.0),
    4: ("education-num", 1.0, 16.0),
    10: ("capital-gain", 0.0, 99_999.0),
    11: ("capital-loss", 0.0, 4_356.0),
    12: ("hours-per-week", 1.0, 99.0),
}
ADULT_CATEGORICAL = {
    1: "workclass",
    3: "education",
    5: "marital-status",
    6: "occupation",
    7: "relationship",
    8: "race",
    9: "sex",
    13: "native-country",
}
SPLIT_SEED = 20240601


@dataclass(frozen=True)
class Dataset:
    name: str
    space: FeatureSpace
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    classes: int


def _adult_domains(names_file: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    wanted = set(ADULT_CATEGORICAL.values())
    for line in names_file.read_text(encoding="ascii", errors="replace").splitlines():
        name, _, rest = line.partition(":")
        if name in wanted and rest.strip() != "continuous.":
            out[name] = [v.strip() for v in rest.strip().rstrip(".").split(",")] + ["?"]
    return out


def _adult_rows(path: Path, domains: dict[str, list[str]]) -> tuple[np.ndarray, np.ndarray]:
    rows, labels = [], []
    index = {name: {v: i for i, v in enumerate(vals)} for name, vals in domains.items()}
    for line in path.read_text(encoding="ascii").splitlines():
        if not line.strip() or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        row = []
        for col in range(14):
            if col in ADULT_NUMERIC:
                _, lo, hi = ADULT_NUMERIC[col]
                row.append(min(max(float(fields[col]), lo), hi))
            else:
                row.append(float(index[ADULT_CATEGORICAL[col]][fields[col]]))
        rows.append(row)
        labels.append(1 if fields[14].rstrip(".") == ">50K" else 0)
    return np.array(rows), np.array(labels, dtype=np.int64)


def load_adult(folder: Path) -> Dataset | None:
    files = [folder / f for f in ("adult.data", "adult.test", "adult.names")]
    if not all(f.exists() for f in files):
        return None
    domains = _adult_domains(files[2])
    features = []
    for col in range(14):
        if col in ADULT_NUMERIC:
            features.append(numeric(*ADULT_NUMERIC[col]))
        else:
            name = ADULT_CATEGORICAL[col]
            features.append(categorical(name, len(domains[name])))
    train_x, train_y = _adult_rows(files[0], domains)
    test_x, test_y = _adult_rows(files[1], domains)
    return Dataset("adult", _standardised(features, train_x), train_x, train_y, test_x, test_y, 2)


def _standardised(features: list[Feature], train_x: np.ndarray) -> FeatureSpace:
    """The analyst's public centre and scale: here the training mean and standard
    deviation (what StandardScaler, the course report's preprocessing, uses)."""
    mean, std = train_x.mean(axis=0), train_x.std(axis=0)
    return FeatureSpace.of(
        [
            replace(f, centre=float(m), spread=float(s or 1.0))
            for f, m, s in zip(features, mean, std, strict=True)
        ]
    )


def load_breast_cancer(folder: Path) -> Dataset | None:
    path = folder / "breast_cancer.csv"
    if not path.exists():
        return None
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    x, y = data[:, :30], data[:, 30].astype(np.int64)
    order = seeded_rng(SPLIT_SEED).permutation(len(y))
    cut = int(0.7 * len(y))
    train, test = order[:cut], order[cut:]
    lo, hi = x[train].min(axis=0), x[train].max(axis=0)
    pad = 0.1 * (hi - lo)
    features = [numeric(f"f{j}", lo[j] - pad[j], hi[j] + pad[j]) for j in range(30)]
    space = _standardised(features, x[train])
    test_x = np.clip(x[test], space.lo, space.hi)
    return Dataset("breast_cancer", space, x[train], y[train], test_x, y[test], 2)
