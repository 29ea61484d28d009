"""The bundled UCI Car Evaluation data."""

from __future__ import annotations

from ldp_simulation.datasets import CAR_DOMAINS, load_car


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
