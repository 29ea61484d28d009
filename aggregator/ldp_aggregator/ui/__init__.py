"""The analyst's dashboard (``/ui``) and the API docs (``/docs``), served from this
package's templates and static files: nothing is loaded from another site.

Templates are Jinja2 (escaping every value); the browser assets under
``static/vendor/`` come from the npm registry (``scripts/vendor-ui.sh``, versions and
licences beside them). Each view is a panel of :mod:`ldp_aggregator.ui.panels`.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ldp_aggregator.ui.pages import router
from ldp_aggregator.ui.plan_page import router as plan_router
from ldp_aggregator.ui.render import SECURITY_HEADERS

STATIC = "/ui/static"


def install_dashboard(app: FastAPI) -> None:
    """Serve ``/ui`` (the dashboard), its static files and ``/docs`` (Swagger UI, local)."""
    app.include_router(router)
    app.include_router(plan_router)
    app.mount(STATIC, StaticFiles(packages=[("ldp_aggregator.ui", "static")]), name="ui-static")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} · API docs",
            swagger_js_url=f"{STATIC}/vendor/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC}/vendor/swagger-ui.css",
            swagger_favicon_url=f"{STATIC}/vendor/favicon-32x32.png",
        )
        page.headers.update(docs_headers(bytes(page.body).decode("utf-8")))
        return page


def docs_headers(page: str) -> dict[str, str]:
    """The dashboard's security headers for the Swagger UI page, whose one inline script
    (starting the UI) is allowed by its hash and nothing else inline."""
    inline = re.findall(r"<script>(.*?)</script>", page, flags=re.DOTALL)
    digests = (base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in inline)
    hashes = " ".join(f"'sha256-{digest}'" for digest in digests)
    policy = SECURITY_HEADERS["Content-Security-Policy"].replace(
        "script-src 'self'", f"script-src 'self' {hashes}"
    )
    return {**SECURITY_HEADERS, "Content-Security-Policy": policy}
