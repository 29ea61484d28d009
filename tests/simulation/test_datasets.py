"""The bundled data: UCI Car Evaluation, and the extract of UCI Adult."""

from __future__ import annotations

import gzip
import hashlib
from importlib import resources

import numpy as np

from ldp_simulation.datasets import (
    ADULT_BOUNDS,
    ADULT_DOMAINS,
    CAR_DOMAINS,
    load_adult,
    load_breast_cancer,
    load_car,
)


def test_car_records_fit_their_domains() -> None:
    car = load_car()
    assert car.name == "car" and len(car.records) == 1728
    assert car.domains == CAR_DOMAINS and "CC BY 4.0" in car.citation
    for record in car.records:
        assert list(record) == list(CAR_DOMAINS)
        for name, value in record.items():
            assert value in CAR_DOMAINS[name]
    # the six features form a full factorial design: every combination exactly once
    features = {tuple(r[n] for n in list(CAR_DOMAINS)[:-1]) for r in car.records}
    assert len(features) == 1728


# SHA-256 of the uncompressed extract, as LICENSE.md beside the data states it
ADULT_CSV_SHA256 = "54efd8793571b7a766d21c63661500ee0917c02ef9b52d2c00da33104d19a6de"


def test_adult_extract_is_the_documented_one() -> None:
    packed = resources.files("ldp_simulation.datasets").joinpath("adult.csv.gz").read_bytes()
    assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == ADULT_CSV_SHA256
    adult = load_adult()
    assert adult.name == "adult" and len(adult.records) == 32_561
    assert "CC BY 4.0" in adult.citation and "Kohavi and Becker" in adult.citation
    assert adult.bounds == ADULT_BOUNDS and adult.domains == ADULT_DOMAINS
    assert list(adult.records[0]) == ["age", "hours_per_week", "sex"]
    # the documented ranges hold every value, so nothing of the demo's data is clipped
    for name, (lo, hi) in ADULT_BOUNDS.items():
        values = np.array([r[name] for r in adult.records])
        assert values.dtype.kind == "i" and lo <= values.min() and values.max() <= hi
    assert {r["sex"] for r in adult.records} == set(ADULT_DOMAINS["sex"])
    # the first record of adult.data: 39, State-gov, ..., Male, ..., 40 hours
    assert adult.records[0] == {"age": 39, "hours_per_week": 40, "sex": "Male"}


CANCER_CSV_SHA256 = "fed3eb72d0575ef6192293f5093c6e801b1476b577d0386bf4455504522172ed"


def test_breast_cancer_is_the_documented_file() -> None:
    packed = resources.files("ldp_simulation.datasets").joinpath("breast_cancer.csv.gz")
    assert hashlib.sha256(gzip.decompress(packed.read_bytes())).hexdigest() == CANCER_CSV_SHA256
    cancer = load_breast_cancer()
    assert len(cancer.values) == 569 and len(cancer.features) == 30
    assert cancer.labels.count("benign") == 357 and "CC BY 4.0" in cancer.citation
    assert cancer.features[0] == "mean_radius" and cancer.features[-1] == "worst_fractal_dimension"
    bounds = cancer.bounds()
    columns = np.array(cancer.values)
    for j, name in enumerate(cancer.features):
        lo, hi = bounds[name]
        assert lo <= columns[:, j].min() and columns[:, j].max() <= hi
        # two significant digits outward: never wider than 10% of the data's magnitude
        assert hi - columns[:, j].max() <= 0.1 * abs(hi) + 1e-12
    assert bounds["mean_radius"] == (6.9, 29.0)
