"""``to_dict()`` and ``to_frame()`` of the released results (the functions:
:mod:`ldp_shared.frames`, imported when called, so that no wire module loads them)."""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel


class Tabular:
    """Mixin of a wire model an analyst takes away: as a plain dict, or as a data frame."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain JSON-able dict (what the aggregator answered)."""
        from ldp_shared import frames

        return frames.to_dict(cast(BaseModel, self))

    def to_frame(self) -> Any:
        """The result as a ``pandas.DataFrame``: one row per value, rule, period or point
        with its estimate, standard error and interval (:mod:`ldp_shared.frames` names the
        columns); the result's scalars (collection, ε, ...) are in ``frame.attrs``. Needs
        pandas (:class:`~ldp_shared.errors.MissingDependencyError` without it)."""
        from ldp_shared import frames

        return frames.to_frame(cast(BaseModel, self))
