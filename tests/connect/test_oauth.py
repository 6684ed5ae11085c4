"""OAuth 2.0 with PKCE beside SPEC's consent flow (CONTRACT §13), driven by Authlib's client.

The partner side is Authlib's stock httpx client; the merchant's side is the
real consent pages, read as a browser reads them. Both reach the application
through the same in-process transport.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest
from authlib.integrations.httpx_client import OAuth2Client
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.connect.models import OAuthAuthorization
from partnerlink.connect.oauth_api import metadata
from partnerlink.connect.oauth_web import AUTHORIZATIONS_PER_ADDRESS
from partnerlink.settings import Settings
from partnerlink.tokens.models import Connection
from tests.connect.conftest import fetch_all
from tests.connect.oauth_steps import (
    REDIRECT_URI,
    STORE_PROFILE,
    OAuthWorld,
    approve,
    authorized,
    build_oauth_world,
    challenge_of,
    redirected_params,
    reset_budgets,
    sign_in,
    start,
    stock_client,
)
from tests.factories import PartnerWithSecret, create_partner
from tests.web.pages import form

BASE = "http://testserver"
AUTHORIZE = f"{BASE}/connect/oauth/authorize"
TOKEN = f"{BASE}/v1/oauth/token"
INTROSPECT = f"{BASE}/v1/oauth/introspect"


@pytest.fixture(autouse=True)
def fresh_budgets(settings: Settings) -> Iterator[None]:
    reset_budgets(settings)
    yield
    reset_budgets(settings)


@pytest.fixture
def world(oauth_world: OAuthWorld) -> OAuthWorld:
    return oauth_world


@pytest.fixture
def browser(client: TestClient) -> TestClient:
    client.follow_redirects = False
    return client


def _token_status(client: TestClient, access_token: str) -> int:
    response = client.get(
        "/v1/auth/token/status", headers={"Authorization": f"Bearer {access_token}"}
    )
    return response.status_code


def _error(response: object, status: int, error: str) -> dict[str, str]:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body: dict[str, str] = response.json()  # type: ignore[attr-defined]
    assert body["error"] == error and body["code"] == error
    assert response.headers["cache-control"] == "no-store"  # type: ignore[attr-defined]
    return body


def test_metadata_names_the_endpoints_and_is_outside_the_403_rule(client: TestClient) -> None:
    response = client.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    body = response.json()
    assert body["issuer"] == BASE
    assert body["authorization_endpoint"] == f"{BASE}/connect/oauth/authorize"
    assert body["token_endpoint"] == TOKEN
    assert body["introspection_endpoint"] == INTROSPECT
    assert body["revocation_endpoint"] == f"{BASE}/v1/oauth/revoke"
    assert body["scopes_supported"] == ["store"]
    assert body["response_types_supported"] == ["code"]
    assert body["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert body["token_endpoint_auth_methods_supported"] == [
        "client_secret_basic",
        "client_secret_post",
    ]
    assert client.get("/.well-known/other").status_code == 403  # §1 still holds elsewhere


def test_metadata_of_an_https_deployment_passes_rfc_8414_validation() -> None:
    settings = Settings(public_url="https://api.example.com", connect_url="https://c.example.com")
    document = metadata(settings)
    AuthorizationServerMetadata(dict(document)).validate()
    assert document["authorization_endpoint"] == "https://c.example.com/oauth/authorize"


def test_stock_client_gets_tokens_that_work_on_v1(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld, session: Session
) -> None:
    location, started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
    token = oauth.fetch_token(
        TOKEN, authorization_response=location, code_verifier=started.code_verifier
    )
    assert token["token_type"] == "Bearer"
    assert token["expires_in"] == 31536000
    assert token["access_token"].startswith("plk_at_")
    assert token["refresh_token"].startswith("plk_rt_")
    stored = browser.put(
        "/v1/stores",
        json=STORE_PROFILE,
        headers={"Authorization": f"Bearer {token['access_token']}"},
    )
    assert stored.status_code == 200, stored.text
    status = browser.get(
        "/v1/auth/token/status", headers={"Authorization": f"Bearer {token['access_token']}"}
    ).json()
    assert status["storeId"] == token["storeId"] and status["method"] == "consent"
    assert status["posType"] == "acme-pos"
    connections = fetch_all(session, select(Connection))
    assert [(c.store_id, c.method) for c in connections] == [(token["storeId"], "consent")]


def test_refresh_with_the_stock_client_mints_a_new_access_token(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld
) -> None:
    location, started = authorized(browser, oauth, AUTHORIZE, f"store:{world.store.id}")
    first = oauth.fetch_token(
        TOKEN, authorization_response=location, code_verifier=started.code_verifier
    )
    assert first["storeId"] == world.store.id
    refreshed = oauth.refresh_token(TOKEN, refresh_token=first["refresh_token"])
    assert refreshed["access_token"] != first["access_token"]
    assert refreshed["refresh_token"] == first["refresh_token"]
    assert refreshed["storeId"] == world.store.id
    assert _token_status(browser, refreshed["access_token"]) == 200
    assert _token_status(browser, first["access_token"]) == 200  # SPEC: older ones stay valid


def test_client_secret_post_is_accepted(
    browser: TestClient, client: TestClient, world: OAuthWorld
) -> None:
    with stock_client(
        BASE, world.partner, transport=client._transport, auth_method="client_secret_post"
    ) as oauth:
        location, started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
        token = oauth.fetch_token(
            TOKEN, authorization_response=location, code_verifier=started.code_verifier
        )
    assert _token_status(browser, token["access_token"]) == 200


def test_introspection_describes_own_tokens_only(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld, session: Session
) -> None:
    location, started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
    token = oauth.fetch_token(
        TOKEN, authorization_response=location, code_verifier=started.code_verifier
    )
    answer = oauth.introspect_token(INTROSPECT, token=token["access_token"])
    body = answer.json()
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    assert body["active"] is True and body["client_id"] == world.partner.client_id
    assert body["token_type"] == "Bearer" and body["storeId"] == token["storeId"]
    assert body["exp"] > time.time() + 31536000 - 60
    refresh = oauth.introspect_token(INTROSPECT, token=token["refresh_token"]).json()
    assert refresh["active"] is True and "exp" not in refresh
    # RFC 7662: token_type is an RFC 6749 §7.1 type; a refresh token has none, so none is said.
    assert "token_type" not in refresh and refresh["storeId"] == token["storeId"]
    assert oauth.introspect_token(INTROSPECT, token="plk_at_nothing").json() == {"active": False}
    other = build_oauth_world_other(session)
    with stock_client(BASE, other, transport=browser._transport) as intruder:
        seen = intruder.introspect_token(INTROSPECT, token=token["access_token"])
    assert seen.status_code == 200 and seen.json() == {"active": False}


def build_oauth_world_other(session: Session) -> PartnerWithSecret:
    return create_partner(session, name="Other POS", pos_type="other-pos")


def test_introspection_without_client_authentication_answers_401(
    browser: TestClient, world: OAuthWorld
) -> None:
    bare = browser.post(INTROSPECT, data={"token": "plk_at_x"})
    assert _error(bare, 401, "invalid_client")
    assert bare.headers["www-authenticate"].startswith("Basic ")
    wrong = browser.post(
        INTROSPECT, data={"token": "plk_at_x"}, auth=(world.partner.client_id, "x")
    )
    assert _error(wrong, 401, "invalid_client")


def test_wrong_code_verifier_is_invalid_grant(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld
) -> None:
    location, _started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
    code = redirected_params_of(location)["code"]
    answer = oauth.post(
        TOKEN,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": "w" * 43,
        },
        auth=(world.partner.client_id, world.partner.client_secret),
    )
    _error(answer, 400, "invalid_grant")


def redirected_params_of(location: str) -> dict[str, str]:
    class _Located:
        status_code = 302
        headers = {"location": location}
        text = location

    return redirected_params(_Located())  # type: ignore[arg-type]


def test_a_reused_code_is_refused_and_revokes_what_it_issued(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld
) -> None:
    location, started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
    first = oauth.fetch_token(
        TOKEN, authorization_response=location, code_verifier=started.code_verifier
    )
    assert _token_status(browser, first["access_token"]) == 200
    again = browser.post(
        TOKEN,
        data={
            "grant_type": "authorization_code",
            "code": redirected_params_of(location)["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": started.code_verifier,
        },
        auth=(world.partner.client_id, world.partner.client_secret),
    )
    _error(again, 400, "invalid_grant")
    assert _token_status(browser, first["access_token"]) == 403
    refused = browser.post(
        TOKEN,
        data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"]},
        auth=(world.partner.client_id, world.partner.client_secret),
    )
    _error(refused, 400, "invalid_grant")


def test_an_expired_code_is_invalid_grant(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld, settings: Settings
) -> None:
    settings.oauth_code_ttl_seconds = 1  # the app reads its settings object per request
    location, started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
    time.sleep(1.2)
    answer = browser.post(
        TOKEN,
        data={
            "grant_type": "authorization_code",
            "code": redirected_params_of(location)["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": started.code_verifier,
            "client_id": world.partner.client_id,
            "client_secret": world.partner.client_secret,
        },
    )
    _error(answer, 400, "invalid_grant")


@pytest.mark.parametrize(
    "auth",
    [None, ("plk_ci_unknown", "secret"), "wrong secret"],
    ids=["none", "unknown client", "wrong secret"],
)
def test_bad_client_authentication_is_invalid_client_401(
    browser: TestClient, world: OAuthWorld, auth: object
) -> None:
    if auth == "wrong secret":
        auth = (world.partner.client_id, "plk_cs_wrong")
    answer = browser.post(
        TOKEN,
        data={"grant_type": "refresh_token", "refresh_token": "plk_rt_x"},
        auth=auth,
    )
    _error(answer, 401, "invalid_client")
    assert answer.headers["www-authenticate"].startswith("Basic ")


def test_a_malformed_basic_header_or_body_never_fails_the_server(
    browser: TestClient, world: OAuthWorld
) -> None:
    garbage = base64.b64encode(b"\xff\xfe:\xff").decode()
    answer = browser.post(
        TOKEN,
        data={"grant_type": "refresh_token", "refresh_token": "x"},
        headers={"Authorization": f"Basic {garbage}"},
    )
    _error(answer, 401, "invalid_client")
    raw = browser.post(
        TOKEN, content=b"\xff\xfe", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    _error(raw, 400, "invalid_request")
    odd = browser.post(
        TOKEN,
        data={"grant_type": 'a"\\\x01', "client_id": world.partner.client_id},
        auth=(world.partner.client_id, world.partner.client_secret),
    )
    assert odd.status_code == 400 and odd.json()["code"] in (
        "invalid_request",
        "unsupported_grant_type",
    )


def test_unregistered_redirect_uri_shows_a_page_and_never_redirects(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld, session: Session
) -> None:
    started = start(oauth, AUTHORIZE)
    evil = started.url.replace("pos.example.com", "evil.example.com")
    page = browser.get(evil)
    assert page.status_code == 400 and "location" not in page.headers
    assert page.headers["content-type"].startswith("text/html")
    unknown = browser.get(started.url.replace(world.partner.client_id, "plk_ci_nobody"))
    assert unknown.status_code == 400 and "location" not in unknown.headers
    assert fetch_all(session, select(OAuthAuthorization)) == []


@pytest.mark.parametrize("pkce", ["plain", "missing"])
def test_plain_or_missing_pkce_goes_back_as_invalid_request(
    browser: TestClient, world: OAuthWorld, pkce: str, session: Session
) -> None:
    params = {
        "response_type": "code",
        "client_id": world.partner.client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "s-123",
    }
    if pkce == "plain":
        params |= {"code_challenge": "p" * 43, "code_challenge_method": "plain"}
    answer = browser.get("/connect/oauth/authorize", params=params)
    back = redirected_params(answer)
    assert back["error"] == "invalid_request" and back["state"] == "s-123"
    assert fetch_all(session, select(OAuthAuthorization)) == []


def test_declining_goes_back_with_access_denied(browser: TestClient, oauth: OAuth2Client) -> None:
    started = start(oauth, AUTHORIZE)
    page = browser.get(started.url)
    decline = form(page.text, "/connect/decline")
    back = redirected_params(browser.post("/connect/decline", data=decline.fields))
    assert back["error"] == "access_denied" and back["state"] == started.state
    assert "code" not in back


def test_oauth_consents_cannot_be_exchanged_through_specs_endpoint(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld
) -> None:
    started = start(oauth, AUTHORIZE)
    integration_token = form(browser.get(started.url).text, "/connect/signin").fields[
        "integration_token"
    ]
    approve(browser, started.url, f"profile:{world.profile.id}")
    answer = browser.get(
        "/v1/auth/integration/token",
        params={
            "client_id": world.partner.client_id,
            "client_secret": world.partner.client_secret,
            "integration_token": integration_token,
        },
    )
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_integration_token"


def test_a_second_oauth_connection_to_the_store_revokes_the_first(
    browser: TestClient, oauth: OAuth2Client, world: OAuthWorld
) -> None:
    tokens = []
    for _ in range(2):
        location, started = authorized(browser, oauth, AUTHORIZE, f"store:{world.store.id}")
        tokens.append(
            oauth.fetch_token(
                TOKEN, authorization_response=location, code_verifier=started.code_verifier
            )
        )
    assert _token_status(browser, tokens[0]["access_token"]) == 403
    assert _token_status(browser, tokens[1]["access_token"]) == 200


def test_a_sandbox_partner_is_offered_no_existing_store(
    browser: TestClient, client: TestClient, session: Session
) -> None:
    world = build_oauth_world(session, sandbox=True, pos_type="sandbox-pos")
    with stock_client(BASE, world.partner, transport=client._transport) as oauth:
        started = start(oauth, AUTHORIZE)
        choose = sign_in(browser, started.url)
        assert f"store:{world.store.id}" not in choose.text
        refused = approve(browser, started.url, f"store:{world.store.id}")
        assert refused.status_code == 400 and "location" not in refused.headers
        location, started = authorized(browser, oauth, AUTHORIZE, f"profile:{world.profile.id}")
        token = oauth.fetch_token(
            TOKEN, authorization_response=location, code_verifier=started.code_verifier
        )
    assert token["access_token"].startswith("plk_at_test_")
    assert token["storeId"] != world.store.id


def test_the_pkce_challenge_is_stored_as_sent(
    browser: TestClient, oauth: OAuth2Client, session: Session
) -> None:
    started = start(oauth, AUTHORIZE)
    page = browser.get(started.url)
    # The last form is answered with a redirect to the partner: form-action must allow it.
    assert "form-action 'self' https://pos.example.com;" in page.headers["content-security-policy"]
    (row,) = fetch_all(session, select(OAuthAuthorization))
    assert row.code_challenge == challenge_of(started.code_verifier)
    assert row.code_hash is None and row.state == started.state


def test_one_address_opens_only_so_many_authorizations(
    browser: TestClient, oauth: OAuth2Client, session: Session
) -> None:
    allowed = int(AUTHORIZATIONS_PER_ADDRESS.split("/")[0])
    started = start(oauth, AUTHORIZE)
    for _ in range(allowed):
        assert browser.get(started.url).status_code == 200
    refused = browser.get(started.url)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert "location" not in refused.headers
    assert len(fetch_all(session, select(OAuthAuthorization))) == allowed


@pytest.mark.parametrize(
    "odd",
    [
        {"redirect_uri": 'https://pos.example.com/"\\é'},
        {"client_id": "plk_ci_\x00"},
        {"client_id": "x" * 5000},
        {"response_type": 'tok"en\\'},
        {"state": "é" * 2000},
        {"code_challenge": "\x00" * 50},
    ],
    ids=["quoted redirect", "nul client", "long client", "odd response type", "long state", "nul"],
)
def test_odd_authorization_requests_never_fail_the_server(
    browser: TestClient, world: OAuthWorld, odd: dict[str, str], session: Session
) -> None:
    params = {
        "response_type": "code",
        "client_id": world.partner.client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "s",
        "code_challenge": challenge_of("v" * 43),
        "code_challenge_method": "S256",
    } | odd
    answer = browser.get("/connect/oauth/authorize", params=params)
    assert answer.status_code in (302, 400), answer.text
    if answer.status_code == 302:
        assert redirected_params(answer)["error"] in (
            "invalid_request",
            "unsupported_response_type",
        )
    assert fetch_all(session, select(OAuthAuthorization)) == []


def test_without_redirect_uri_the_only_registered_one_is_used(
    browser: TestClient, world: OAuthWorld
) -> None:
    verifier = "q" * 43
    params = {
        "response_type": "code",
        "client_id": world.partner.client_id,
        "state": "s-1",
        "code_challenge": challenge_of(verifier),
        "code_challenge_method": "S256",
    }
    url = str(browser.build_request("GET", AUTHORIZE, params=params).url)
    back = redirected_params(approve(browser, url, f"profile:{world.profile.id}"))
    token = browser.post(
        TOKEN,
        data={"grant_type": "authorization_code", "code": back["code"], "code_verifier": verifier},
        auth=(world.partner.client_id, world.partner.client_secret),
    )
    assert token.status_code == 200, token.text
    assert token.headers["cache-control"] == "no-store"
