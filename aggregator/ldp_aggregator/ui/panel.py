"""What a dashboard panel is, and the registry that lists them.

A panel is one view of a collection (its overview, frequencies, naive Bayes models,
itemsets, jobs, ...): it says whether it applies to a collection, builds its view from
the same plain functions the API routes call, and may offer form actions (POST, CSRF
checked by the page routes before the action runs) and downloads. The page routes know
panels only through :data:`ldp_aggregator.ui.panels.PANELS`, so a new analysis adds a
module with one :class:`Panel` and one line there, and changes no other panel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.responses import Response
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


@dataclass(frozen=True)
class Panel:
    """One panel: ``slug`` (its URL part), ``title`` (its tab) and how it is built."""

    slug: str
    title: str
    view: Callable[[PanelContext], PanelView]
    applies: Callable[[CollectionConfig], bool] = lambda _config: True
    actions: Mapping[str, Action] = field(default_factory=dict)
    downloads: Mapping[str, Download] = field(default_factory=dict)
