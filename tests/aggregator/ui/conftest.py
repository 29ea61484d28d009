"""Fixtures of the dashboard tests: a served aggregator with three collections, and
Debian's Chromium driven by Playwright.

The browser tests need ``/usr/bin/chromium`` (``apt-get install chromium``; another
path in ``LDPCOLLECT_CHROMIUM``) and the ``playwright`` package (the test extra).
Without them they skip locally and FAIL under ``CI=true``: CI must run them
(``.ci/run`` installs Chromium). Screenshots of every page go to
``$LDPCOLLECT_ARTIFACTS/screenshots`` (default: the tests' temporary directory).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.conftest import serving

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings

from ..conftest import ADMIN_TOKEN, ANALYST_TOKEN, TestClient
from ._data import populate

CHROMIUM = os.environ.get("LDPCOLLECT_CHROMIUM", "/usr/bin/chromium")
PROVOKED = (401, 403, 409, 422)
"""Statuses of refusals and error states the tests ask for (the browser logs them)."""


def _settings(folder: Path) -> Settings:
    return Settings(
        database_url=f"sqlite:///{folder / 'ui.db'}",
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An aggregator on loopback holding ``survey``, ``car-nb`` and ``waiting``."""
    with serving(_settings(tmp_path_factory.mktemp("ui"))) as url:
        with httpx.Client(base_url=url, timeout=60) as client:
            populate(client)
        yield url


@pytest.fixture(scope="module")
def ui_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """An in-process app (no browser) holding the same three collections."""
    settings = _settings(tmp_path_factory.mktemp("ui-pages"))
    with TestClient(create_app(settings), raise_server_exceptions=True) as client:
        populate(client)
        yield client


def csrf_of(page: str) -> str:
    """The CSRF token a rendered form carries."""
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


def sign_in_client(client: TestClient, token: str = ANALYST_TOKEN) -> str:
    """Sign ``client`` in through the form; the CSRF token of its session."""
    client.cookies.clear()
    form = client.get("/ui/sign-in")
    response = client.post(
        "/ui/sign-in", data={"csrf": csrf_of(form.text), "token": token}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    return csrf_of(client.get("/ui").text)


def _missing_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package (pip install -e '.[test]')"
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).is_file():
        return f"Chromium at {CHROMIUM} (apt-get install -y chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing_browser()
    if missing is not None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"CI must run the browser tests, but {missing} is missing")
        pytest.skip(f"the browser tests need {missing}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = os.environ.get("LDPCOLLECT_ARTIFACTS")
    folder = Path(root) / "screenshots" if root else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser: Any, served: str) -> Iterator[Any]:
    """A fresh browser context's page; at the end, no console error was printed and no
    request left the aggregator's origin."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    elsewhere: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "request",
        lambda r: None if r.url.startswith(served) else elsewhere.append(r.url),
    )
    yield page
    context.close()
    assert elsewhere == [], f"requests outside the aggregator: {elsewhere}"
    unexpected = [e for e in errors if not any(f"status of {s}" in e for s in PROVOKED)]
    assert unexpected == [], f"console errors: {unexpected}"


def sign_in(page: Any, url: str, token: str = ANALYST_TOKEN) -> None:
    """Sign in through the form, with the keyboard (type the token, press Enter)."""
    page.goto(f"{url}/ui")
    page.get_by_label("Analyst token").fill(token)
    page.get_by_label("Analyst token").press("Enter")
    page.wait_for_url(f"{url}/ui")
