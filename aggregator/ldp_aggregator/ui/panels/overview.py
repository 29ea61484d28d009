"""The collection's overview: its configuration in plain words and whether it is
released (from the config and the sufficient statistics: O(1) in the reports)."""

from __future__ import annotations

import math
from typing import Any

from ldp_aggregator.privacy_spent import collection_kind
from ldp_aggregator.storage.jobs import list_jobs
from ldp_aggregator.training import TRAINING
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.panels.knn import internal_attributes
from ldp_aggregator.ui.states import release_status
from ldp_aggregator.ui.words import attribute_words, budget_words, label_words
from ldp_shared.collection import CollectionConfig

ODDS_SHOWN_BELOW = 30.0
"""e^ε is written out for ε below this (above, it is a number nobody reads)."""


def knn_words(config: CollectionConfig) -> dict[str, Any] | None:
    """A kNN collection's features and how its reports carry them (its reported
    attributes, the cell hashes, are internal and not listed), or ``None``."""
    cells = config.spec.knn
    if cells is None:
        return None
    features = [
        (f.name, ", ".join(f.domain) if f.domain is not None else f"{f.lo:g} to {f.hi:g}")
        for f in cells.features
    ]
    label = config.label.name if config.label is not None else ""
    how = (
        f"Each record reports its {label} jointly with the hash of its point in one of"
        f" {cells.tables} random-hyperplane tables of {cells.bits} bits, the table chosen at"
        " random on the device (budget 'sample'); the hashes are internal, so the"
        " collection's attributes are its features and its label."
    )
    return {"features": features, "label": label, "how": how}


def view(ctx: PanelContext) -> PanelView:
    config = ctx.config
    report = config.privacy.report
    hidden = internal_attributes(config)
    with ctx.state.engine.connect() as connection:
        training = [row for row in list_jobs(connection, ctx.collection.id) if row.kind == TRAINING]
    return PanelView(
        "panels/overview.html",
        {
            "kind": collection_kind(config, bool(training)),
            "training_jobs": len(training),
            "trained": sum(1 for row in training if row.status == "done"),
            "status": release_status(ctx.state.engine, ctx.collection),
            "description": config.spec.description,
            "record_epsilon": config.epsilon,
            "record_delta": config.delta,
            "report_epsilon": report.epsilon,
            "report_delta": report.delta,
            "odds_factor": math.exp(report.epsilon) if report.epsilon < ODDS_SHOWN_BELOW else None,
            "budget": budget_words(config),
            "label": label_words(config),
            "attributes": [w for w in attribute_words(config) if w.name not in hidden],
            "knn": knn_words(config),
            "min_reports": config.spec.release.min_reports,
        },
    )


PANEL = Panel(slug="overview", title="Overview", view=view, needs_reports=False)
