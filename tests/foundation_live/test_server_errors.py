"""An answer of 500 leaves the client's connection usable or closes it cleanly (CONTRACT §12).

No input of ours answers 500 on purpose, so the test makes a real fault: the table a
route reads is renamed away under the live server (and put back after), which fails
the route's statement on either database.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from partnerlink.settings import Settings
from partnerlink.web.security import session_cookie_name
from tests.conftest import LiveServer

TABLE = "pairing_codes"  # read by POST /v1/auth/integration/pair, which takes no credential


@contextmanager
def renamed_away(database_url: str, table: str) -> Iterator[None]:
    engine = create_engine(database_url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} RENAME TO {table}_away"))
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {table}_away RENAME TO {table}"))
        engine.dispose()


@pytest.fixture
def missing_table(live_server: LiveServer) -> Iterator[LiveServer]:
    with renamed_away(live_server.env["PARTNERLINK_DATABASE_URL"], TABLE):
        yield live_server


def test_after_a_500_the_next_request_on_the_same_client_is_answered(
    missing_table: LiveServer,
) -> None:
    client = http.client.HTTPConnection("127.0.0.1", missing_table.port, timeout=60)
    try:
        client.request(
            "POST",
            "/v1/auth/integration/pair",
            body=json.dumps({"code": 123456}),
            headers={"Content-Type": "application/json"},
        )
        failed = client.getresponse()
        body = json.loads(failed.read())
        first_socket = client.sock
        assert failed.status == 500
        assert failed.getheader("Content-Type") == "application/problem+json"
        assert body["code"] == "internal_error" and body["success"] is False
        # Either the server said it closes (the client then opens a new connection) or the
        # connection stays open; never a reset on the next request.
        said_close = (failed.getheader("Connection") or "").lower() == "close"
        assert said_close or first_socket is not None

        client.request("GET", "/healthz")
        answered = client.getresponse()
        answered.read()
        assert answered.status == 200
        assert said_close or client.sock is first_socket
    finally:
        client.close()
    assert "Traceback" not in json.dumps(body)


def test_a_500_of_the_merchant_api_and_of_a_console_page_says_it_closes(
    app: FastAPI, settings: Settings
) -> None:
    """The console is an application of its own with its own error page: it says so too."""
    # Every signed-in request reads merchant_sessions.
    with (
        TestClient(app, raise_server_exceptions=False) as client,
        renamed_away(settings.database_url, "merchant_sessions"),
    ):
        api = client.get("/merchant/api/profiles", headers={"Authorization": "Bearer plk_ms_x"})
        client.cookies.set(session_cookie_name(settings), "plk_ms_x")
        page = client.get("/merchant/", follow_redirects=False)
    assert api.status_code == 500 and api.json()["code"] == "internal_error"
    assert api.headers["connection"] == "close"
    assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
    assert page.headers["connection"] == "close"
