"""The two guarantees of a shuffled collection, as each of its dashboard panels shows them.

Against everyone, the shuffler included: the local ε (and δ) of one record's report.
Against the aggregator, given an honest shuffler that does not collude with it: the
central (ε, δ) of the shuffled reports (:mod:`ldp_shared.central`). A panel that shows
released results states the central guarantee those results carry (their ``central``
member, at the reports they are made from); any other panel, the one of all the
collection's reports so far. The overview adds the config's table of the closed form
against n. Unshuffled collections show nothing new.
"""

from __future__ import annotations

from typing import Any

from ldp_aggregator.release import central_of
from ldp_aggregator.ui.panel import PanelContext, PanelView
from ldp_aggregator.ui.states import release_status
from ldp_shared.central import CentralRelease

BOUND_WORDS = {
    "numerical": "numerical bound of Feldman, McMillan and Talwar 2021",
    "closed-form": "closed form of Feldman, McMillan and Talwar 2021, Thm 3.1",
    "local": "too few reports to amplify: the local ε",
}


def _found(value: object, depth: int = 0) -> CentralRelease | None:
    central = getattr(value, "central", None)
    if isinstance(central, CentralRelease):
        return central
    if depth < 2 and isinstance(value, list | tuple):
        for item in value:
            found = _found(item, depth + 1)
            if found is not None:
                return found
    return None


def _released_central(view: PanelView) -> CentralRelease | None:
    """The ``central`` of the first released result among the view's values (results
    may sit in lists, and in rows of tuples)."""
    for value in view.context.values():
        found = _found(value)
        if found is not None:
            return found
    return None


def guarantees(ctx: PanelContext, view: PanelView) -> dict[str, Any] | None:
    """What the panel's guarantee line says; ``None`` for an unshuffled collection."""
    config = ctx.config
    if not config.spec.shuffled or config.shuffling is None:
        return None
    central = _released_central(view)
    if central is None:
        central = central_of(config, release_status(ctx.state.engine, ctx.collection).n_reports)
    return {
        "local_epsilon": config.epsilon,
        "local_delta": config.delta,
        "central": central,
        "bound": None if central is None else BOUND_WORDS[central.bound],
        "table": config.shuffling.central,
        "table_delta": config.shuffling.delta,
    }
