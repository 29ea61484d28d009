"""Prediction and export (ldp_shared.analyses.naive_bayes.prediction and .export).

The exported ``CategoricalNB`` predicts exactly as the model; bad queries are refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.errors import InvalidQueryError

from ._car import CAR, CLASSES, FEATURES


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
