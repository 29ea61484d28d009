"""The analyst's dashboard (``/ui``) and the API docs (``/docs``), served from this
package's templates and static files: nothing is loaded from another site.

Templates are Jinja2 (escaping every value); the browser assets under
``static/vendor/`` come from the npm registry (``scripts/vendor-ui.sh``, versions and
licences beside them). Each view is a panel of :mod:`ldp_aggregator.ui.panels`.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ldp_aggregator.ui.pages import router

STATIC = "/ui/static"


def install_dashboard(app: FastAPI) -> None:
    """Serve ``/ui`` (the dashboard), its static files and ``/docs`` (Swagger UI, local)."""
    app.include_router(router)
    app.mount(STATIC, StaticFiles(packages=[("ldp_aggregator.ui", "static")]), name="ui-static")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} · API docs",
            swagger_js_url=f"{STATIC}/vendor/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC}/vendor/swagger-ui.css",
            swagger_favicon_url=f"{STATIC}/vendor/favicon-32x32.png",
        )
