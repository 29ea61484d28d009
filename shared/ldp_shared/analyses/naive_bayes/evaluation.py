"""The non-private reference, the hold-out split and the accuracy of a model.

Naive Bayes on the true records (``ε = ∞``, exactly scikit-learn's ``CategoricalNB``) is
the baseline against which the demo and the benchmarks measure the LDP naive Bayes of
Yilmaz, Al-Rubaie and Chang (arXiv:1905.01039, 2019), on a fixed held-out part of the
records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ldp_shared.analyses.naive_bayes.counts import class_counts, counts_from_sums
from ldp_shared.analyses.naive_bayes.prediction import predict
from ldp_shared.analyses.naive_bayes.training import describe, fit
from ldp_shared.codec import encode_columns, records_to_columns
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.naive_bayes import NaiveBayesModel, NaiveBayesTrainRequest


def non_private_model(
    config: CollectionConfig, records: Sequence[Mapping[str, str]], *, alpha: float = 1.0
) -> NaiveBayesModel:
    """The reference without privacy: naive Bayes on the true ``records`` (all features of
    all of them, exact counts, ``ε = ∞``). Equal to scikit-learn's ``CategoricalNB(alpha)``
    fit on the same records (tested); used by the demo and the benchmarks as the
    non-private baseline, never on collected data.
    """
    if config.label is None:
        raise InvalidQueryError(f"collection {config.name!r} has no label")
    columns = records_to_columns(config, records)
    encoded = encode_columns(config, columns)
    n = len(records)
    features = [
        counts_from_sums(
            attribute.name,
            attribute.values,
            attribute.classes,
            np.bincount(cells, minlength=attribute.cells),
            n,
            1.0,
            0.0,
            mechanism="none",
            epsilon=math.inf,
        )
        for attribute, cells in zip(config.attributes, encoded, strict=True)
        if attribute.is_feature
    ]
    equal = np.full(len(features), 1.0 / len(features))
    trained = fit(config.label.domain, features, class_counts(features, n, equal), alpha=alpha)
    request = NaiveBayesTrainRequest(alpha=alpha)
    return describe(
        config, trained, n, request, model_id="non-private", created_day="", epsilon=math.inf
    )


def holdout_split(
    records: Sequence[Mapping[str, str]], test_fraction: float = 0.2, seed: int = 20190503
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A fixed seeded split into (training, held-out test) records, each record in one part.

    Replicate only the training part to simulate more clients; the test part must
    never reach the training data.
    """
    if not 0.0 < test_fraction < 1.0:
        raise InvalidQueryError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    order = seeded_rng(seed).permutation(len(records))
    n_test = round(len(records) * test_fraction)
    test = [dict(records[i]) for i in order[:n_test]]
    train = [dict(records[i]) for i in order[n_test:]]
    return train, test


def accuracy(model: NaiveBayesModel, records: Sequence[Mapping[str, str]]) -> float:
    """The fraction of ``records`` (with their labels) that the model classifies right."""
    predicted = predict(model, records).predictions
    hits = sum(p.predicted == r[model.label] for p, r in zip(predicted, records, strict=True))
    return hits / len(records)
