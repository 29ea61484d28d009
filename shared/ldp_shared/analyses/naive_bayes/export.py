"""A released model as a fitted scikit-learn ``CategoricalNB``.

The model of Yilmaz, Al-Rubaie and Chang (arXiv:1905.01039, 2019) as :mod:`.training`
releases it: the smoothed counts and the model's own logarithms are set on the estimator,
so it predicts exactly as :func:`~.prediction.predict`. scikit-learn is imported only
inside :func:`to_categorical_nb`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_shared.analyses.naive_bayes.repair import FLOOR
from ldp_shared.wire.naive_bayes import CategoricalNBExport, NaiveBayesModel


def export_categorical_nb(model: NaiveBayesModel) -> CategoricalNBExport:
    """The model in the form of a fitted scikit-learn ``CategoricalNB``.

    ``class_count_`` and ``category_count_`` are the smoothed counts (``Ñ``); the
    logarithms are the model's own, so the two predict identically.
    """
    return CategoricalNBExport(
        feature_names=[f.name for f in model.features],
        categories=[f.values for f in model.features],
        classes_=model.classes,
        class_count_=model.class_smoothed_counts,
        class_log_prior_=model.class_log_prior,
        category_count_=[f.smoothed_counts for f in model.features],
        feature_log_prob_=[f.log_prob for f in model.features],
        n_categories_=[len(f.values) for f in model.features],
        n_features_in_=len(model.features),
        alpha=model.smoothing.alpha,
    )


def to_categorical_nb(export: CategoricalNBExport) -> Any:
    """A scikit-learn ``CategoricalNB`` with the exported attributes set (needs scikit-learn).

    Encode records with :func:`encode_queries` (or each value's index in
    ``export.categories[j]``) before calling its ``predict``.
    """
    try:
        from sklearn.naive_bayes import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            CategoricalNB,
        )
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "to_categorical_nb needs scikit-learn (pip install scikit-learn)"
        ) from error
    nb = CategoricalNB(alpha=max(export.alpha, FLOOR), min_categories=export.n_categories_)
    nb.classes_ = np.asarray(export.classes_, dtype=object)
    nb.class_count_ = np.asarray(export.class_count_, dtype=np.float64)
    nb.class_log_prior_ = np.asarray(export.class_log_prior_, dtype=np.float64)
    nb.category_count_ = [np.asarray(c, dtype=np.float64) for c in export.category_count_]
    nb.feature_log_prob_ = [np.asarray(t, dtype=np.float64) for t in export.feature_log_prob_]
    nb.n_categories_ = np.asarray(export.n_categories_, dtype=np.int64)
    nb.n_features_in_ = export.n_features_in_
    return nb
