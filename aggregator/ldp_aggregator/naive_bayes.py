"""Naive Bayes models of a label collection: train, store, read back, predict, export.

The mathematics is :mod:`ldp_shared.analyses.naive_bayes` (Yilmaz, Al-Rubaie and Chang,
arXiv:1905.01039, 2019). Training reads the collection's sufficient statistics only
(O(Σ d_j·k), never the reports) and stores the model as released, in the same
transaction that reads the statistics' snapshot. Prediction queries are the analyst's
own records: they are classified in memory and never stored or logged.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import date

from pydantic import ValidationError
from sqlalchemy import Engine

from ldp_aggregator.pages import PageQuery
from ldp_aggregator.release import carried_reports, central_of, require_reports
from ldp_aggregator.storage.collections import StoredCollection, utc_today
from ldp_aggregator.storage.models import (
    insert_model,
    list_model_ids,
    load_model_json,
    page_model_ids,
)
from ldp_aggregator.storage.stats import read_stats
from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.errors import CorruptStatisticsError
from ldp_shared.periods import Window
from ldp_shared.wire.lists import ModelList
from ldp_shared.wire.naive_bayes import (
    CategoricalNBExport,
    NaiveBayesModel,
    NaiveBayesPredictions,
    NaiveBayesTrainRequest,
)

KIND = "naive-bayes"


def new_model_id() -> str:
    """A fresh random model id (96 bits, URL-safe base64): ids are not guessable or ordered."""
    return secrets.token_urlsafe(12)


def train_model(
    engine: Engine,
    collection: StoredCollection,
    request: NaiveBayesTrainRequest,
    today: date | None = None,
    window: Window | None = None,
) -> NaiveBayesModel:
    """Train from the collection's statistics and store the model; returns it with its id.

    :class:`~ldp_shared.errors.InvalidQueryError` for a collection without a label or a
    model with a number that is not finite; :class:`~ldp_shared.errors.InsufficientReportsError`
    below the release minimum, of all reports and, under the ``sample`` budget, of the
    ``n_j`` reports that carried each feature (the rule of ``GET .../frequencies``: the
    model's joint counts summed over the classes are a feature's frequencies); with a
    ``window``, of the reports of its periods. Nothing is stored on error.
    """
    config = collection.config
    nb.require_label(config)
    day = today or utc_today()
    with engine.begin() as connection:
        stats = read_stats(
            connection, collection.id, config.stats_length, config.float_stats_length, window
        )
        require_reports(config, stats, window)
        for feature in config.features:
            carried_reports(config, feature, stats)
        model = nb.build_model(
            config,
            stats.n_reports,
            stats.sums,
            request,
            model_id=new_model_id(),
            created_day=day.isoformat(),
        ).model_copy(update={"central": central_of(config, stats.n_reports)})
        insert_model(
            connection,
            model_id=model.id,
            collection_id=collection.id,
            kind=KIND,
            created_day=day,
            model_json=model.model_dump_json(),
        )
    return model


def get_model(engine: Engine, collection: StoredCollection, model_id: str) -> NaiveBayesModel:
    """A stored model; :class:`~ldp_shared.errors.ModelNotFoundError` if there is none,
    :class:`~ldp_shared.errors.CorruptStatisticsError` if it cannot be read back (stored
    before training refused numbers that JSON cannot carry: their ``null`` fails the
    model's schema)."""
    stored = load_model_json(engine, collection.id, KIND, model_id)
    try:
        return NaiveBayesModel.model_validate_json(stored)
    except ValidationError:
        raise CorruptStatisticsError(
            f"the stored naive Bayes model {model_id!r} cannot be read back: it holds numbers"
            " that are not finite (it was trained before such models were refused); train"
            " the collection again"
        ) from None


def model_ids(engine: Engine, collection: StoredCollection) -> list[str]:
    """The ids of the collection's naive Bayes models."""
    return list_model_ids(engine, collection.id, KIND)


def model_list(engine: Engine, collection: StoredCollection, page: PageQuery) -> ModelList:
    """One page of the ids of the collection's naive Bayes models, by id."""
    ids, next_cursor = page_model_ids(engine, collection.id, KIND, page)
    return ModelList(models=ids, next_cursor=next_cursor)


def readable_models(
    engine: Engine, collection: StoredCollection
) -> tuple[list[NaiveBayesModel], list[str]]:
    """The collection's models that can be read back, and the ids of those that cannot
    (see :func:`get_model`), so that one such model does not hide the others."""
    readable, unreadable = [], []
    for model_id in model_ids(engine, collection):
        try:
            readable.append(get_model(engine, collection, model_id))
        except CorruptStatisticsError:
            unreadable.append(model_id)
    return readable, unreadable


def predict(
    engine: Engine,
    collection: StoredCollection,
    model_id: str,
    records: Sequence[Mapping[str, str]],
) -> NaiveBayesPredictions:
    """Classify the analyst's records with a stored model (the records are not stored)."""
    return nb.predict(get_model(engine, collection, model_id), records)


def export_model(
    engine: Engine, collection: StoredCollection, model_id: str
) -> CategoricalNBExport:
    """A stored model as the attributes of a scikit-learn ``CategoricalNB``."""
    return nb.export_categorical_nb(get_model(engine, collection, model_id))
