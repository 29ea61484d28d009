"""The collection's overview: its configuration in plain words, whether it is released,
and how many reports arrived on each day.

The per-day counts come from the day each stored report already carries (the only time
stored with a report, :mod:`ldp_aggregator.storage.tables`); the dashboard records
nothing new and shows nothing finer than a day.
"""

from __future__ import annotations

import math

from ldp_aggregator.storage.reports import reports_per_day
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import release_status
from ldp_aggregator.ui.words import attribute_words, budget_words, label_words

ODDS_SHOWN_BELOW = 30.0
"""e^ε is written out for ε below this (above, it is a number nobody reads)."""


def view(ctx: PanelContext) -> PanelView:
    config = ctx.config
    with ctx.state.engine.connect() as connection:
        days = reports_per_day(connection, ctx.collection.id)
    report = config.privacy.report
    return PanelView(
        "panels/overview.html",
        {
            "status": release_status(ctx.state.engine, ctx.collection),
            "description": config.spec.description,
            "record_epsilon": config.epsilon,
            "record_delta": config.delta,
            "report_epsilon": report.epsilon,
            "report_delta": report.delta,
            "odds_factor": math.exp(report.epsilon) if report.epsilon < ODDS_SHOWN_BELOW else None,
            "budget": budget_words(config),
            "label": label_words(config),
            "attributes": attribute_words(config),
            "min_reports": config.spec.release.min_reports,
            "days": [(day.isoformat(), count) for day, count in days],
            "days_chart": {
                "title": "Reports received per day",
                "labels": [day.isoformat() for day, _ in days],
                "values": [count for _, count in days],
                "y_title": "reports",
            },
        },
    )


PANEL = Panel(slug="overview", title="Overview", view=view)
