"""The SDK against a real `partnerlink serve`: both connection flows, every endpoint,
the refresh-once rule, the OAuth helpers (the merchant's side on the real consent pages),
and the terminal simulator driven through its standard input."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from typing import Any

import httpx
import pytest
from partnerlink_client import (
    AsyncPartnerLinkClient,
    AuthorizationFailed,
    BadRequest,
    Forbidden,
    NotFound,
    PartnerLinkClient,
    Tokens,
    Unauthorized,
)
from tests.connect.oauth_steps import REDIRECT_URI, OAuthWorld, approve, build_oauth_world
from tests.web.pages import form

from conftest import Server

STORE = {
    "storeName": "SDK Bistro",
    "storeAddress": "1 Main Street",
    "storeCity": "Springfield",
    "storeCountryCode": "US",
}


def order(order_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "orderId": order_id,
        "orderPrice": "1200",
        "orderCurrency": "USD",
        "createdAt": "2026-11-24T12:00:00Z",
        "orderDetails": {
            "orderStatus": "CLOSED",
            "orderItems": [
                {"itemId": "1", "itemName": "Soup", "itemPrice": "1200", "itemQuantity": 1}
            ],
        },
        **extra,
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_pairing_flow_and_every_data_endpoint(server: Server) -> None:
    pos = unique("sdk-pos")
    partner = server.partner(pos)
    merchant, store_id = server.merchant_store(f"{pos}@example.com", receipts=True)
    code = server.pairing_code(merchant, store_id, pos)
    with PartnerLinkClient(
        server.url, client_id=partner["clientId"], client_secret=partner["clientSecret"]
    ) as pl:
        tokens = pl.pair(code)
        assert tokens.store_id == store_id and tokens.access_token.startswith("plk_at_")
        with pytest.raises(NotFound) as reused:  # a code works once; 404 is never retried
            pl.pair(code)
        assert reused.value.code == "unknown_code"
        assert pl.put_store(STORE)["name"] == "SDK Bistro"
        assert pl.get_store() == {"greenInvoices": True}
        upload_id = pl.upload_customers(
            [{"email": "ada@example.com", "firstName": "Ada"}, {"firstName": "nobody"}]
        )
        deadline = time.monotonic() + 30
        while (status := pl.upload_status(upload_id))["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert (status["status"], status["created"], status["rejected"]) == ("done", 1, 1)
        assert pl.send_order(order("SDK-1", customerPhoneNumber="+14155550123")) == {
            "statusCode": 200
        }
        assert pl.get_order("SDK-1")["orderId"] == "SDK-1"
        results = pl.send_orders([order("SDK-2"), {"orderId": "SDK-3"}])
        assert [r["status"] for r in results] == [200, 400]
        with pytest.raises(BadRequest) as refused:
            pl.send_order({"orderId": "SDK-4"})
        assert refused.value.code and refused.value.errors
        status_now = pl.token_status()
        assert status_now["active"] is True and status_now["method"] == "pairing"
        assert [c["storeId"] for c in pl.connections()] == [store_id]
        pl.revoke()
        with pytest.raises(Forbidden):  # no refresh token in the pairing flow: raised at once
            pl.get_store()


def test_consent_flow_refreshes_once_on_403(server: Server) -> None:
    pos = unique("sdk-consent")
    partner = server.partner(pos)
    merchant, _store_id = server.merchant_store(f"{pos}@example.com", receipts=False)
    profile_id = merchant.get("/merchant/api/profiles").json()["profiles"][0]["id"]
    kept: list[Tokens] = []
    with PartnerLinkClient(
        server.url,
        client_id=partner["clientId"],
        client_secret=partner["clientSecret"],
        on_tokens=kept.append,
    ) as pl:
        integration = pl.create_integration_token()
        assert pl.consent_url(integration).startswith(f"{server.url}/connect/?client_id=")
        assert pl.integration_status(integration) == "pending"
        approved = merchant.post(
            f"/merchant/api/consents/{integration}/approve",
            json={"clientId": partner["clientId"], "profileId": profile_id},
        )
        assert approved.status_code == 200, approved.text
        assert pl.integration_status(integration) == "finished"
        tokens = pl.exchange_integration_token(integration)
        assert tokens.refresh_token and kept == [tokens]
        # A token the server no longer takes: one refresh, then the call goes through.
        pl._state.access_token = "plk_at_" + "x" * 43
        assert pl.put_store(STORE)["name"] == "SDK Bistro"
        assert len(kept) == 2 and kept[1].access_token == pl.access_token
        assert pl.access_token != tokens.access_token


def test_the_async_client_runs_the_same_calls(server: Server) -> None:
    pos = unique("sdk-async")
    server.partner(pos)
    merchant, store_id = server.merchant_store(f"{pos}@example.com", receipts=False)
    code = server.pairing_code(merchant, store_id, pos)

    async def run() -> None:
        async with AsyncPartnerLinkClient(server.url) as pl:
            tokens = await pl.pair(code)
            assert tokens.store_id == store_id
            assert (await pl.put_store(STORE))["name"] == "SDK Bistro"
            assert await pl.send_order(order("ASYNC-1")) == {"statusCode": 200}
            with pytest.raises(BadRequest):
                await pl.send_order({"orderId": "ASYNC-2"})

    asyncio.run(run())


def test_connections_follow_every_page_in_both_clients(server: Server) -> None:
    pos = unique("sdk-pages")
    partner = server.partner(pos)
    store_ids = []
    for n in range(3):
        merchant, store_id = server.merchant_store(f"{pos}-{n}@example.com", receipts=False)
        with PartnerLinkClient(server.url) as terminal:
            terminal.pair(server.pairing_code(merchant, store_id, pos))
        store_ids.append(store_id)
    credentials = {"client_id": partner["clientId"], "client_secret": partner["clientSecret"]}
    with PartnerLinkClient(server.url, **credentials) as pl:
        first = pl.connections_page(limit=2)
        assert len(first["connections"]) == 2 and first["nextCursor"]
        assert sorted(c["storeId"] for c in pl.connections(page_size=1)) == sorted(store_ids)

    async def run() -> list[str]:
        async with AsyncPartnerLinkClient(server.url, **credentials) as pl:
            return [c["storeId"] for c in await pl.connections(page_size=2)]

    assert sorted(asyncio.run(run())) == sorted(store_ids)


def test_the_terminal_pairs_rings_up_and_texts_the_receipt(server: Server) -> None:
    pos = unique("sdk-terminal")
    server.partner(pos)
    merchant, store_id = server.merchant_store(f"{pos}@example.com", receipts=True)
    code = server.pairing_code(merchant, store_id, pos)
    keys = "Flat white 3.50\nMuffin 2.25\n\n(415) 555-0199\nq\n"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "partnerlink_client.terminal",
            "--url",
            server.url,
            "--code",
            str(code),
        ],
        input=keys,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Paired with store {store_id}." in done.stdout
    assert "E-receipts are on" in done.stdout
    assert "2 item(s), 5.75 USD" in done.stdout
    assert "e-receipt texted to 4155550199" in done.stdout
    deadline = time.monotonic() + 30
    while True:
        messages = server.cli("sms", "list")
        texted = [m for m in messages if m["storeId"] == store_id]
        if texted:
            break
        assert time.monotonic() < deadline, messages
        time.sleep(0.2)
    assert texted[0]["to"] == "+14155550199"
    assert json.dumps(texted[0]).count("/receipts/inv/T-") == 2  # link and body


def _oauth_world(server: Server, pos: str) -> OAuthWorld:
    """A partner with a registered redirect URI, and a merchant who can sign in."""
    with server.sessions() as session:
        return build_oauth_world(session, pos_type=pos, email=f"{pos}@example.com")


def test_oauth_helpers_authorize_exchange_refresh_and_revoke(server: Server) -> None:
    pos = unique("sdk-oauth")
    world = _oauth_world(server, pos)
    kept: list[Tokens] = []
    credentials = {
        "client_id": world.partner.client_id,
        "client_secret": world.partner.client_secret,
    }
    with (
        PartnerLinkClient(server.url, **credentials, on_tokens=kept.append) as pl,
        httpx.Client(base_url=server.url, timeout=60) as browser,
    ):
        started = pl.oauth.authorize_url(REDIRECT_URI)
        assert started.url.startswith(f"{server.url}/connect/oauth/authorize?")
        back = approve(browser, started.url, f"profile:{world.profile.id}", f"{pos}@example.com")
        callback = back.headers["location"]
        with pytest.raises(AuthorizationFailed):  # a callback whose state is not ours
            pl.oauth.code_from_callback(callback, "another-state")
        code = pl.oauth.code_from_callback(callback, started.state)
        tokens = pl.oauth.exchange_code(code, started.code_verifier, started.redirect_uri)
        assert tokens.access_token.startswith("plk_at_") and tokens.store_id
        assert kept == [tokens] and tokens.expiration and tokens.expiration > "2026"
        assert kept[0] is tokens  # read once: the expiry kept is the one answered
        assert pl.put_store(STORE)["id"] == tokens.store_id  # the kept token works on /v1
        refreshed = pl.oauth.refresh()
        assert refreshed.access_token != tokens.access_token
        assert refreshed.refresh_token == tokens.refresh_token == pl._state.refresh_token
        assert pl.token_status()["method"] == "consent"
        pl.oauth.revoke("plk_rt_unknown")  # RFC 7009: nothing to revoke is no error
        pl.oauth.revoke(tokens.refresh_token, "refresh_token")
        with pytest.raises(BadRequest) as refused:
            pl.oauth.refresh()
        assert refused.value.code == "invalid_grant"
        with pytest.raises(Forbidden):  # the connection is gone: SPEC's refresh fails too
            pl.get_store()
        declined = pl.oauth.authorize_url(REDIRECT_URI)
        page = browser.get(declined.url)
        decline = form(page.text, "/connect/decline")
        gone_back = browser.post("/connect/decline", data=decline.fields)
        with pytest.raises(AuthorizationFailed) as denied:
            pl.oauth.code_from_callback(gone_back.headers["location"], declined.state)
        assert denied.value.error == "access_denied"


def test_oauth_in_the_async_client_and_a_code_used_twice(server: Server) -> None:
    pos = unique("sdk-oauth-async")
    world = _oauth_world(server, pos)
    credentials = {
        "client_id": world.partner.client_id,
        "client_secret": world.partner.client_secret,
    }

    async def run(browser: httpx.Client) -> None:
        async with AsyncPartnerLinkClient(server.url, **credentials) as pl:
            started = pl.oauth.authorize_url(REDIRECT_URI, state="my-own-state")
            back = approve(browser, started.url, f"store:{world.store.id}", f"{pos}@example.com")
            code = pl.oauth.code_from_callback(back.headers["location"], "my-own-state")
            tokens = await pl.oauth.exchange_code(code, started.code_verifier, REDIRECT_URI)
            assert tokens.store_id == world.store.id
            assert (await pl.get_store()) == {"greenInvoices": False}
            with pytest.raises(BadRequest) as reused:  # once only; and it revokes the tokens
                await pl.oauth.exchange_code(code, started.code_verifier, REDIRECT_URI)
            assert reused.value.code == "invalid_grant"
            with pytest.raises(Forbidden):
                await pl.get_store()
            with pytest.raises(Unauthorized):
                async with AsyncPartnerLinkClient(
                    server.url, client_id=world.partner.client_id, client_secret="plk_cs_wrong"
                ) as stranger:
                    await stranger.oauth.revoke(tokens.access_token)

    with httpx.Client(base_url=server.url, timeout=60) as browser:
        browser.follow_redirects = False
        asyncio.run(run(browser))
