"""Classifying the analyst's records with a released model (step 5).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019). The predicted class is
``argmax_c log P(c) + Σ_j log P(x_j | c)``; class probabilities are the normalised
exponentials. The sum is taken in the order scikit-learn takes it (features first, then
the prior), so the exported ``CategoricalNB`` predicts exactly the same classes.

Queries to :func:`predict` are the analyst's own records, in the clear; nothing here
stores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FloatArray
from ldp_shared.wire.naive_bayes import NaiveBayesModel, NaiveBayesPrediction, NaiveBayesPredictions


def encode_queries(
    model: NaiveBayesModel, records: Sequence[Mapping[str, Any]]
) -> NDArray[np.int64]:
    """Query records as an ``n × m`` matrix of value indices (features in model order).

    Each record names every feature once; it may also carry the label, which is ignored.
    :class:`InvalidQueryError` for a missing or unknown attribute, or a value outside a
    feature's domain.
    """
    names = [f.name for f in model.features]
    lookups = [{v: i for i, v in enumerate(f.values)} for f in model.features]
    allowed = {*names, model.label}
    out = np.empty((len(records), len(names)), dtype=np.int64)
    for row, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InvalidQueryError(f"record {row} is not a mapping of feature to value")
        missing = [name for name in names if name not in record]
        unknown = sorted(str(key) for key in record if key not in allowed)
        if missing or unknown:
            raise InvalidQueryError(
                f"record {row}: missing features {missing}, unknown attributes {unknown}"
                f" (the model's features are {', '.join(names)})"
            )
        for column, (name, lookup) in enumerate(zip(names, lookups, strict=True)):
            value = record[name]
            index = lookup.get(value) if isinstance(value, str) else None
            if index is None:
                raise InvalidQueryError(
                    f"record {row}: {value!r} is not a value of feature {name!r}"
                    f" (its values are {', '.join(model.features[column].values)})"
                )
            out[row, column] = index
    return out


def joint_log_likelihood(model: NaiveBayesModel, x: NDArray[np.int64]) -> FloatArray:
    """``log P(c) + Σ_j log P(x_j | c)`` per row and class, summed as scikit-learn does."""
    jll = np.zeros((x.shape[0], len(model.classes)))
    for column, feature in enumerate(model.features):
        jll += np.asarray(feature.log_prob, dtype=np.float64)[:, x[:, column]].T
    total: FloatArray = jll + np.asarray(model.class_log_prior, dtype=np.float64)
    return total


def predict_proba(model: NaiveBayesModel, x: NDArray[np.int64]) -> FloatArray:
    """``P(c | x)``: the joint log-likelihoods normalised (log-sum-exp)."""
    jll = joint_log_likelihood(model, x)
    top = jll.max(axis=1, keepdims=True)
    log_norm = top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True))
    out: FloatArray = np.exp(jll - log_norm)
    return out


def predict(model: NaiveBayesModel, records: Sequence[Mapping[str, Any]]) -> NaiveBayesPredictions:
    """Classify the analyst's records: the predicted class and the class probabilities."""
    x = encode_queries(model, records)
    jll = joint_log_likelihood(model, x)
    winners = jll.argmax(axis=1)
    probabilities = predict_proba(model, x)
    return NaiveBayesPredictions(
        model_id=model.id,
        label=model.label,
        classes=model.classes,
        predictions=[
            NaiveBayesPrediction(predicted=model.classes[int(c)], probabilities=row)
            for c, row in zip(winners.tolist(), probabilities.tolist(), strict=True)
        ],
    )
