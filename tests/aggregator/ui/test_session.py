"""Signing in to the dashboard and its form protection, without a browser: the session
cookie's flags, refusals without a session or a CSRF token, redirects that stay on the
site, the security headers, and the API docs served from this server."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings

from ..conftest import ADMIN, ANALYST, ANALYST_TOKEN, TestClient
from .conftest import csrf_of, sign_in_client

PAGES = [
    "/ui",
    "/ui/collections/survey/overview",
    "/ui/collections/survey/frequencies?attribute=color",
    "/ui/collections/car-nb/naive-bayes",
    "/ui/collections/survey/itemsets/download/rules.csv",
]


def _models(client: TestClient) -> list[str]:
    response = client.get("/v1/collections/car-nb/models/naive-bayes", headers=ANALYST)
    assert response.status_code == 200
    return list(response.json()["models"])


@pytest.mark.parametrize("path", PAGES)
def test_every_page_sends_a_visitor_without_a_session_to_sign_in(
    ui_client: TestClient, path: str
) -> None:
    ui_client.cookies.clear()
    response = ui_client.get(path, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/ui/sign-in?next=%2Fui")
    assert "0." not in response.text  # no estimate in the body


def test_a_bearer_header_does_not_open_the_dashboard(ui_client: TestClient) -> None:
    ui_client.cookies.clear()
    response = ui_client.get("/ui/collections/survey/overview", headers=ANALYST)
    assert response.status_code == 200 and "Sign in" in response.text
    assert "Privacy, in plain words" not in response.text


def test_an_action_without_a_session_changes_nothing(ui_client: TestClient) -> None:
    before = _models(ui_client)
    ui_client.cookies.clear()
    response = ui_client.post(
        "/ui/collections/car-nb/naive-bayes/train", data={}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"].startswith("/ui/sign-in")
    assert _models(ui_client) == before


def test_the_session_cookie_is_httponly_strict_and_never_in_the_url(
    ui_client: TestClient,
) -> None:
    ui_client.cookies.clear()
    form = ui_client.get("/ui/sign-in")
    response = ui_client.post(
        "/ui/sign-in",
        data={"csrf": csrf_of(form.text), "token": ANALYST_TOKEN, "next": "/ui/collections"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert ANALYST_TOKEN not in response.headers["location"]
    cookies = response.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("ldp_session="))
    for flag in ("HttpOnly", "Path=/ui", "SameSite=strict"):
        assert flag in session
    assert "Secure" not in session  # plain HTTP here: a Secure cookie would never come back


def test_over_tls_the_cookies_are_secure(tmp_path: object) -> None:
    settings = Settings(database_url="sqlite:///:memory:", analyst_token=ANALYST_TOKEN)
    with TestClient(create_app(settings), base_url="https://dashboard.test") as client:
        form = client.get("/ui/sign-in")
        assert "Secure" in form.headers["set-cookie"]
        response = client.post(
            "/ui/sign-in",
            data={"csrf": csrf_of(form.text), "token": ANALYST_TOKEN},
            follow_redirects=False,
        )
    cookies = response.headers.get_list("set-cookie")
    assert len(cookies) == 2 and all("; Secure" in cookie for cookie in cookies)


def test_an_unknown_token_is_refused(ui_client: TestClient) -> None:
    ui_client.cookies.clear()
    form = ui_client.get("/ui/sign-in")
    response = ui_client.post(
        "/ui/sign-in", data={"csrf": csrf_of(form.text), "token": "guess"}, follow_redirects=False
    )
    assert response.status_code == 401 and "opens nothing here" in response.text
    assert "ldp_session" not in response.headers.get("set-cookie", "")


@pytest.mark.parametrize("target", ["https://elsewhere.test/", "//elsewhere.test/ui", "/v1/x"])
def test_after_signing_in_the_redirect_stays_on_the_dashboard(
    ui_client: TestClient, target: str
) -> None:
    ui_client.cookies.clear()
    form = ui_client.get("/ui/sign-in")
    response = ui_client.post(
        "/ui/sign-in",
        data={"csrf": csrf_of(form.text), "token": ANALYST_TOKEN, "next": target},
        follow_redirects=False,
    )
    assert response.headers["location"] == "/ui"


def test_signing_in_needs_the_csrf_token(ui_client: TestClient) -> None:
    ui_client.cookies.clear()
    ui_client.get("/ui/sign-in")
    response = ui_client.post("/ui/sign-in", data={"token": ANALYST_TOKEN}, follow_redirects=False)
    assert response.status_code == 403 and "CSRF token is missing" in response.text
    assert "ldp_session" not in response.headers.get("set-cookie", "")


@pytest.mark.parametrize(
    ("field", "origin"),
    [(None, None), ("forged-forged-forged-forged-forged-0123", None), ("ok", "https://evil.test")],
)
def test_a_state_changing_form_needs_its_csrf_token_and_our_origin(
    ui_client: TestClient, field: str | None, origin: str | None
) -> None:
    csrf = sign_in_client(ui_client)
    before = _models(ui_client)
    data = {} if field is None else {"csrf": csrf if field == "ok" else field}
    headers = {} if origin is None else {"Origin": origin}
    response = ui_client.post(
        "/ui/collections/car-nb/naive-bayes/train", data=data, headers=headers
    )
    assert response.status_code == 403
    assert _models(ui_client) == before


def test_with_its_csrf_token_the_form_works(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    before = _models(ui_client)
    response = ui_client.post(
        "/ui/collections/car-nb/naive-bayes/train",
        data={"csrf": csrf, "alpha": "1", "repair": "clamp"},
        headers={"Origin": str(ui_client.base_url).rstrip("/")},
        follow_redirects=False,
    )
    assert response.status_code == 303
    after = _models(ui_client)
    assert len(after) == len(before) + 1
    (new,) = set(after) - set(before)
    assert response.headers["location"].endswith(f"naive-bayes?model={new}")


def test_signing_out_ends_the_session(ui_client: TestClient) -> None:
    csrf = sign_in_client(ui_client)
    response = ui_client.post("/ui/sign-out", data={"csrf": csrf}, follow_redirects=False)
    assert response.status_code == 303
    assert any(c.startswith('ldp_session=""') for c in response.headers.get_list("set-cookie"))
    assert ui_client.get("/ui", follow_redirects=False).status_code == 303


def test_the_admin_token_signs_in_too(ui_client: TestClient) -> None:
    sign_in_client(ui_client, ADMIN["Authorization"].removeprefix("Bearer "))
    assert "Signed in (admin)" in ui_client.get("/ui").text


def test_pages_carry_the_security_headers(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    response = ui_client.get("/ui/collections/survey/overview")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-frame-options"] == "DENY"


def test_the_api_docs_load_nothing_from_another_site(ui_client: TestClient) -> None:
    page = ui_client.get("/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(assets) == 3 and all(asset.startswith("/ui/static/vendor/") for asset in assets)
    for asset in assets:
        assert ui_client.get(asset).status_code == 200
    assert "http://" not in page.text and "https://" not in page.text
    assert ui_client.get("/redoc").status_code == 404  # it would load from a CDN


def test_the_api_docs_carry_the_security_headers(ui_client: TestClient) -> None:
    page = ui_client.get("/docs")
    assert page.headers["x-frame-options"] == "DENY"
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    # the one inline script (it starts Swagger UI) runs by its hash, nothing else inline
    (inline,) = re.findall(r"<script>(.*?)</script>", page.text, flags=re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}';" in policy
    assert "unsafe-inline" not in policy


def test_the_dashboard_loads_nothing_from_another_site(ui_client: TestClient) -> None:
    sign_in_client(ui_client)
    page = ui_client.get("/ui/collections/survey/frequencies").text
    assets = re.findall(r'(?:src|href)="(/ui/static/[^"]+)"', page)
    assert len(assets) == 4
    for asset in assets:
        assert ui_client.get(asset).status_code == 200
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)
