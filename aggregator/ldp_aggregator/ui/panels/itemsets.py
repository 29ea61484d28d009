"""Frequent itemsets and association rules of a MASK attribute: start a mining job (the
same checks and runner as ``POST .../itemsets``), follow it, and read its result as
sortable tables with their errors, or download them as CSV."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from fastapi.responses import Response
from starlette.datastructures import FormData

from ldp_aggregator.itemsets import check_itemset_query, check_release
from ldp_aggregator.jobs import ITEMSETS, job_view, runner_of
from ldp_aggregator.result_downloads import csv_response, filename, table_rows
from ldp_aggregator.storage.jobs import list_jobs
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView, Redirect
from ldp_shared.analyses.itemsets.rules import UNINFORMATIVE_WIDTH
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError, NotFoundError
from ldp_shared.wire.itemsets import ItemsetJob, ItemsetQuery, ItemsetResult

PAGE_SIZE = 50
"""Rules (and itemsets) per page: a page stays a screen or two, never 13,000 px."""

DEFAULTS = {"min_support": "0.1", "max_size": "3", "min_confidence": "0.5"}


def basket_names(config: CollectionConfig) -> list[str]:
    return [a.name for a in config.attributes if config.spec_of(a).is_basket]


def _job(ctx: PanelContext, job_id: str) -> ItemsetJob | None:
    """The job ``job_id``, or else the newest finished itemset job (``None``: none)."""
    runner = runner_of(ctx.request.app, ctx.state.engine)
    if job_id:
        return runner.get(ctx.collection, job_id)
    with ctx.state.engine.connect() as connection:
        rows = list_jobs(connection, ctx.collection.id)
    for row in rows:
        if row.kind == ITEMSETS and row.status == "done":
            return job_view(ctx.collection, row)
    return None


def rule_flags(result: ItemsetResult | None) -> list[bool]:
    """Per released rule, whether its confidence interval is informative (the API sorts
    the uninformative ones last)."""
    if result is None:
        return []
    return [rule.informative for rule in result.rules]


def page_of(ctx: PanelContext, items: Sequence[Any], key: str, job_id: str) -> dict[str, Any]:
    """One page of ``items`` (:data:`PAGE_SIZE` rows), by the page's parameter ``key``
    (1-based; out of range: the nearest page), with its place and the links either side."""
    pages = max(1, math.ceil(len(items) / PAGE_SIZE))
    asked = ctx.param(key, "1")
    number = min(max(int(asked), 1), pages) if asked.isdigit() else 1
    start = (number - 1) * PAGE_SIZE
    kept = {k: v for k, v in ctx.request.query_params.items() if k != key}
    kept["job"] = job_id

    def link(to: int) -> str | None:
        if not 1 <= to <= pages or to == number:
            return None
        return ctx.url("itemsets", **{**kept, key: str(to)})

    return {
        "start": start,
        "rows": list(items[start : start + PAGE_SIZE]),
        "number": number,
        "pages": pages,
        "first": start + 1,
        "last": min(start + PAGE_SIZE, len(items)),
        "total": len(items),
        "previous": link(number - 1),
        "next": link(number + 1),
    }


def view(ctx: PanelContext) -> PanelView:
    job = _job(ctx, ctx.param("job"))
    result = job.result if job is not None else None
    flags = rule_flags(result)
    context: dict[str, Any] = {
        "baskets": basket_names(ctx.config),
        "defaults": DEFAULTS,
        "job": job,
        "result": result,
        "informative": flags,
        "uninformative": flags.count(False),
        "uninformative_width": UNINFORMATIVE_WIDTH,
    }
    if job is not None and result is not None:
        rules = page_of(ctx, list(zip(result.rules, flags, strict=True)), "rules_page", job.id)
        context["rules_page"] = rules
        context["itemsets_page"] = page_of(ctx, result.itemsets, "itemsets_page", job.id)
    running = job is not None and job.status in ("queued", "running")
    return PanelView("panels/itemsets.html", context, refresh=running)


def _number(form: FormData, name: str, cast: type[float] | type[int]) -> Any:
    text = str(form.get(name, "")).strip()
    if name == "max_size" and text == "":
        return None
    try:
        return cast(text)
    except ValueError:
        raise InvalidQueryError(
            f"{name.replace('_', ' ')} must be a number, got {text!r}"
        ) from None


def mine(ctx: PanelContext, form: FormData) -> PanelView | Redirect:
    query = ItemsetQuery(
        attribute=str(form.get("attribute", "")) or None,
        min_support=_number(form, "min_support", float),
        max_size=_number(form, "max_size", int),
        min_confidence=_number(form, "min_confidence", float),
        wait_seconds=0.0,
    )
    check_itemset_query(ctx.config, query)
    check_release(ctx.state.engine, ctx.collection)
    job_id = runner_of(ctx.request.app, ctx.state.engine).submit(ctx.collection, query)
    return Redirect(ctx.url("itemsets", job=job_id))


def _result(ctx: PanelContext) -> ItemsetResult:
    job = _job(ctx, ctx.param("job"))
    if job is None or job.result is None:
        raise NotFoundError("no finished mining job to download; mine the itemsets first")
    return job.result


def rules_csv(ctx: PanelContext) -> Response:
    """The rules, the columns of ``to_frame()`` (:data:`ldp_shared.wire.itemsets.RULES`)."""
    result = _result(ctx)
    header, rows = table_rows(result.frame_columns("rules"))
    return csv_response(header, rows, filename(result.collection, result.attribute, "rules"))


def itemsets_csv(ctx: PanelContext) -> Response:
    """The itemsets, the columns of ``to_frame(what="itemsets")``."""
    result = _result(ctx)
    header, rows = table_rows(result.frame_columns("itemsets"))
    return csv_response(header, rows, filename(result.collection, result.attribute, "itemsets"))


def results(ctx: PanelContext) -> list[ItemsetResult]:
    """The mining result the page shows: its rules (the itemsets: ``itemsets.csv``)."""
    job = _job(ctx, ctx.param("job"))
    return [job.result] if job is not None and job.result is not None else []


PANEL = Panel(
    slug="itemsets",
    title="Itemsets and rules",
    view=view,
    applies=lambda config: bool(basket_names(config)),
    actions={"mine": mine},
    downloads={"rules.csv": rules_csv, "itemsets.csv": itemsets_csv},
    results=results,
)
