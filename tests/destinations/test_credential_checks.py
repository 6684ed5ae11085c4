"""Ad-platform credentials are printable ASCII (CONTRACT §12, added 2026-11-29): a CR,
LF, NUL, tab, lone surrogate or non-ASCII character answers 400 `invalid_field` at
creation and on PATCH and stores nothing; one stored before (no request can carry it)
puts its destination in `needs_attention` instead of failing every retry."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from partnerlink.destinations.models import Destination
from partnerlink.destinations.service import seal_credentials
from tests.destinations.sync_helpers import (
    Destinations,
    Syncing,
    google_conversions,
    meta_audience,
)
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console
from tests.web.pages import forms

UNPRINTABLE = [
    "EAAB\r\nX-Injected: 1",
    "EAAB\nnext",
    "EAAB\x00nul",
    "EAAB\ttab",
    "EAAB\x7fdel",
    "EAAB\ud800lone",
    "EAABtökén",
    "EAAB\u2028",
    "EAAB-token\n",
]


def _post(api: Destinations, body: dict[str, Any], method: str = "POST", path: str = "") -> Any:
    # Sent as ASCII JSON (\uXXXX escapes): a lone surrogate has no UTF-8 form.
    return api.client.request(
        method,
        api.base + path,
        content=json.dumps(body),
        headers={**api.headers, "Content-Type": "application/json"},
    )


def _count(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Destination))
    session.rollback()  # the SQLite test database has one connection: give it back
    return int(count or 0)


def _refused(response: Any, field: str) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["code"] == "invalid_field" and problem["success"] is False
    assert [error["field"] for error in problem["errors"]] == [field]
    assert "EAAB" not in response.text and "printable ASCII" in problem["detail"]


@pytest.mark.parametrize("token", UNPRINTABLE)
def test_an_unprintable_meta_token_is_refused_at_creation(
    api: Destinations, session: Session, token: str
) -> None:
    body = {**meta_audience(), "credentials": {"accessToken": token}}
    _refused(_post(api, body), "credentials.accessToken")
    assert _count(session) == 0


@pytest.mark.parametrize("field", ["clientId", "clientSecret", "refreshToken"])
def test_an_unprintable_google_credential_is_refused_at_creation(
    api: Destinations, session: Session, field: str
) -> None:
    body = google_conversions()
    body["credentials"][field] = "1//0g-\r\nrefresh"
    _refused(_post(api, body), f"credentials.{field}")
    assert _count(session) == 0


@pytest.mark.parametrize("token", UNPRINTABLE[:6])
def test_an_unprintable_token_is_refused_on_patch_and_nothing_changes(
    api: Destinations, session: Session, token: str
) -> None:
    created = api.create(meta_audience())
    before = session.execute(text("SELECT credentials_sealed FROM destinations")).scalar_one()
    session.rollback()
    answer = _post(
        api, {"credentials": {"accessToken": token}}, method="PATCH", path=f"/{created['id']}"
    )
    _refused(answer, "credentials.accessToken")
    after = session.execute(text("SELECT credentials_sealed FROM destinations")).scalar_one()
    session.rollback()
    assert after == before
    assert api.get(created["id"])["status"] == "pending"


def test_the_console_refuses_an_unprintable_token_too(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    sign_in_console(client)
    page = f"/merchant/profiles/{shop.profile.id}/ad-platforms"
    meta_form = next(f for f in forms(client.get(page).text) if f.fields.get("platform") == "meta")
    fields = {
        **meta_form.fields,
        "kind": "audience",
        "segment": "all",
        "audienceId": "23851234567890123",
        "accessToken": "EAAB\r\nX-Injected: 1",
    }
    refused = client.post(page, data=fields)
    assert refused.status_code == 400
    assert "credentials.accessToken" in refused.text and "printable ASCII" in refused.text
    assert "X-Injected" not in refused.text
    assert _count(session) == 0


def test_unprintable_credentials_stored_earlier_need_attention_without_a_call(
    syncing: Syncing, session: Session
) -> None:
    created = syncing.api.create(meta_audience())
    sealed = seal_credentials(
        syncing.settings.signing_key, created["id"], {"accessToken": "EAAB\r\nbroken"}
    )
    session.execute(
        update(Destination).where(Destination.id == created["id"]).values(credentials_sealed=sealed)
    )
    session.commit()
    syncing.run()
    state = syncing.api.get(created["id"])
    assert state["status"] == "needs_attention"
    assert state["lastError"]["code"] == "credentials_refused"
    assert "line break" in state["lastError"]["message"]
    assert syncing.meta.requests == []
