"""RFC 7009 revocation at `POST /v1/oauth/revoke` (CONTRACT §13), driven by Authlib's client.

Revoking an access or refresh token revokes its connection (our tokens are revoked by
connection); an unknown, already revoked or another partner's token answers 200 and
changes nothing; client authentication is the token endpoint's, errors RFC 6749's.
"""

from __future__ import annotations

from typing import Any

import pytest
from authlib.integrations.httpx_client import OAuth2Client
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.tokens.models import Connection
from partnerlink.webhooks.models import WebhookEvent
from tests.connect.conftest import fetch_all, fetch_one
from tests.connect.oauth_steps import (
    OAuthWorld,
    authorized,
    stock_client,
)
from tests.factories import create_partner

BASE = "http://testserver"
REVOKE = f"{BASE}/v1/oauth/revoke"
TOKEN = f"{BASE}/v1/oauth/token"


def _tokens(client: TestClient, oauth: OAuth2Client, oauth_world: OAuthWorld) -> dict[str, Any]:
    location, started = authorized(
        client, oauth, f"{BASE}/connect/oauth/authorize", f"profile:{oauth_world.profile.id}"
    )
    token: dict[str, Any] = oauth.fetch_token(
        TOKEN, authorization_response=location, code_verifier=started.code_verifier
    )
    return token


def _works(client: TestClient, access_token: str) -> bool:
    answer = client.get("/v1/stores", headers={"Authorization": f"Bearer {access_token}"})
    return answer.status_code == 200


def _refreshes(client: TestClient, oauth_world: OAuthWorld, refresh_token: str) -> int:
    answer = client.post(
        TOKEN,
        data={"grant_type": "refresh_token", "refresh_token": refresh_token},
        auth=(oauth_world.partner.client_id, oauth_world.partner.client_secret),
    )
    return answer.status_code


@pytest.mark.parametrize("kind", ["refresh_token", "access_token"])
def test_revoking_either_token_revokes_the_connection(
    client: TestClient, oauth: OAuth2Client, oauth_world: OAuthWorld, session: Session, kind: str
) -> None:
    token = _tokens(client, oauth, oauth_world)
    assert _works(client, token["access_token"])
    answer = oauth.revoke_token(REVOKE, token=token[kind], token_type_hint=kind)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {} and answer.headers["cache-control"] == "no-store"
    assert not _works(client, token["access_token"])
    assert _refreshes(client, oauth_world, token["refresh_token"]) == 400  # invalid_grant
    connection = fetch_one(session, select(Connection))
    assert connection.revoked_at is not None
    events = fetch_all(session, select(WebhookEvent))
    assert all(event.event_type == "connection.revoked" for event in events)


def test_unknown_revoked_or_odd_tokens_answer_200_and_change_nothing(
    client: TestClient, oauth: OAuth2Client, oauth_world: OAuthWorld
) -> None:
    token = _tokens(client, oauth, oauth_world)
    for value in ("plk_rt_nothing", "plk_at_\x00", "x" * 5000):
        assert oauth.revoke_token(REVOKE, token=value).status_code == 200
    assert _works(client, token["access_token"])
    # A hint that names no type we know is ignored (RFC 7009 §2.1 lets us): found anyway.
    odd = oauth.revoke_token(REVOKE, token=token["access_token"], token_type_hint="mac")
    assert odd.status_code == 200
    assert not _works(client, token["access_token"])
    again = oauth.revoke_token(REVOKE, token=token["refresh_token"])
    assert again.status_code == 200 and again.json() == {}


def test_another_partners_token_is_not_revoked(
    client: TestClient, oauth: OAuth2Client, oauth_world: OAuthWorld, session: Session
) -> None:
    token = _tokens(client, oauth, oauth_world)
    other = create_partner(session, name="Other POS", pos_type="other-pos")
    with stock_client(BASE, other, transport=client._transport) as intruder:
        answer = intruder.revoke_token(REVOKE, token=token["refresh_token"])
    assert answer.status_code == 200 and answer.json() == {}
    assert _works(client, token["access_token"])


def test_client_secret_post_revokes_too(
    client: TestClient, oauth_world: OAuthWorld, oauth: OAuth2Client
) -> None:
    token = _tokens(client, oauth, oauth_world)
    answer = client.post(
        REVOKE,
        data={
            "token": token["refresh_token"],
            "client_id": oauth_world.partner.client_id,
            "client_secret": oauth_world.partner.client_secret,
        },
    )
    assert answer.status_code == 200, answer.text
    assert not _works(client, token["access_token"])
    # Credentials in the form name the partner too: the request counts against its quota.
    assert answer.headers["ratelimit"].startswith('"default";r=')


def _error(answer: Any, status: int, error: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["error"] == error and body["code"] == error


def test_refusals_are_rfc_6749_errors(client: TestClient, oauth_world: OAuthWorld) -> None:
    secret = (oauth_world.partner.client_id, oauth_world.partner.client_secret)
    _error(client.post(REVOKE, data={"token": "plk_rt_x"}), 401, "invalid_client")
    wrong = client.post(REVOKE, data={"token": "plk_rt_x"}, auth=(secret[0], "plk_cs_wrong"))
    _error(wrong, 401, "invalid_client")
    assert wrong.headers["www-authenticate"].startswith("Basic ")
    _error(client.post(REVOKE, data={}, auth=secret), 400, "invalid_request")
    _error(client.post(REVOKE, data={"token": ""}, auth=secret), 400, "invalid_request")
    raw = client.post(
        REVOKE, content=b"\xff\xfe", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    _error(raw, 400, "invalid_request")
    # A request that names the partner counts against its quota, as on the token endpoint.
    counted = client.post(REVOKE, data={"token": "plk_rt_x"}, auth=secret)
    assert counted.status_code == 200 and counted.headers["ratelimit"].startswith('"default"')
