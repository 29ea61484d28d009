"""Reports received per day: how many stored reports carry each day.

The count comes from the day each stored report already carries (the only time stored
with a report, :mod:`ldp_aggregator.storage.tables`); the dashboard records nothing new
and shows nothing finer than a UTC day. It reads every stored report of the collection
(a ``GROUP BY`` over them), so it has a panel of its own: the overview stays O(1).
"""

from __future__ import annotations

from ldp_aggregator.storage.reports import reports_per_day
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView


def view(ctx: PanelContext) -> PanelView:
    with ctx.state.engine.connect() as connection:
        days = reports_per_day(connection, ctx.collection.id)
    return PanelView(
        "panels/days.html",
        {
            "days": [(day.isoformat(), count) for day, count in days],
            "chart": {
                "title": "Reports received per day",
                "labels": [day.isoformat() for day, _ in days],
                "values": [count for _, count in days],
                "y_title": "reports",
            },
        },
    )


PANEL = Panel(slug="days", title="Reports per day", view=view)
