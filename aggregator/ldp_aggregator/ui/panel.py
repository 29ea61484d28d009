"""What a dashboard panel is, and the registry that lists them.

A panel is one view of a collection (its overview, frequencies, naive Bayes models,
itemsets, jobs, ...): it says whether it applies to a collection, builds its view from
the same plain functions the API routes call, and may offer form actions (POST, CSRF
checked by the page routes before the action runs) and downloads. A panel that shows
released results names them (``results``): the page then offers their CSV and JSON
(``download/{slug}.csv`` and ``.json``, :mod:`ldp_aggregator.ui.downloads`). The page routes know
panels only through :data:`ldp_aggregator.ui.panels.PANELS`, so a new analysis adds a
module with one :class:`Panel` and one line there, and changes no other panel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.datastructures import FormData

from ldp_aggregator.deps import AppState
from ldp_aggregator.settings import Role
from ldp_aggregator.storage.collections import StoredCollection
from ldp_shared.collection import CollectionConfig


@dataclass(frozen=True)
class PanelContext:
    """What a panel gets: the request, the app's state, the collection and the role."""

    request: Request
    state: AppState
    collection: StoredCollection
    role: Role

    @property
    def config(self) -> CollectionConfig:
        return self.collection.config

    def param(self, name: str, default: str = "") -> str:
        """A query parameter of the page (``default`` when absent)."""
        return self.request.query_params.get(name, default)

    def url(self, slug: str, suffix: str = "", **params: str) -> str:
        """The URL of panel ``slug`` of this collection (``suffix``: a sub-path)."""
        path = f"/ui/collections/{quote(self.collection.name, safe='')}/{slug}{suffix}"
        query = {key: value for key, value in params.items() if value}
        return f"{path}?{urlencode(query)}" if query else path

    def choices(
        self, slug: str, key: str, options: list[tuple[str, str]], current: str, **fixed: str
    ) -> list[tuple[str, str, bool]]:
        """Links of panel ``slug`` that set query parameter ``key`` to each option's value
        (``options``: value and title; ``fixed``: parameters every link keeps), with
        whether each is ``current`` (for the ``choices`` macro)."""
        return [
            (self.url(slug, **{**fixed, key: value}), title, value == current)
            for value, title in options
        ]


@dataclass(frozen=True)
class PanelView:
    """A panel's content: a template under ``templates/panels/`` and its values.

    ``refresh``: the page reloads itself every few seconds (while a job runs).
    """

    template: str
    context: dict[str, Any]
    refresh: bool = False
    status_code: int = 200


@dataclass(frozen=True)
class Redirect:
    """An action's answer: go to ``url`` (303, so a reload does not post again)."""

    url: str


Action = Callable[[PanelContext, FormData], PanelView | Redirect]
Download = Callable[[PanelContext], Response]
Results = Callable[[PanelContext], Sequence[BaseModel]]


@dataclass(frozen=True)
class Panel:
    """One panel: ``slug`` (its URL part), ``title`` (its tab) and how it is built.

    ``results``: the released results the page shows, for the page's query parameters
    (its downloads); several results (one per attribute) go into one CSV, each row after
    its result's field ``results_key``. ``needs_reports``: see the field.
    """

    slug: str
    title: str
    view: Callable[[PanelContext], PanelView]
    applies: Callable[[CollectionConfig], bool] = lambda _config: True
    actions: Mapping[str, Action] = field(default_factory=dict)
    downloads: Mapping[str, Download] = field(default_factory=dict)
    results: Results | None = None
    results_key: str = "attribute"
    needs_reports: bool = True
    """Whether the panel reads the collection's reports (a collection that only hosts
    training jobs, and holds none, does not list such panels)."""

    def download_links(self, ctx: PanelContext) -> list[tuple[str, str]]:
        """The page's CSV and JSON download links (none without ``results``), keeping the
        page's query parameters."""
        if self.results is None:
            return []
        params = dict(ctx.request.query_params)
        return [
            (label, ctx.url(self.slug, f"/download/{self.slug}.{ext}", **params))
            for ext, label in (("csv", "CSV"), ("json", "JSON"))
        ]
