"""With an https public URL every answer carries HSTS (CONTRACT §12); over http none does."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.settings import Settings
from tests.factories import create_connected_store

HSTS = "max-age=31536000"
# Pages, API answers and errors of every part the one process serves.
PATHS = (
    ("GET", "/v1/stores"),  # 403: no token
    ("GET", "/v1/nope"),  # 404 under /v1
    ("GET", "/stores"),  # 403: a partner path without /v1
    ("GET", "/merchant/signin"),  # the console
    ("GET", "/merchant/api/profiles"),  # the merchant API, signed out
    ("GET", "/connect/?client_id=x&integration_token=y"),  # the consent screen's error page
    ("GET", "/receipts/inv/ORDER-1?k=nope"),  # the receipt page, 404
    ("GET", "/healthz"),
    ("GET", "/static/app.css"),
    ("GET", "/docs"),
    ("POST", "/v1/orders"),  # 403 before any body is read
)


def answers(client: TestClient, auth: dict[str, str]) -> list[tuple[str, int, str | None]]:
    seen = [
        (path, a.status_code, a.headers.get("strict-transport-security"))
        for method, path in PATHS
        for a in [client.request(method, path)]
    ]
    ok = client.get("/v1/stores", headers=auth)
    assert ok.status_code == 200
    seen.append(("/v1/stores (token)", 200, ok.headers.get("strict-transport-security")))
    return seen


def test_an_https_public_url_sends_hsts_on_every_answer(
    settings: Settings, session: Session
) -> None:
    shop = create_connected_store(session)
    settings.public_url = "https://partnerlink.example.com"
    with TestClient(create_app(settings), base_url=settings.public_url) as client:
        seen = answers(client, shop.auth)
    assert {status for _, status, _ in seen} >= {200, 403, 404}
    assert [(path, hsts) for path, _, hsts in seen if hsts != HSTS] == []


def test_an_http_public_url_sends_no_hsts(client: TestClient, session: Session) -> None:
    shop = create_connected_store(session)
    seen = answers(client, shop.auth)
    assert [path for path, _, hsts in seen if hsts is not None] == []
