"""Training (ldp_shared.analyses.naive_bayes.counts and .training).

* With an infinite ε (``p = 1``, ``q = 0``) the trained model equals scikit-learn's
  ``CategoricalNB`` fit on the same records with the same smoothing.
* A model states its inputs; class counts agree with the label frequencies; training
  needs a label and enough reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.naive_bayes import CategoricalNB

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.analyses.joint import label_estimate, label_weights
from ldp_shared.codec import Privatizer, decode_reports, encode_columns, records_to_columns
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.naive_bayes import NaiveBayesTrainRequest

from ._car import CAR, CLASSES, car_spec, categorical_nb, matrix


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


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("repair", ["posterior-mean", "clamp", "norm-sub"])
def test_infinite_epsilon_equals_categorical_nb(alpha: float, repair: str) -> None:
    train, test = nb.holdout_split(CAR.records)
    config = _exact_config(car_spec())
    sums = _exact_stats(config, train)
    request = NaiveBayesTrainRequest(alpha=alpha, repair=repair)  # type: ignore[arg-type]
    model = nb.build_model(config, len(train), sums, request, model_id="exact-01", created_day="d")
    reference = categorical_nb(train, alpha)
    np.testing.assert_allclose(model.class_log_prior, reference.class_log_prior_, rtol=1e-12)
    for feature, table in zip(model.features, reference.feature_log_prob_, strict=True):
        np.testing.assert_allclose(feature.log_prob, table, rtol=1e-12)
        assert feature.stderr == [[0.0] * len(feature.values)] * 4
    np.testing.assert_allclose(model.class_counts, reference.class_count_, rtol=1e-12)
    x_all, _ = matrix(CAR.records)
    ours = [p.predicted for p in nb.predict(model, CAR.records).predictions]
    assert ours == [CLASSES[c] for c in reference.predict(x_all)]
    np.testing.assert_allclose(
        nb.predict_proba(model, x_all), reference.predict_proba(x_all), rtol=1e-9, atol=1e-15
    )
    assert nb.accuracy(model, test) == pytest.approx(
        float(np.mean(reference.predict(matrix(test)[0]) == matrix(test)[1]))
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
    x, y = matrix(records)
    for j, feature in enumerate(model.features):
        mine = chosen == j
        reference = CategoricalNB(alpha=1.0, min_categories=[len(feature.values)])
        reference.fit(x[mine][:, [j]], y[mine])
        np.testing.assert_allclose(feature.log_prob, reference.feature_log_prob_[0], rtol=1e-12)
        assert feature.n_reports == int(mine.sum())


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
        low, high = np.asarray(f.ci_low), np.asarray(f.ci_high)
        # within [0, n_j], or wholly outside where the test rejects every count there
        within = (low >= 0.0) & (high <= f.n_reports)
        assert np.all((low <= high) & (within | (high < 0.0) | (low > f.n_reports)))
        inside = (counts >= 0.0) & (counts <= f.n_reports)
        assert np.all((low <= counts) & (counts <= high) | ~inside)
    assert m.interval == "score"
    assert sum(m.class_prior) == pytest.approx(1.0, rel=1e-12)


def test_class_counts_agree_with_the_label_frequencies() -> None:
    config = build_config(car_spec("split", epsilon=3.0))
    reports = Privatizer(config).privatize_many(CAR.records * 5, seeded_rng(2))
    n, sums = len(reports), decode_reports(config, reports).sums
    fitted = nb.fit_collection(config, n, sums)
    label = label_estimate(config, n, sums)
    np.testing.assert_allclose(fitted.classes_counts.counts, n * label.estimate, rtol=1e-12)
    np.testing.assert_allclose(fitted.classes_counts.stderr, n * label.stderr, rtol=1e-12)
    low, high = fitted.classes_counts.score_interval(1.959963984540054)
    np.testing.assert_allclose(low, n * label.ci_low, rtol=1e-12)
    np.testing.assert_allclose(high, n * label.ci_high, rtol=1e-12)
    assert label_weights(config, n, sums).sum() == pytest.approx(1.0)


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


def test_models_stored_before_score_intervals_read_as_normal(
    noisy_model: nb.NaiveBayesModel,
) -> None:
    stored = noisy_model.model_dump(mode="json")
    del stored["interval"]
    assert nb.NaiveBayesModel.model_validate(stored).interval == "normal"


def test_a_model_with_a_number_that_is_not_finite_is_refused(
    noisy_model: nb.NaiveBayesModel,
) -> None:
    nb.require_finite(noisy_model)
    for bad in (float("inf"), float("-inf"), float("nan")):
        broken = noisy_model.model_copy(deep=True)
        broken.features[3].log_prob[0][1] = bad
        with pytest.raises(InvalidQueryError, match=r"features\[3\]\.log_prob\[0\]\[1\]"):
            nb.require_finite(broken)
    prior = noisy_model.model_copy(deep=True)
    prior.class_prior[2] = float("nan")
    with pytest.raises(InvalidQueryError, match=r"model\.class_prior\[2\]"):
        nb.require_finite(prior)


def test_fit_refuses_an_alpha_beyond_the_wire_bound() -> None:
    """The sums of a table overflowed at α = 1.7e308 (log_prob -inf, probabilities 0)."""
    config = build_config(car_spec("split", epsilon=3.0))
    reports = Privatizer(config).privatize_many(CAR.records, seeded_rng(5))
    n, sums = len(reports), decode_reports(config, reports).sums
    largest = nb.fit_collection(config, n, sums, alpha=2.0**53)
    assert all(np.all(np.isfinite(table)) for table in largest.log_prob)
    for alpha in (2.0**53 + 2, 1.7e308):
        with pytest.raises(InvalidQueryError, match="alpha must be a number from 0 to 2"):
            nb.fit_collection(config, n, sums, alpha=alpha)
