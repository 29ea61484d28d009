"""Trained models of a collection's training jobs: the weights per coordinate, the exact ε
and δ each device spent, and the loss curve estimated from the loss reports
(``read_training_job`` and ``trained_model``, the functions behind the API's routes).

The curve is shown in at most :data:`CURVE_BARS` groups of consecutive rounds: each
round's loss comes from a few loss reports, so a group's mean loss and its interval
(the rounds' standard errors combined as independent) say more than hundreds of bars.
"""

from __future__ import annotations

import math
from typing import Any

from ldp_aggregator.storage.jobs import list_jobs
from ldp_aggregator.training import TRAINING, read_training_job, trained_model
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import problem_view
from ldp_shared.errors import LDPError
from ldp_shared.training_wire import RoundLog

CURVE_BARS = 20
Z95 = 1.959963984540054


def curve_groups(curve: list[RoundLog], bars: int = CURVE_BARS) -> list[dict[str, Any]]:
    """Consecutive rounds in at most ``bars`` groups: mean loss and its 95% interval."""
    logs = [log for log in curve if log.loss is not None and log.loss_stderr is not None]
    if not logs:
        return []
    size = math.ceil(len(logs) / bars)
    groups = []
    for start in range(0, len(logs), size):
        part = logs[start : start + size]
        mean = sum(float(log.loss or 0.0) for log in part) / len(part)
        stderr = math.sqrt(sum(float(log.loss_stderr or 0.0) ** 2 for log in part)) / len(part)
        first, last = part[0].round, part[-1].round
        groups.append(
            {
                "rounds": f"{first}" if first == last else f"{first}–{last}",
                "loss": mean,
                "stderr": stderr,
                "low": mean - Z95 * stderr,
                "high": mean + Z95 * stderr,
                "reports": sum(log.loss_reports for log in part),
            }
        )
    return groups


def view(ctx: PanelContext) -> PanelView:
    with ctx.state.engine.connect() as connection:
        rows = [row for row in list_jobs(connection, ctx.collection.id) if row.kind == TRAINING]
    jobs = [read_training_job(ctx.state.engine, ctx.collection, row.id) for row in rows]
    chosen = ctx.param("job", next((job.id for job in jobs if job.status == "done"), ""))
    context: dict[str, Any] = {"jobs": jobs, "chosen": chosen}
    job = next((job for job in jobs if job.id == chosen), None)
    if job is None:
        return PanelView("panels/training.html", context)
    context["job"] = job
    try:
        model = trained_model(ctx.state.engine, ctx.collection, job.id)
    except LDPError as error:
        problem = problem_view(ctx, error)
        context["problem"] = problem.context
        return PanelView("panels/training.html", context, refresh=job.status == "running")
    groups = curve_groups(model.curve)
    context.update(
        model=model,
        weights=list(zip(model.coordinates, model.weights, strict=True)),
        groups=groups,
        chart={
            "title": "Loss by rounds",
            "labels": [group["rounds"] for group in groups],
            "values": [group["loss"] for group in groups],
            "low": [group["low"] for group in groups],
            "high": [group["high"] for group in groups],
            "y_title": "mean capped logistic loss",
        },
    )
    return PanelView("panels/training.html", context)


PANEL = Panel(slug="training", title="Models", view=view)
