"""Naive Bayes trained from class-conditional LDP reports (sufficient statistics only).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019). A label collection reports each
feature ``j`` jointly with the class ``c`` (cell ``x_j·k + c``, unary encoding), so its
statistics hold, per feature, the counters of the ``d_j·k`` joint cells
(see :mod:`ldp_shared.analyses.joint`). Training never reads a report. The package, in
the order of the steps:

* Steps 1 and 2, :mod:`.counts`: unbiased joint counts ``N̂_j(v, c)`` of each feature
  with the class, the class counts ``N̂(c)``, and their standard errors.
* Step 3, :mod:`.repair`: negative and noisy counts repaired to their posterior mean
  (or clamped); the :data:`FLOOR` and the rule stated in every model.
* Steps 3 and 4, :mod:`.training`: additive smoothing, the probabilities, and the model
  as released (:func:`fit_collection`, :func:`describe`, :func:`build_model`), never
  with a number JSON cannot carry (:func:`require_finite`).
* Step 5, :mod:`.prediction`: classifying the analyst's records (:func:`predict`).

:mod:`.export` turns a model into a fitted scikit-learn ``CategoricalNB``;
:mod:`.evaluation` holds the non-private reference, the hold-out split and the accuracy.

Every public name is importable from here (``from ldp_shared.analyses.naive_bayes
import to_categorical_nb``).
"""

from ldp_shared.analyses.naive_bayes.counts import (
    ClassCounts,
    FeatureCounts,
    class_counts,
    counts_from_sums,
    feature_counts,
    require_label,
)
from ldp_shared.analyses.naive_bayes.evaluation import accuracy, holdout_split, non_private_model
from ldp_shared.analyses.naive_bayes.export import export_categorical_nb, to_categorical_nb
from ldp_shared.analyses.naive_bayes.prediction import (
    encode_queries,
    joint_log_likelihood,
    predict,
    predict_proba,
)
from ldp_shared.analyses.naive_bayes.repair import (
    FLOOR,
    REPAIR_RULES,
    repair_counts,
    smoothing_rule,
)
from ldp_shared.analyses.naive_bayes.training import (
    NaiveBayesFit,
    build_model,
    describe,
    fit,
    fit_collection,
    require_finite,
)
from ldp_shared.wire.naive_bayes import NaiveBayesModel

__all__ = [
    "FLOOR",
    "REPAIR_RULES",
    "ClassCounts",
    "FeatureCounts",
    "NaiveBayesFit",
    "NaiveBayesModel",
    "accuracy",
    "build_model",
    "class_counts",
    "counts_from_sums",
    "describe",
    "encode_queries",
    "export_categorical_nb",
    "feature_counts",
    "fit",
    "fit_collection",
    "holdout_split",
    "joint_log_likelihood",
    "non_private_model",
    "predict",
    "predict_proba",
    "repair_counts",
    "require_finite",
    "require_label",
    "smoothing_rule",
    "to_categorical_nb",
]
