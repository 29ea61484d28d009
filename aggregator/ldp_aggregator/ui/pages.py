"""The dashboard's routes: signing in and out, the collections, and each collection's
panels (views, form actions, downloads). Every page needs a signed-in analyst (or
admin); without one it redirects to the sign-in form. Errors are pages, not JSON."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartParser

from ldp_aggregator.deps import app_state
from ldp_aggregator.privacy_spent import collection_kind, privacy_spent
from ldp_aggregator.problems import http_status
from ldp_aggregator.settings import Role
from ldp_aggregator.storage.collections import list_collection_names
from ldp_aggregator.storage.jobs import list_jobs
from ldp_aggregator.training import TRAINING
from ldp_aggregator.ui.downloads import result_download
from ldp_aggregator.ui.guarantees import guarantees
from ldp_aggregator.ui.panel import Panel, PanelContext, PanelView, Redirect
from ldp_aggregator.ui.panels import PANELS
from ldp_aggregator.ui.render import render
from ldp_aggregator.ui.session import (
    CSRF_FIELD,
    check_csrf,
    end_session,
    renew_csrf,
    send_csrf_cookie,
    signed_in_role,
    start_session,
)
from ldp_aggregator.ui.states import problem_view, release_status
from ldp_shared.errors import LDPError, NotFoundError, PayloadTooLargeError

router = APIRouter(prefix="/ui", include_in_schema=False)

FORM_MAX_BYTES = MultiPartParser.spool_max_size
"""Largest form body (an uploaded test file included): below Starlette's spooling
threshold, so an upload is held in memory and never written to a temporary file."""


def _to_sign_in(request: Request) -> RedirectResponse:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/sign-in?{urlencode({'next': here})}", status_code=303)


def _safe_next(target: object) -> str:
    """A dashboard path to go to after signing in (never another site)."""
    if isinstance(target, str) and target.startswith("/ui") and "//" not in target:
        return target
    return "/ui"


def _error_page(request: Request, error: LDPError, role: Role | None) -> Response:
    return render(
        request,
        "error.html",
        {"title": error.title, "message": error.detail, "role": role},
        http_status(type(error)),
    )


async def _read_form(request: Request) -> FormData:
    length = request.headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > FORM_MAX_BYTES:
        raise PayloadTooLargeError(
            f"a dashboard form may send at most {FORM_MAX_BYTES:,} bytes (uploaded files"
            " are processed in memory only); send a smaller file"
        )
    return await request.form(max_files=1, max_fields=50)


async def _checked_form(request: Request) -> FormData | Response:
    """The posted form if its CSRF token is right; else the page refusing it."""
    try:
        form = await _read_form(request)
        check_csrf(request, form.get(CSRF_FIELD))
    except LDPError as error:
        return _error_page(request, error, signed_in_role(request))
    return form


@router.get("")
def collections_page(request: Request) -> Response:
    role = signed_in_role(request)
    if role is None:
        return _to_sign_in(request)
    state = app_state(request)
    rows = []
    for name in list_collection_names(state.engine):
        collection = state.collections.get(name)
        with state.engine.connect() as connection:
            training = [row for row in list_jobs(connection, collection.id) if row.kind == TRAINING]
        rows.append(
            {
                "name": name,
                "kind": collection_kind(collection.config, bool(training)),
                "description": collection.config.spec.description,
                "attributes": len(collection.config.spec.attributes),
                "epsilon": collection.config.epsilon,
                "status": release_status(state.engine, collection),
                "jobs": len(training),
                "models": sum(1 for row in training if row.status == "done"),
            }
        )
    return render(request, "collections.html", {"rows": rows, "role": role})


@router.get("/privacy")
def privacy_page(request: Request) -> Response:
    """Per collection and training job: ε and δ of one report, the reports and releases
    so far, and the most a device that took part in all of them has spent."""
    role = signed_in_role(request)
    if role is None:
        return _to_sign_in(request)
    spent = privacy_spent(app_state(request))
    shuffled = any(c.central is not None for c in spent.collections)
    context = {"spent": spent, "shuffled": shuffled, "role": role}
    return render(request, "privacy.html", context)


@router.get("/sign-in")
def sign_in_form(request: Request, next: Annotated[str, Query()] = "/ui") -> Response:
    return render(request, "sign_in.html", {"next": _safe_next(next), "role": None})


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    form = await _checked_form(request)
    if not isinstance(form, FormData):
        return form
    token = form.get("token")
    token = token.strip() if isinstance(token, str) else ""
    target = _safe_next(form.get("next"))
    if not token or app_state(request).tokens.role_of(token) is None:
        message = "That token opens nothing here: paste the analyst token the operator gave you."
        context = {"next": target, "role": None, "error": message}
        return render(request, "sign_in.html", context, 401)
    response = RedirectResponse(target, status_code=303)
    start_session(request, response, token)
    renew_csrf(request)
    send_csrf_cookie(request, response)
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    checked = await _checked_form(request)
    if not isinstance(checked, FormData):
        return checked
    response = RedirectResponse("/ui/sign-in", status_code=303)
    end_session(request, response)
    return response


@router.get("/collections/{name}")
def collection_page(name: str, request: Request) -> Response:
    return RedirectResponse(f"/ui/collections/{quote(name, safe='')}/overview", status_code=303)


def _context(request: Request, role: Role, name: str, slug: str) -> tuple[PanelContext, Panel]:
    state = app_state(request)
    collection = state.collections.get(name)
    for panel in PANELS:
        if panel.slug == slug and panel.applies(collection.config):
            return PanelContext(request, state, collection, role), panel
    raise NotFoundError(f"collection {name!r} has no panel {slug!r}")


def _only_hosts_training(ctx: PanelContext) -> bool:
    """Whether the collection holds no reports and hosts training jobs (whose devices
    report to the jobs): its report panels would only say "not released"."""
    if release_status(ctx.state.engine, ctx.collection).n_reports > 0:
        return False
    with ctx.state.engine.connect() as connection:
        return any(row.kind == TRAINING for row in list_jobs(connection, ctx.collection.id))


def _panel_page(ctx: PanelContext, panel: Panel, view: PanelView) -> Response:
    tabs = [p for p in PANELS if p.applies(ctx.config)]
    if _only_hosts_training(ctx):
        tabs = [p for p in tabs if not p.needs_reports or p is panel]
    context = {
        "role": ctx.role,
        "collection": ctx.collection.name,
        "tabs": [(p.slug, p.title, ctx.url(p.slug)) for p in tabs],
        "panel": panel,
        "view": view,
        "ctx": ctx,
        "refresh": view.refresh,
        "guarantees": guarantees(ctx, view),
    }
    return render(ctx.request, "collection.html", context, view.status_code)


@router.get("/collections/{name}/{slug}")
def panel_page(name: str, slug: str, request: Request) -> Response:
    role = signed_in_role(request)
    if role is None:
        return _to_sign_in(request)
    try:
        ctx, panel = _context(request, role, name, slug)
    except LDPError as error:
        return _error_page(request, error, role)
    try:
        view = panel.view(ctx)
    except LDPError as error:
        view = problem_view(ctx, error)
    return _panel_page(ctx, panel, view)


def _refused(ctx: PanelContext, panel: Panel, error: LDPError) -> PanelView:
    """The panel as it was, its form and results included, with the problem that refused
    the form above them (answered with the problem's status)."""
    problem = problem_view(ctx, error)
    try:
        shown = panel.view(ctx)
    except LDPError:
        return problem
    context = {**shown.context, "form_problem": problem.context}
    return PanelView(shown.template, context, shown.refresh, problem.status_code)


@router.post("/collections/{name}/{slug}/{action}")
async def panel_action(name: str, slug: str, action: str, request: Request) -> Response:
    role = signed_in_role(request)
    if role is None:
        return _to_sign_in(request)
    form = await _checked_form(request)
    if not isinstance(form, FormData):
        return form
    try:
        ctx, panel = await run_in_threadpool(_context, request, role, name, slug)
        act = panel.actions.get(action)
        if act is None:
            raise NotFoundError(f"the {panel.title} panel has no action {action!r}")
    except LDPError as error:
        return _error_page(request, error, role)
    try:
        outcome = await run_in_threadpool(act, ctx, form)
    except LDPError as error:
        outcome = await run_in_threadpool(_refused, ctx, panel, error)
    if isinstance(outcome, Redirect):
        return RedirectResponse(outcome.url, status_code=303)
    return _panel_page(ctx, panel, outcome)


@router.get("/collections/{name}/{slug}/download/{what}")
def panel_download(name: str, slug: str, what: str, request: Request) -> Response:
    role = signed_in_role(request)
    if role is None:
        return _to_sign_in(request)
    try:
        ctx, panel = _context(request, role, name, slug)
        stem, _, ext = what.rpartition(".")
        if panel.results is not None and stem == panel.slug and ext in ("csv", "json"):
            return result_download(ctx, panel, ext)
        download = panel.downloads.get(what)
        if download is None:
            raise NotFoundError(f"the {panel.title} panel has no download {what!r}")
        return download(ctx)
    except LDPError as error:
        return _error_page(request, error, role)
