"""Server-side dashboard sessions (#21 item 6): the cookie carries a random session id,
not the bearer token; signing out revokes it on the server; an ended session or one
whose token was retired opens nothing; a session id is no bearer token. Token rotation:
a role accepts several tokens, and removing one retires it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.sessions import ui_sessions

from ..conftest import ADMIN_TOKEN, ANALYST_TOKEN, TestClient, state_of
from .conftest import csrf_of

NEW_ANALYST_TOKEN = "analyst-token-rotated-in-0123456789"


def _app(url: str, analyst: str) -> TestClient:
    """The app on the database ``url`` (SQLite, or PostgreSQL under
    ``LDPCOLLECT_TEST_ENGINE=postgresql``)."""
    settings = Settings(
        database_url=url,
        admin_token=ADMIN_TOKEN,
        analyst_token=analyst,
    )
    return TestClient(create_app(settings), raise_server_exceptions=True)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with _app(database_url(tmp_path / "ui.db"), ANALYST_TOKEN) as client:
        yield client


def sign_in(client: TestClient, token: str = ANALYST_TOKEN) -> str:
    """Sign in through the form; the session cookie's value."""
    client.cookies.clear()
    form = client.get("/ui/sign-in")
    response = client.post(
        "/ui/sign-in", data={"csrf": csrf_of(form.text), "token": token}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    return str(client.cookies["ldp_session"])


def opens_ui(client: TestClient, session_id: str) -> bool:
    client.cookies.clear()
    client.cookies.set("ldp_session", session_id, path="/ui")
    response = client.get("/ui", follow_redirects=False)
    return response.status_code == 200


def test_the_cookie_is_a_random_id_kept_hashed(client: TestClient) -> None:
    first, second = sign_in(client), sign_in(client)
    assert first != second and ANALYST_TOKEN not in (first, second) and len(first) >= 43
    with state_of(client).engine.connect() as connection:
        stored = {bytes(row.id_hash) for row in connection.execute(select(ui_sessions))}
    assert stored == {hashlib.sha256(s.encode()).digest() for s in (first, second)}
    assert opens_ui(client, first) and opens_ui(client, second)


def test_signing_out_revokes_the_session_on_the_server(client: TestClient) -> None:
    session_id = sign_in(client)
    csrf = csrf_of(client.get("/ui").text)
    response = client.post("/ui/sign-out", data={"csrf": csrf}, follow_redirects=False)
    assert response.status_code == 303
    # the old cookie, sent again as a stolen copy would be, no longer opens the dashboard
    assert not opens_ui(client, session_id)
    with state_of(client).engine.connect() as connection:
        assert connection.execute(select(ui_sessions)).all() == []


def test_the_bearer_token_is_no_cookie_and_the_cookie_no_bearer_token(
    client: TestClient,
) -> None:
    session_id = sign_in(client)
    assert not opens_ui(client, ANALYST_TOKEN)
    client.cookies.clear()
    response = client.get("/v1/collections", headers={"Authorization": f"Bearer {session_id}"})
    assert response.status_code == 401


def test_an_ended_session_is_refused(client: TestClient) -> None:
    session_id = sign_in(client)
    with state_of(client).engine.begin() as connection:
        connection.execute(
            update(ui_sessions).values(expires_unix=ui_sessions.c.expires_unix - 8 * 3600)
        )
    assert not opens_ui(client, session_id)


def test_two_tokens_of_a_role_both_work_and_removing_one_retires_it(tmp_path: Path) -> None:
    both = f"{ANALYST_TOKEN}, {NEW_ANALYST_TOKEN}"
    url = database_url(tmp_path / "ui.db")
    with _app(url, both) as client:
        for token in (ANALYST_TOKEN, NEW_ANALYST_TOKEN):
            response = client.get("/v1/collections", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200, token
        old_session = sign_in(client, ANALYST_TOKEN)
        new_session = sign_in(client, NEW_ANALYST_TOKEN)
        assert opens_ui(client, old_session) and opens_ui(client, new_session)
    # the same database, restarted with the old token removed
    with _app(url, NEW_ANALYST_TOKEN) as client:
        old = client.get("/v1/collections", headers={"Authorization": f"Bearer {ANALYST_TOKEN}"})
        new = client.get(
            "/v1/collections", headers={"Authorization": f"Bearer {NEW_ANALYST_TOKEN}"}
        )
        assert old.status_code == 401 and new.status_code == 200
        # the retired token's session ends with it; the other one's goes on
        assert not opens_ui(client, old_session) and opens_ui(client, new_session)


def test_digests_rotate_too_and_no_token_may_serve_two_roles() -> None:
    digests = ",".join(
        hashlib.sha256(t.encode()).hexdigest() for t in (ANALYST_TOKEN, NEW_ANALYST_TOKEN)
    )
    tokens = Settings(analyst_token_sha256=digests).token_digests()
    assert tokens.role_of(ANALYST_TOKEN) == tokens.role_of(NEW_ANALYST_TOKEN) == "analyst"
    assert tokens.role_of(ADMIN_TOKEN) is None
    with pytest.raises(ValueError, match="same token"):
        Settings(admin_token=f"{ADMIN_TOKEN},{NEW_ANALYST_TOKEN}", analyst_token_sha256=digests)
    warnings = Settings(analyst_token=f"{ANALYST_TOKEN},short").weak_token_warnings()
    assert warnings == [warnings[0]] and "is only 5 characters long" in warnings[0]
