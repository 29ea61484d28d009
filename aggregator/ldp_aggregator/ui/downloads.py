"""The panels' downloads: the released results a panel shows, as CSV (the columns of
:func:`ldp_shared.tabular.columns`, as the API's ``?format=csv`` and the SDK's
``to_frame()``) or as JSON (what the API answers), every CSV cell safe to open in a
spreadsheet (:mod:`ldp_aggregator.result_downloads`)."""

from __future__ import annotations

from fastapi.responses import Response

from ldp_aggregator.result_downloads import (
    csv_response,
    filename,
    result_csv,
    results_csv,
    spreadsheet_cell,
)
from ldp_aggregator.ui.panel import Panel, PanelContext
from ldp_shared.errors import NotFoundError


def json_response(text: str, name: str) -> Response:
    """The JSON attachment ``name``."""
    return Response(
        text,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def result_download(ctx: PanelContext, panel: Panel, ext: str) -> Response:
    """The results ``panel`` shows for the page's parameters, as CSV or JSON (one result:
    its own document; several: a list of them). :class:`NotFoundError` when the panel
    has nothing released to download."""
    if panel.results is None:
        raise NotFoundError(f"the {panel.title} panel has no results to download")
    results = list(panel.results(ctx))
    if not results:
        raise NotFoundError(f"the {panel.title} panel has no released result to download yet")
    subject = str(getattr(results[0], "attribute", "") or "") if len(results) == 1 else ""
    name = filename(ctx.collection.name, subject, panel.slug, ext=ext)
    if ext == "json":
        documents = [result.model_dump_json() for result in results]  # as the API answers
        text = documents[0] if len(documents) == 1 else "[" + ",\n".join(documents) + "]"
        return json_response(text, name)
    if len(results) == 1:
        return result_csv(results[0], name)
    return results_csv(results, panel.results_key, name)


__all__ = ["csv_response", "json_response", "result_download", "spreadsheet_cell"]
