"""The collection's overview: its configuration in plain words and whether it is
released (from the config and the sufficient statistics: O(1) in the reports)."""

from __future__ import annotations

import math

from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import release_status
from ldp_aggregator.ui.words import attribute_words, budget_words, label_words

ODDS_SHOWN_BELOW = 30.0
"""e^ε is written out for ε below this (above, it is a number nobody reads)."""


def view(ctx: PanelContext) -> PanelView:
    config = ctx.config
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
        },
    )


PANEL = Panel(slug="overview", title="Overview", view=view)
