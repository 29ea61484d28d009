"""Trained models of a collection's training jobs: the weights per coordinate, the exact ε
and δ each device spent, and the loss curve estimated from the loss reports
(``read_training_job`` and ``trained_model``, the functions behind the API's routes).

Each round's loss comes from a few loss reports, so single rounds are mostly noise (some
below 0). The curve is smoothed: at most :data:`CURVE_POINTS` groups of consecutive
rounds, each the mean of its rounds' unbiased losses, with a 95% normal interval (the
rounds' standard errors combined as independent), drawn as a line over its interval
band. The capped logistic loss lies in ``[0, cap]``: the chart shows each mean and
interval intersected with that range (a projection onto the range, which is never
farther from the truth), and the table gives the unclipped mean with a flag where noise
took it outside. No held-out or plan-predicted loss is known to the aggregator (it
never sees a record), so none is drawn.
"""

from __future__ import annotations

import math
from typing import Any

from ldp_aggregator.storage.jobs import list_jobs
from ldp_aggregator.training import TRAINING, read_training_job, trained_model
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView
from ldp_aggregator.ui.states import problem_view
from ldp_shared.errors import LDPError
from ldp_shared.learning.device import LOSS_CAP
from ldp_shared.wire.training import RoundLog, TrainedModel, TrainingJob

CURVE_POINTS = 20
Z95 = 1.959963984540054


def curve_groups(curve: list[RoundLog], bars: int = CURVE_POINTS) -> list[dict[str, Any]]:
    """Consecutive rounds in at most ``bars`` groups: mean loss and its 95% interval, and
    whether the mean lies outside ``[0, LOSS_CAP]`` (by noise)."""
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
                "outside": not 0.0 <= mean <= LOSS_CAP,
            }
        )
    return groups


def _in_range(value: float) -> float:
    return min(max(value, 0.0), LOSS_CAP)


def _chart(groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "trend",
        "title": "Loss by rounds (smoothed, with its 95% interval band)",
        "labels": [group["rounds"] for group in groups],
        "values": [_in_range(group["loss"]) for group in groups],
        "low": [_in_range(group["low"]) for group in groups],
        "high": [_in_range(group["high"]) for group in groups],
        "y_title": "mean capped logistic loss",
        "x_title": "rounds",
        "y_min": 0,
    }


def _jobs(ctx: PanelContext) -> list[TrainingJob]:
    with ctx.state.engine.connect() as connection:
        rows = [row for row in list_jobs(connection, ctx.collection.id) if row.kind == TRAINING]
    return [read_training_job(ctx.state.engine, ctx.collection, row.id) for row in rows]


def results(ctx: PanelContext) -> list[TrainedModel]:
    """The model of the job the page shows (the chosen one, else the newest done)."""
    jobs = _jobs(ctx)
    chosen = ctx.param("job", next((job.id for job in jobs if job.status == "done"), ""))
    job = next((job for job in jobs if job.id == chosen and job.status == "done"), None)
    return [] if job is None else [trained_model(ctx.state.engine, ctx.collection, job.id)]


def view(ctx: PanelContext) -> PanelView:
    jobs = _jobs(ctx)
    chosen = ctx.param("job", next((job.id for job in jobs if job.status == "done"), ""))
    context: dict[str, Any] = {"jobs": jobs, "chosen": chosen, "loss_cap": LOSS_CAP}
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
        chart=_chart(groups),
    )
    return PanelView("panels/training.html", context)


PANEL = Panel(
    slug="training",
    title="Models",
    view=view,
    results=results,
    results_key="job",
    needs_reports=False,
)
