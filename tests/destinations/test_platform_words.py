"""A platform's own error text reaches `lastError` only when it is one of that platform's
known, credential-free messages (CONTRACT §12, added 2026-11-29): a credential echoed
lower-cased or cut short shows nowhere, not on the page, in the API or in the CLI."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.destinations.platform import holds_credential
from tests.audiences.helpers import add_customer
from tests.conftest import LiveServer
from tests.destinations import fake_google, fake_meta
from tests.destinations.fake_meta import meta_error
from tests.destinations.sync_helpers import (
    Destinations,
    Syncing,
    google_audience,
    google_credentials,
    meta_audience,
)
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console

META_ECHOES = (
    fake_meta.ACCESS_TOKEN.lower(),
    fake_meta.ACCESS_TOKEN[:20],
    fake_meta.ACCESS_TOKEN[6:].upper(),
)
GOOGLE_ECHOES = (
    fake_google.REFRESH_TOKEN.upper(),
    fake_google.REFRESH_TOKEN[4:],
    fake_google.CLIENT_SECRET[:14].lower(),
)


def _everywhere(
    client: TestClient, live_env: dict[str, str], shop: ConnectedStoreFixture, api: Destinations
) -> str:
    """What the API, the Ad platforms page and both `destinations list` outputs show."""
    answer = client.get(api.base, headers=api.headers).text
    sign_in_console(client)
    page = client.get(f"/merchant/profiles/{shop.profile.id}/ad-platforms").text
    cli = LiveServer(live_env).cli
    listed = cli("destinations", "list")
    as_json = cli("destinations", "list", "--json")
    assert listed.returncode == 0 and as_json.returncode == 0, listed.stderr + as_json.stderr
    return "\n".join((answer, page, listed.stdout, listed.stderr, as_json.stdout))


def test_a_meta_message_echoing_the_token_in_another_spelling_is_left_out(
    syncing: Syncing, client: TestClient, shop: ConnectedStoreFixture, live_env: dict[str, str]
) -> None:
    meta, api = syncing.meta, syncing.api
    created = api.create(meta_audience())
    status, body = meta_error(
        401, 190, f"Malformed access token {META_ECHOES[0]} (starts {META_ECHOES[1]})", 463
    )
    body["error"]["error_user_msg"] = f"Token {META_ECHOES[2]} is not valid"
    meta.answer_next(status, body)
    syncing.run()

    state = api.get(created["id"])
    assert state["status"] == "needs_attention"
    error = state["lastError"]
    assert error["code"] == "credentials_refused"
    assert error["message"].startswith("Meta answered HTTP 401, error 190/463. ")
    assert "Malformed" not in error["message"] and "new one" in error["message"]
    shown = _everywhere(client, live_env, shop, api).lower()
    assert created["id"] in shown
    for echo in META_ECHOES:
        assert echo.lower() not in shown


def test_a_known_meta_message_is_kept(syncing: Syncing) -> None:
    created = syncing.api.create(meta_audience())
    known = (
        "Error validating access token: The session has been invalidated because the user "
        "changed their password or Facebook has changed the session for security reasons."
    )
    syncing.meta.answer_next(*meta_error(401, 190, known, 460))
    syncing.run()
    assert known in syncing.api.get(created["id"])["lastError"]["message"]


def test_google_messages_echoing_credentials_are_left_out(
    syncing: Syncing,
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    live_env: dict[str, str],
) -> None:
    google, api = syncing.google, syncing.api
    forbidden = api.create(google_audience())
    syncing.run()  # its access token is kept: the next call is an ingest
    add_customer(session, shop.store, email="another@example.com")
    google.answer_next(
        403,
        {
            "error": {
                "code": 403,
                "status": "PERMISSION_DENIED",
                "message": f"Caller {GOOGLE_ECHOES[2]} may not use {GOOGLE_ECHOES[1]}",
            }
        },
    )
    api.sync(forbidden["id"])
    syncing.run()
    error = api.get(forbidden["id"])["lastError"]
    assert error["message"].startswith("Google answered HTTP 403 PERMISSION_DENIED. ")
    assert "Caller" not in error["message"]

    other = "1//0g-another-refresh-token-0123"
    refused = api.create({**google_audience(), "credentials": google_credentials(other)})
    google.answer_next(  # to the token request of these new credentials
        400,
        {
            "error": "invalid_grant",
            "error_description": f"Bad refresh token {other.upper()} ({other[4:]}), client "
            f"{GOOGLE_ECHOES[2]}",
        },
    )
    syncing.run()
    error = api.get(refused["id"])["lastError"]
    assert error["code"] == "credentials_refused"
    assert error["message"].startswith("Google's sign-in service answered HTTP 400 invalid_grant. ")

    shown = _everywhere(client, live_env, shop, api).lower()
    assert refused["id"] in shown and forbidden["id"] in shown
    for echo in (*GOOGLE_ECHOES, other, other[4:]):
        assert echo.lower() not in shown


def test_a_known_google_description_is_kept(syncing: Syncing) -> None:
    created = syncing.api.create(google_audience())
    syncing.google.revoke_refresh_token()  # invalid_grant, "Token has been expired or revoked."
    syncing.run()
    message = syncing.api.get(created["id"])["lastError"]["message"]
    assert message.startswith(
        "Google's sign-in service answered HTTP 400 invalid_grant: "
        "Token has been expired or revoked."
    )


def test_a_piece_of_a_credential_in_any_case_is_found() -> None:
    token = fake_meta.ACCESS_TOKEN
    assert holds_credential(f"... {token[10:18].upper()} ...", [token])
    assert holds_credential(token.lower(), ["other", token])
    assert not holds_credential("Meta answered HTTP 401, error 190/463.", [token])
