"""Wire type of a collection's lifecycle (JSON over HTTP).

``GET /v1/collections/{name}/status`` (analyst), ``POST .../close`` and ``POST .../reopen``
(admin) answer a :class:`CollectionStatus`, and so does ``PUT .../retention`` (admin,
body :class:`Retention`). ``DELETE /v1/collections/{name}?confirm={name}``
(admin) answers 204 with no body.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from ldp_shared.request_model import RequestModel


class CollectionStatus(BaseModel):
    """Whether a collection takes new reports, and how many it holds."""

    model_config = ConfigDict(frozen=True)

    name: str
    open: bool = Field(description="false once an admin closed it to new reports")
    closed_day: date | None = Field(description="the UTC day it was closed (null: open)")
    n_reports: int = Field(ge=0, description="reports counted in its statistics")
    retention_days: int | None = Field(
        default=None,
        description="days a report keeps its bits before they are folded away (null: for ever)",
    )


MAX_RETENTION_DAYS = 36_500


class Retention(RequestModel):
    """``PUT /v1/collections/{name}/retention``: how long reports keep their bits."""

    days: int | None = Field(
        ge=1,
        le=MAX_RETENTION_DAYS,
        description="a report received on day D keeps its bits until day D + days; null:"
        " for ever. Its id stays, so a replay is still counted once",
    )
