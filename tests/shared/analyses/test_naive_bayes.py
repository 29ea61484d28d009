"""Label collections and naive Bayes (Yilmaz et al. 2019): exact tests, no randomness at stake.

* Non-label collections are untouched: their config hashes are the ones published
  before labels existed, and their config JSON has no new key.
* Spec validation, layout and record ε of label collections (``split`` and ``sample``).
* The SDK refuses a record without a label or with a label outside its classes.
* Decoding: selector and padding checks of ``sample`` reports.
* With an infinite ε (``p = 1``, ``q = 0``) the trained model equals scikit-learn's
  ``CategoricalNB`` fit on the same records with the same smoothing.
* The exported ``CategoricalNB`` predicts exactly as the model.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from sklearn.naive_bayes import CategoricalNB

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.analyses.joint import label_estimate, label_weights
from ldp_shared.codec import Privatizer, decode_reports, encode_columns, records_to_columns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import unary_epsilon
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire import FrequencyResult, NaiveBayesTrainRequest
from ldp_simulation.datasets import load_car

CAR = load_car()
FEATURES = [name for name in CAR.domains if name != "class"]
CLASSES = CAR.domains["class"]


def _domain(d: int) -> list[str]:
    return [f"v{i}" for i in range(d)]


def car_spec(budget: str = "split", mechanism: str = "oue", **changes: Any) -> CollectionSpec:
    payload: dict[str, Any] = {
        "name": "car-nb",
        "epsilon": 2.0,
        "budget": budget,
        "label": "class",
        "attributes": [
            {"name": name, "domain": domain, "mechanism": mechanism}
            for name, domain in CAR.domains.items()
        ],
        "release": {"min_reports": 100},
    }
    payload.update(changes)
    return CollectionSpec.model_validate(payload)


# --------------------------------------------------------- non-label collections unchanged

# Hashes computed with the code before labels and the sample budget existed.
UNCHANGED_HASHES = {
    "mixed": "bb107b32e9de5535dd13b6e2b94d116cf7f83292c3de851d70fc7ac59cb382a5",
    "car": "3d4ef95f5c653fc92cb0d749a4aff93ca88b0bdee30b5278b37bf26d4444d36e",
    "basket": "1e4592be6940dd39d5862f25acdd95b89cb1d47f431ec263b9e088e92325fa05",
}
UNCHANGED_SPECS: dict[str, dict[str, Any]] = {
    "mixed": {
        "name": "mixed",
        "epsilon": 3.0,
        "attributes": [
            {"name": "a", "domain": _domain(10), "mechanism": "oue", "weight": 1.0},
            {"name": "b", "domain": _domain(300), "mechanism": "grr", "weight": 2.0},
            {"name": "c", "domain": _domain(5), "mechanism": "mask", "keep_probability": 0.8},
            {"name": "e", "domain": _domain(3), "mechanism": "sue", "weight": 1.0},
        ],
        "release": {"min_reports": 50},
        "description": "snapshot",
    },
    "car": {
        "name": "car-demo",
        "epsilon": 4.0,
        "attributes": [
            {"name": n, "domain": d, "mechanism": "oue"} for n, d in CAR.domains.items()
        ],
        "release": {"min_reports": 1000},
    },
    "basket": {
        "name": "basket",
        "attributes": [
            {
                "name": "items",
                "domain": ["milk", "bread", "eggs"],
                "mechanism": "mask",
                "keep_probability": 0.9,
            }
        ],
    },
}
NEW_CONFIG_KEYS = {"label", "selector_bytes"}
NEW_ATTRIBUTE_KEYS = {"classes", "sample_index", "count_offset"}


@pytest.mark.parametrize("name", sorted(UNCHANGED_SPECS))
def test_non_label_config_hashes_are_unchanged(name: str) -> None:
    config = build_config(CollectionSpec.model_validate(UNCHANGED_SPECS[name]))
    assert config.config_hash == UNCHANGED_HASHES[name]


@pytest.mark.parametrize("name", sorted(UNCHANGED_SPECS))
def test_non_label_config_json_has_no_new_key(name: str) -> None:
    document = json.loads(
        build_config(CollectionSpec.model_validate(UNCHANGED_SPECS[name])).model_dump_json()
    )
    assert not NEW_CONFIG_KEYS & set(document)
    assert "label" not in document["spec"]
    for attribute in document["attributes"]:
        assert not NEW_ATTRIBUTE_KEYS & set(attribute)
    assert "attribute_reports" not in json.loads(
        FrequencyResult(
            collection="c",
            attribute="a",
            mechanism="oue",
            n_reports=1,
            epsilon=1.0,
            record_epsilon=1.0,
            confidence=0.95,
            postprocess="none",
            values=["x"],
            estimate=[1.0],
            counts=[1.0],
            stderr=[0.0],
            ci_low=[1.0],
            ci_high=[1.0],
        ).model_dump_json()
    )


def test_label_changes_the_hash_and_round_trips() -> None:
    with_label = build_config(car_spec())
    without = build_config(car_spec(label=None))
    assert with_label.config_hash != without.config_hash
    again = CollectionConfig.model_validate_json(with_label.model_dump_json())
    assert again == with_label
    assert again.spec.label == "class"


# ------------------------------------------------------------------ spec validation


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"label": "colour"}, "not one of the attributes"),
        ({"label": "class", "mechanism": "grr"}, "use mechanism 'oue' or 'sue'"),
        ({"budget": "sample", "weights": True}, "weights do not apply"),
    ],
)
def test_label_spec_errors(changes: dict[str, Any], message: str) -> None:
    payload = json.loads(car_spec().model_dump_json())
    if changes.pop("weights", False):
        payload["attributes"][0]["weight"] = 2.0
    if changes.get("mechanism"):
        payload["attributes"][1]["mechanism"] = changes.pop("mechanism")
    payload.update(changes)
    with pytest.raises(ValueError, match=message):
        CollectionSpec.model_validate(payload)


def test_label_must_be_categorical() -> None:
    payload = json.loads(car_spec().model_dump_json())
    payload["attributes"].append(
        {"name": "extras", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.9}
    )
    payload["label"] = "extras"
    with pytest.raises(ValueError, match="must be a categorical attribute"):
        CollectionSpec.model_validate(payload)


def test_label_takes_no_weight_and_needs_a_feature() -> None:
    payload = json.loads(car_spec().model_dump_json())
    payload["attributes"][-1]["weight"] = 3.0
    with pytest.raises(ValueError, match="takes no share of ε"):
        CollectionSpec.model_validate(payload)
    lonely = {
        "name": "x",
        "epsilon": 1.0,
        "label": "c",
        "attributes": [
            {"name": "c", "domain": ["a", "b"]},
            {"name": "m", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.9},
        ],
    }
    with pytest.raises(ValueError, match="at least one other non-MASK attribute"):
        CollectionSpec.model_validate(lonely)


def test_joint_domain_size_is_bounded() -> None:
    big = {
        "name": "x",
        "epsilon": 1.0,
        "label": "c",
        "attributes": [
            {"name": "c", "domain": _domain(300)},
            {"name": "f", "domain": _domain(300)},
        ],
    }
    with pytest.raises(ValueError, match="joint cells"):
        CollectionSpec.model_validate(big)


def test_sample_budget_needs_a_non_mask_attribute() -> None:
    only_mask = UNCHANGED_SPECS["basket"] | {"budget": "sample"}
    with pytest.raises(ValueError):
        CollectionSpec.model_validate(only_mask)


# ------------------------------------------------------------------ layout and ε


def test_split_layout_and_epsilon() -> None:
    config = build_config(car_spec("split"))
    assert config.label is not None and config.label.k == 4
    assert [a.name for a in config.attributes] == FEATURES
    assert [a.cells for a in config.attributes] == [16, 16, 16, 12, 12, 12]
    assert [a.byte_offset for a in config.attributes] == [0, 2, 4, 6, 8, 10]
    assert [a.stats_offset for a in config.attributes] == [0, 16, 32, 48, 60, 72]
    assert config.report_bytes == 12 and config.stats_length == 84
    assert config.selector_bytes == 0
    for a in config.attributes:
        assert a.epsilon == pytest.approx(2.0 / 6, rel=1e-12)
        assert a.epsilon == unary_epsilon(a.p, a.q)
    assert config.epsilon == pytest.approx(2.0, rel=1e-12)


def test_sample_layout_and_epsilon() -> None:
    config = build_config(car_spec("sample"))
    assert config.selector_bytes == 1
    assert [a.sample_index for a in config.attributes] == list(range(6))
    assert {a.byte_offset for a in config.attributes} == {1}
    assert config.report_bytes == 1 + 2
    assert [a.count_offset for a in config.attributes] == [0, 17, 34, 51, 64, 77]
    assert [a.stats_offset for a in config.attributes] == [1, 18, 35, 52, 65, 78]
    assert config.stats_length == 90
    for a in config.attributes:
        assert a.epsilon == pytest.approx(2.0, rel=1e-12)
    assert config.epsilon == pytest.approx(2.0, rel=1e-12)  # one report of ε, not six


def test_sample_with_mask_and_plain_attributes() -> None:
    spec = CollectionSpec.model_validate(
        {
            "name": "s",
            "epsilon": 1.0,
            "budget": "sample",
            "attributes": [
                {"name": "a", "domain": _domain(10), "mechanism": "oue"},
                {"name": "m", "domain": _domain(5), "mechanism": "mask", "keep_probability": 0.8},
                {"name": "g", "domain": _domain(300), "mechanism": "grr"},
            ],
        }
    )
    config = build_config(spec)
    a, m, g = config.attributes
    assert (a.byte_offset, a.byte_length, g.byte_offset, g.byte_length) == (1, 2, 1, 2)
    assert (m.byte_offset, m.byte_length, m.sample_index) == (3, 1, None)
    assert config.report_bytes == 4
    assert config.epsilon == pytest.approx(1.0 + 5 * math.log(4.0), rel=1e-12)


# ------------------------------------------------------------------ client-side records


def test_records_without_a_label_are_refused() -> None:
    config = build_config(car_spec())
    record = {k: v for k, v in CAR.records[0].items() if k != "class"}
    with pytest.raises(InvalidRecordError, match="has no label 'class'"):
        Privatizer(config).privatize_many([CAR.records[1], record])


def test_labels_outside_the_classes_are_refused() -> None:
    config = build_config(car_spec())
    record = dict(CAR.records[0], **{"class": "excellent"})
    with pytest.raises(InvalidRecordError, match="'excellent' is not one of its classes"):
        Privatizer(config).privatize_many([CAR.records[1], record])


def test_features_are_encoded_jointly_with_the_class() -> None:
    config = build_config(car_spec())
    records = CAR.records[:50]
    encoded = encode_columns(config, records_to_columns(config, records))
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        domain = CAR.domains[attribute.name]
        expected = [
            domain.index(r[attribute.name]) * 4 + CLASSES.index(r["class"]) for r in records
        ]
        assert cells.tolist() == expected


# ------------------------------------------------------------------ decoding


def test_sample_reports_decode_and_count_per_attribute() -> None:
    config = build_config(car_spec("sample"))
    reports = Privatizer(config).privatize_many(CAR.records, seeded_rng(5))
    decoded = decode_reports(config, reports)
    assert decoded.valid.all()
    counts = [int(decoded.sums[a.count_offset]) for a in config.attributes]  # type: ignore[index]
    assert counts == np.bincount(reports[:, 0], minlength=6).tolist()
    assert sum(counts) == len(CAR.records)


def test_bad_sample_reports_are_rejected() -> None:
    config = build_config(car_spec("sample"))
    good = Privatizer(config).privatize_many(CAR.records[:3], seeded_rng(1))
    bad_selector = good[0].copy()
    bad_selector[0] = 6
    persons = config.attribute("persons")  # 12 cells: 4 padding bits
    padded = np.zeros(config.report_bytes, dtype=np.uint8)
    padded[0] = persons.sample_index or 0
    padded[2] = 0x01
    decoded = decode_reports(config, np.stack([good[1], bad_selector, padded]))
    assert decoded.valid.tolist() == [True, False, False]
    assert "selector" in (decoded.reasons[1] or "")
    assert "padding" in (decoded.reasons[2] or "")
    # a 12-cell segment uses 2 bytes, like the longest: no tail. A 1-byte segment would
    # leave a tail that must be zero:
    spec = CollectionSpec.model_validate(
        {
            "name": "s",
            "epsilon": 1.0,
            "budget": "sample",
            "attributes": [
                {"name": "a", "domain": _domain(4)},
                {"name": "b", "domain": _domain(12)},
            ],
        }
    )
    small = build_config(spec)
    tail = np.array([[0, 0x80, 0x01]], dtype=np.uint8)  # selector 0 (a), a=bit 0, tail set
    result = decode_reports(small, tail)
    assert not result.valid[0]
    assert "after its segment" in (result.reasons[0] or "")
    assert decode_reports(small, np.array([[0, 0x80, 0x00]], dtype=np.uint8)).valid[0]


# ------------------------------------------------------------------ exact: ε = ∞


def _exact_config(spec: CollectionSpec) -> CollectionConfig:
    """The config with noiseless unary encoding (p = 1, q = 0): infinite ε."""
    config = build_config(spec)
    exact = [a.model_copy(update={"p": 1.0, "q": 0.0}) for a in config.attributes]
    return config.model_copy(update={"attributes": exact})


def _exact_stats(config: CollectionConfig, records: list[dict[str, str]]) -> np.ndarray[Any, Any]:
    """The sums noiseless reports would give (every joint cell counted exactly)."""
    sums = np.zeros(config.stats_length, dtype=np.int64)
    encoded = encode_columns(config, records_to_columns(config, records))
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.cells)
        sums[block] = np.bincount(cells, minlength=attribute.cells)
    return sums


def _matrix(records: list[dict[str, str]]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    x = np.array([[CAR.domains[f].index(r[f]) for f in FEATURES] for r in records])
    y = np.array([CLASSES.index(r["class"]) for r in records])
    return x, y


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("repair", ["posterior-mean", "clamp"])
def test_infinite_epsilon_equals_categorical_nb(alpha: float, repair: str) -> None:
    train, test = nb.holdout_split(CAR.records)
    config = _exact_config(car_spec())
    sums = _exact_stats(config, train)
    request = NaiveBayesTrainRequest(alpha=alpha, repair=repair)  # type: ignore[arg-type]
    model = nb.build_model(config, len(train), sums, request, model_id="exact-01", created_day="d")
    x, y = _matrix(train)
    reference = CategoricalNB(alpha=alpha, min_categories=[len(CAR.domains[f]) for f in FEATURES])
    reference.fit(x, y)
    np.testing.assert_allclose(model.class_log_prior, reference.class_log_prior_, rtol=1e-12)
    for feature, table in zip(model.features, reference.feature_log_prob_, strict=True):
        np.testing.assert_allclose(feature.log_prob, table, rtol=1e-12)
        assert feature.stderr == [[0.0] * len(feature.values)] * 4
    np.testing.assert_allclose(model.class_counts, reference.class_count_, rtol=1e-12)
    x_all, _ = _matrix(CAR.records)
    ours = [p.predicted for p in nb.predict(model, CAR.records).predictions]
    assert ours == [CLASSES[c] for c in reference.predict(x_all)]
    np.testing.assert_allclose(
        nb.predict_proba(model, x_all), reference.predict_proba(x_all), rtol=1e-9, atol=1e-15
    )
    assert nb.accuracy(model, test) == pytest.approx(
        float(np.mean(reference.predict(_matrix(test)[0]) == _matrix(test)[1]))
    )


def test_infinite_epsilon_sample_budget_equals_categorical_nb_of_the_reporters() -> None:
    """Under ``sample`` feature j is learnt from its own reporters; with no noise each
    feature's table is CategoricalNB's on exactly those records."""
    config = _exact_config(car_spec("sample"))
    records = CAR.records
    chosen = seeded_rng(3).integers(0, 6, size=len(records))
    sums = np.zeros(config.stats_length, dtype=np.int64)
    encoded = encode_columns(config, records_to_columns(config, records))
    for attribute, cells in zip(config.attributes, encoded, strict=True):
        mine = chosen == attribute.sample_index
        assert attribute.count_offset is not None
        sums[attribute.count_offset] = int(mine.sum())
        block = slice(attribute.stats_offset, attribute.stats_offset + attribute.cells)
        sums[block] = np.bincount(cells[mine], minlength=attribute.cells)
    model = nb.build_model(
        config, len(records), sums, NaiveBayesTrainRequest(), model_id="exact-02", created_day="d"
    )
    x, y = _matrix(records)
    for j, feature in enumerate(model.features):
        mine = chosen == j
        reference = CategoricalNB(alpha=1.0, min_categories=[len(feature.values)])
        reference.fit(x[mine][:, [j]], y[mine])
        np.testing.assert_allclose(feature.log_prob, reference.feature_log_prob_[0], rtol=1e-12)
        assert feature.n_reports == int(mine.sum())


# ------------------------------------------------------------------ export and predict


@pytest.fixture(scope="module")
def noisy_model() -> nb.NaiveBayesModel:
    config = build_config(car_spec("sample", epsilon=1.0))
    reports = Privatizer(config).privatize_many(CAR.records * 20, seeded_rng(11))
    sums = decode_reports(config, reports).sums
    return nb.build_model(
        config,
        len(reports),
        sums,
        NaiveBayesTrainRequest(),
        model_id="noisy-0001",
        created_day="2025-01-01",
    )


def test_exported_categorical_nb_predicts_exactly_as_the_model(
    noisy_model: nb.NaiveBayesModel,
) -> None:
    exported = nb.export_categorical_nb(noisy_model)
    assert exported.classes_ == CLASSES
    assert exported.n_categories_ == [len(CAR.domains[f]) for f in FEATURES]
    assert [np.asarray(t).shape for t in exported.feature_log_prob_] == [
        (4, len(CAR.domains[f])) for f in FEATURES
    ]
    estimator = nb.to_categorical_nb(exported)
    rng = np.random.default_rng(0)
    queries = [{f: str(rng.choice(CAR.domains[f])) for f in FEATURES} for _ in range(2000)]
    queries += CAR.records
    x = nb.encode_queries(noisy_model, queries)
    ours = nb.predict(noisy_model, queries)
    assert [p.predicted for p in ours.predictions] == list(estimator.predict(x))
    np.testing.assert_allclose(
        [p.probabilities for p in ours.predictions], estimator.predict_proba(x), rtol=1e-12
    )


def test_model_states_its_inputs(noisy_model: nb.NaiveBayesModel) -> None:
    m = noisy_model
    assert m.label == "class" and m.classes == CLASSES and m.budget == "sample"
    assert m.n_reports == len(CAR.records) * 20
    assert sum(f.n_reports for f in m.features) == m.n_reports
    assert m.epsilon == pytest.approx(1.0, rel=1e-12)
    assert m.smoothing.alpha == 1.0 and m.smoothing.repair == "posterior-mean"
    for f in m.features:
        counts = np.asarray(f.counts)
        assert f.negative_counts == int((counts < 0).sum())
        np.testing.assert_allclose(np.asarray(f.probabilities).sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(np.asarray(f.smoothed_counts) >= 1.0)  # repaired ≥ 0, plus α = 1
        np.testing.assert_allclose(
            np.asarray(f.ci_high) - np.asarray(f.ci_low),
            2 * 1.959963984540054 * np.asarray(f.stderr),
            rtol=1e-9,
        )
    assert sum(m.class_prior) == pytest.approx(1.0, rel=1e-12)


def test_class_counts_agree_with_the_label_frequencies() -> None:
    config = build_config(car_spec("split", epsilon=3.0))
    reports = Privatizer(config).privatize_many(CAR.records * 5, seeded_rng(2))
    n, sums = len(reports), decode_reports(config, reports).sums
    fitted = nb.fit_collection(config, n, sums)
    label = label_estimate(config, n, sums)
    np.testing.assert_allclose(fitted.classes_counts.counts, n * label.estimate, rtol=1e-12)
    np.testing.assert_allclose(fitted.classes_counts.stderr, n * label.stderr, rtol=1e-12)
    assert label_weights(config, n, sums).sum() == pytest.approx(1.0)


def test_predict_refuses_bad_queries(noisy_model: nb.NaiveBayesModel) -> None:
    record = {f: CAR.records[0][f] for f in FEATURES}
    with pytest.raises(InvalidQueryError, match="'huge' is not a value of feature 'lug_boot'"):
        nb.predict(noisy_model, [record, dict(record, lug_boot="huge")])
    with pytest.raises(InvalidQueryError, match=r"missing features \['safety'\]"):
        nb.predict(noisy_model, [{k: v for k, v in record.items() if k != "safety"}])
    with pytest.raises(InvalidQueryError, match=r"unknown attributes \['colour'\]"):
        nb.predict(noisy_model, [dict(record, colour="red")])
    # the label may come along (test records usually carry it): it is ignored
    with_label = nb.predict(noisy_model, [dict(record, **{"class": "vgood"})])
    assert with_label == nb.predict(noisy_model, [record])


def test_training_needs_a_label_and_enough_reports() -> None:
    config = build_config(car_spec(release={"min_reports": 5000}))
    reports = Privatizer(config).privatize_many(CAR.records, seeded_rng(4))
    sums = decode_reports(config, reports).sums
    with pytest.raises(InsufficientReportsError, match="at least 5000"):
        nb.fit_collection(config, len(reports), sums)
    plain = build_config(car_spec(label=None))
    with pytest.raises(InvalidQueryError, match="has no label"):
        nb.fit_collection(plain, 10, np.zeros(plain.stats_length, dtype=np.int64))
    sampled = build_config(car_spec("sample"))
    with pytest.raises(InsufficientReportsError, match="no report has carried"):
        nb.fit_collection(sampled, 500, np.zeros(sampled.stats_length, dtype=np.int64))


# ------------------------------------------------------------------ repair


def test_posterior_mean_repair() -> None:
    sigma = 10.0
    counts = np.array([1000.0, 30.0, 0.0, -10.0, -100.0, -299.0, -301.0, -5000.0])
    repaired = nb.repair_counts(counts, np.full(counts.size, sigma), "posterior-mean")
    assert repaired[0] == pytest.approx(1000.0)  # a clear count stays
    assert repaired[2] == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=1e-12)
    assert np.all(repaired > 0) and np.all(np.diff(repaired) < 0)  # positive, monotone
    # continuous across the asymptotic branch at N̂/σ = -30
    assert repaired[5] == pytest.approx(repaired[6], rel=0.02)
    assert repaired[7] == pytest.approx(sigma**2 / 5000, rel=1e-3)  # ≈ σ²/|N̂|
    # no noise: the count itself; clamp: max(N̂, 0)
    exact = nb.repair_counts(np.array([3.0, 0.0]), np.zeros(2), "posterior-mean")
    assert exact.tolist() == [3.0, 0.0]
    assert nb.repair_counts(counts, np.full(counts.size, sigma), "clamp").tolist() == [
        1000.0,
        30.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ]


def test_holdout_split_is_fixed_and_disjoint() -> None:
    train, test = nb.holdout_split(CAR.records)
    again, _ = nb.holdout_split(CAR.records)
    assert train == again
    assert len(test) == round(0.2 * len(CAR.records)) and len(train) + len(test) == 1728
    key = [tuple(r.values()) for r in train]
    assert not set(key) & {tuple(r.values()) for r in test}  # car rows are all distinct
    with pytest.raises(InvalidQueryError):
        nb.holdout_split(CAR.records, test_fraction=1.0)


@pytest.mark.parametrize("budget", ["split", "sample"])
def test_non_private_model_is_categorical_nb(budget: str) -> None:
    train, test = nb.holdout_split(CAR.records)
    model = nb.non_private_model(build_config(car_spec(budget)), train, alpha=1.0)
    x, y = _matrix(train)
    reference = CategoricalNB(alpha=1.0, min_categories=[len(CAR.domains[f]) for f in FEATURES])
    reference.fit(x, y)
    np.testing.assert_allclose(model.class_log_prior, reference.class_log_prior_, rtol=1e-12)
    for feature, table in zip(model.features, reference.feature_log_prob_, strict=True):
        np.testing.assert_allclose(feature.log_prob, table, rtol=1e-12)
    x_test, _ = _matrix(test)
    ours = [p.predicted for p in nb.predict(model, test).predictions]
    assert ours == [CLASSES[c] for c in reference.predict(x_test)]
    assert model.epsilon == math.inf


def test_sample_budget_keeps_counting_mask_attributes_in_every_report() -> None:
    spec = CollectionSpec.model_validate(
        {
            "name": "s",
            "epsilon": 1.0,
            "budget": "sample",
            "attributes": [
                {"name": "a", "domain": _domain(4)},
                {"name": "m", "domain": _domain(5), "mechanism": "mask", "keep_probability": 0.8},
                {"name": "g", "domain": _domain(3), "mechanism": "grr"},
            ],
        }
    )
    config = build_config(spec)
    records = [{"a": "v1", "m": ["v0", "v3"], "g": "v2"}] * 500
    reports = Privatizer(config).privatize_many(records, seeded_rng(8))
    decoded = decode_reports(config, reports)
    assert decoded.valid.all()
    m = config.attribute("m")
    bits = np.unpackbits(reports[:, m.byte_offset : m.byte_offset + 1], axis=1)[:, :5]
    block = decoded.sums[m.stats_offset : m.stats_offset + 5]
    assert block.tolist() == bits.sum(axis=0).tolist()
    a, g = config.attribute("a"), config.attribute("g")
    assert decoded.sums[a.count_offset] + decoded.sums[g.count_offset] == 500  # type: ignore[index]
    g_rows = reports[:, 0] == g.sample_index
    assert (
        decoded.sums[g.stats_offset : g.stats_offset + 3].tolist()
        == np.bincount(reports[g_rows, g.byte_offset], minlength=3).tolist()
    )


def test_naive_bayes_modules_are_pure() -> None:
    """ldp_shared.analyses.joint and .naive_bayes import no web, database or SDK code
    (and scikit-learn only inside ``to_categorical_nb``)."""
    import subprocess
    import sys

    code = (
        "import json, sys, ldp_shared.analyses.joint, ldp_shared.analyses.naive_bayes\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    forbidden = {"fastapi", "starlette", "sqlalchemy", "httpx", "ldp_client", "ldp_aggregator"}
    assert not loaded & (forbidden | {"sklearn"}), sorted(loaded & (forbidden | {"sklearn"}))
