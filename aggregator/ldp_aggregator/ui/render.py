"""Rendering the dashboard's pages: Jinja2 templates, number formats, security headers.

Jinja2 escapes every value put into HTML (``autoescape``), so a collection's
description or an attribute's value cannot inject markup; the pages carry a
Content-Security-Policy that allows scripts, styles and images from this server only.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ldp_aggregator.ui.session import CSRF_FIELD, csrf_token, send_csrf_cookie

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def number(value: float | int | None, digits: int = 4) -> str:
    """A number for reading: ``digits`` significant digits, thousands separated."""
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value != 0 and abs(value) < 10 ** -(digits - 1):
        return f"{value:.{digits - 1}e}"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if abs(value) >= 1 else f"{value:.{digits}f}"


def fixed(value: float | int | None, places: int = 3) -> str:
    """A number with ``places`` decimals, thousands separated: one format for a column
    (a count and its standard error side by side, probabilities)."""
    if value is None:
        return "–"
    if not math.isfinite(value):
        return str(value)
    return f"{value:,.{places}f}"


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as ``None`` (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value


def chart_json(spec: dict[str, Any]) -> Markup:
    """A chart's data for ``<script type="application/json">`` (``<`` escaped, so it
    cannot close the element)."""
    text = json.dumps(_finite(spec), allow_nan=False).replace("<", "\\u003c")
    return Markup(text)


_environment = Environment(
    loader=PackageLoader("ldp_aggregator.ui", "templates"),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.filters["number"] = number
_environment.filters["fixed"] = fixed
_environment.filters["chart_json"] = chart_json


def render(
    request: Request, template: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    """The page ``template`` with ``context``, the CSRF token and the security headers."""
    body = _environment.get_template(template).render(
        request=request, csrf_field=CSRF_FIELD, csrf=csrf_token(request), **context
    )
    response = HTMLResponse(body, status_code=status_code, headers=SECURITY_HEADERS)
    send_csrf_cookie(request, response)
    return response
