"""A stock OAuth client against a real `partnerlink serve`: discovery to a /v1 call."""

from __future__ import annotations

import httpx
from sqlalchemy.orm import Session

from tests.conftest import LiveServer
from tests.connect.oauth_steps import STORE_PROFILE, authorized, build_oauth_world, stock_client


def test_stock_client_discovers_authorizes_calls_refreshes_and_introspects(
    live_server: LiveServer, session: Session
) -> None:
    world = build_oauth_world(session)
    with httpx.Client(base_url=live_server.url, timeout=60) as browser:
        found = browser.get("/.well-known/oauth-authorization-server")
        assert found.status_code == 200
        endpoints = found.json()
        assert endpoints["issuer"] == live_server.url
        with stock_client(live_server.url, world.partner) as oauth:
            location, started = authorized(
                browser, oauth, endpoints["authorization_endpoint"], f"profile:{world.profile.id}"
            )
            token = oauth.fetch_token(
                endpoints["token_endpoint"],
                authorization_response=location,
                code_verifier=started.code_verifier,
            )
            assert token["token_type"] == "Bearer" and token["storeId"]
            stored = browser.put(
                "/v1/stores",
                json=STORE_PROFILE,
                headers={"Authorization": f"Bearer {token['access_token']}"},
            )
            assert stored.status_code == 200, stored.text
            assert stored.json()["store"]["id"] == token["storeId"]
            refreshed = oauth.refresh_token(
                endpoints["token_endpoint"], refresh_token=token["refresh_token"]
            )
            again = browser.put(
                "/v1/stores",
                json=STORE_PROFILE | {"storeName": "Bistro Two"},
                headers={"Authorization": f"Bearer {refreshed['access_token']}"},
            )
            assert again.status_code == 200, again.text
            seen = oauth.introspect_token(
                endpoints["introspection_endpoint"], token=refreshed["access_token"]
            ).json()
            assert seen["active"] is True and seen["storeId"] == token["storeId"]
            assert seen["client_id"] == world.partner.client_id
