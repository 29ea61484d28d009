"""The privacy devices have spent, as the aggregator sees it (``GET /v1/privacy`` and the
dashboard's privacy page): per collection the accountant's (ε, δ) of one record (and for
a shuffled collection the central (ε, δ) of its reports so far), per
training job the exact (ε, δ) of a device's one report, the reports and releases so far,
and their sequential composition (:mod:`ldp_shared.wire.privacy` states the rule).

It reads each collection's statistics (O(periods)) and job rows, never a report.
"""

from __future__ import annotations

import math

from sqlalchemy import Engine

from ldp_aggregator import naive_bayes
from ldp_aggregator.deps import AppState
from ldp_aggregator.jobs import ITEMSETS
from ldp_aggregator.release import central_of, current_stats
from ldp_aggregator.storage.collections import StoredCollection, list_collection_names
from ldp_aggregator.storage.jobs import JobRow, list_jobs
from ldp_aggregator.training import TRAINING, read_training_job
from ldp_shared.accountant import Privacy
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.privacy import (
    COMPOSITION_RULE,
    CollectionSpend,
    DeviceBound,
    PrivacySpent,
    TrainingSpend,
)
from ldp_shared.wire.training import TrainingJob


def collection_kind(config: CollectionConfig, trains: bool = False) -> str:
    """What a collection holds, in a few words: ``kNN``, ``naive Bayes``, else what its
    attributes release (``frequencies``, ``numeric``, ``MASK baskets``), and ``training``
    when it hosts training jobs."""
    if config.spec.knn is not None:
        parts = ["kNN"]
    elif config.label is not None:
        parts = ["naive Bayes"]
    else:
        parts = []
        specs = [config.spec_of(a) for a in config.attributes]
        if any(s.released_as == "frequencies" and not s.is_basket for s in specs):
            parts.append("frequencies")
        if any(s.released_as == "mean" or s.bin_edges is not None for s in specs):
            parts.append("numeric")
        if any(s.is_basket for s in specs):
            parts.append("MASK baskets")
    if trains:
        parts.insert(0, "training")
    return " + ".join(parts)


def compose(parts: list[Privacy]) -> Privacy:
    """Sequential composition (Dwork and Roth 2014, Thm 3.16): Σ ε, Σ δ."""
    return Privacy(math.fsum(p.epsilon for p in parts), math.fsum(p.delta for p in parts))


def training_spend(job: TrainingJob) -> TrainingSpend:
    """A training job's (ε, δ) per device, reports so far and whether it is released."""
    loss = 0.0 if job.loss is None else job.loss.exact_epsilon
    closed = sum(log.gradient_reports + log.loss_reports for log in job.curve)
    return TrainingSpend(
        collection=job.collection,
        job=job.id,
        status=job.status,
        epsilon_per_device=max(job.gradient.exact_epsilon, loss),
        delta_per_device=job.gradient.exact_delta,
        reports=closed + job.received,
        rounds_closed=job.round,
        rounds=job.spec.rounds,
        released=job.status == "done",
    )


def _collection_spend(
    engine: Engine, collection: StoredCollection, rows: list[JobRow], trains: bool
) -> CollectionSpend:
    config = collection.config
    record = config.privacy.record
    permanent = [e.permanent for e in config.privacy.longitudinal if e.permanent is not None]
    mined = sum(1 for row in rows if row.kind == ITEMSETS and row.status == "done")
    models = len(naive_bayes.model_ids(engine, collection)) if config.label is not None else 0
    reports = current_stats(engine, collection).n_reports
    return CollectionSpend(
        collection=collection.name,
        kind=collection_kind(config, trains),
        epsilon_per_record=record.epsilon,
        delta_per_record=record.delta,
        permanent_epsilon=math.fsum(permanent) if permanent else None,
        reports=reports,
        releases=mined + models,
        central=central_of(config, reports),
    )


def privacy_spent(state: AppState) -> PrivacySpent:
    """Every collection and training job of this aggregator, and the composed bound."""
    engine = state.engine
    collections: list[CollectionSpend] = []
    jobs: list[TrainingSpend] = []
    for name in list_collection_names(engine):
        collection = state.collections.get(name)
        with engine.connect() as connection:
            rows = list_jobs(connection, collection.id)
        training = [row for row in rows if row.kind == TRAINING]
        collections.append(_collection_spend(engine, collection, rows, bool(training)))
        for row in training:
            jobs.append(training_spend(read_training_job(engine, collection, row.id)))
    parts = [Privacy(c.epsilon_per_record, c.delta_per_record) for c in collections]
    parts += [Privacy(j.epsilon_per_device, j.delta_per_device) for j in jobs]
    total = compose(parts)
    bound = DeviceBound(
        epsilon=total.epsilon, delta=total.delta, reports=len(parts), rule=COMPOSITION_RULE
    )
    return PrivacySpent(collections=collections, training_jobs=jobs, all_of_them=bound)
