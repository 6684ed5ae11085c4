"""CONTRACT §14 with Google, through the merchant API and the callback, against the local
stand-in: the code flow with PKCE, the refresh token kept sealed and used with the
operator's client, Customer Match lists listed and made, a destination synced; and a code
Google refuses, access_denied, stores nothing."""

from __future__ import annotations

import json

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient
from google.ads import datamanager_v1
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.destinations.ad_connections.google_login import user_list_body
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations import fake_google
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_google_login import SCOPE
from tests.destinations.signing_in.helpers import (
    approve,
    connections_path,
    count_connections,
    query_of,
)
from tests.destinations.sync_helpers import run_worker
from tests.factories import ConnectedStoreFixture

CUSTOMER = "1234567890"


def test_a_merchant_connects_google_picks_a_list_and_syncs(
    app: FastAPI,
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    google: FakeGoogle,
    session: Session,
    settings: Settings,
) -> None:
    profile_id, business = shop.profile.id, shop.profile.name
    add_customer(session, shop.store, email="someone@example.com")
    base = connections_path(profile_id)
    started = client.post(f"{base}/google", headers=owner)
    assert started.status_code == 201
    url = started.json()["authorizeUrl"]
    assert url.startswith(f"{google.url}/auth?")
    asked = query_of(url)
    assert asked["scope"] == SCOPE and asked["code_challenge_method"] == "S256"
    assert asked["access_type"] == "offline" and asked["prompt"] == "consent"
    assert asked["redirect_uri"] == "http://testserver/merchant/ad-platforms/google/callback"

    page = client.get(approve(url))
    assert page.status_code == 200 and "Connected with Google" in page.text
    (connection,) = client.get(base, headers=owner).json()["connections"]
    assert connection["platform"] == "google" and connection["expiresAt"] is None
    path = f"{base}/{connection['id']}"

    google.add_user_list(CUSTOMER, "900000001", "Newsletter")
    google.add_user_list(CUSTOMER, "900000002", "App users", contact=False)
    google.add_user_list(CUSTOMER, "900000003", "Buyers 2025")
    lists = client.get(f"{path}/audiences", params={"account": "123-456-7890"}, headers=owner)
    assert lists.json() == {  # both pages; the mobile-id list is not one we can fill
        "audiences": [
            {"id": "900000001", "name": "Newsletter"},
            {"id": "900000003", "name": "Buyers 2025"},
        ]
    }
    made = client.post(
        f"{path}/audiences", json={"account": "123-456-7890", "segment": "buyers"}, headers=owner
    )
    assert made.status_code == 201, made.text
    audience = made.json()["audience"]
    assert audience["name"] == f"{business} – buyers"
    sent = google.created_lists[0]
    assert sent["ingestedUserListInfo"]["uploadKeyTypes"] == ["CONTACT_ID"]

    created = client.post(
        f"/merchant/api/profiles/{profile_id}/destinations",
        json={
            "platform": "google",
            "kind": "audience",
            "segment": "all",
            "connection": connection["id"],
            "target": {"customerId": CUSTOMER, "userListId": "900000001"},
        },
        headers=owner,
    )
    assert created.status_code == 201, created.text
    run_worker(app, settings)
    assert len(google.members("900000001")) == 1
    refresh = next(iter(google.refresh_tokens - {fake_google.REFRESH_TOKEN}))
    dump = "\n".join(
        str(row)
        for table in ("ad_connections", "ad_connection_states", "destinations")
        for row in session.execute(text(f"SELECT * FROM {table}")).all()
    )
    session.rollback()
    assert refresh not in dump
    for answer in (started, page, made, created):
        assert refresh not in answer.text
    datasets = client.get(f"{path}/datasets", params={"account": CUSTOMER}, headers=owner)
    assert datasets.status_code == 400


def test_a_code_google_refuses_or_a_denial_stores_nothing(
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    google: FakeGoogle,
    session: Session,
) -> None:
    base = connections_path(shop.profile.id)
    callback = approve(client.post(f"{base}/google", headers=owner).json()["authorizeUrl"])
    state = query_of(callback)["state"]
    refused = client.get(
        "/merchant/ad-platforms/google/callback", params={"code": "4/0Anot", "state": state}
    )
    assert refused.status_code == 400 and "did not accept" in refused.text
    google.deny_next()
    denied = client.get(
        approve(client.post(f"{base}/google", headers=owner).json()["authorizeUrl"])
    )
    assert denied.status_code == 400 and "You did not allow PartnerLink" in denied.text
    assert count_connections(session) == 0


def test_a_user_list_body_parses_as_the_official_type_and_the_stand_in_refuses_others(
    google: FakeGoogle,
) -> None:
    body = user_list_body("Corner Bakery – all", "Kept in sync by PartnerLink")
    parsed = datamanager_v1.UserList.from_json(json.dumps(body))
    assert parsed.ingested_user_list_info.upload_key_types == [
        datamanager_v1.IngestedUserListInfo.UploadKeyType.CONTACT_ID
    ]
    google.access_tokens.add("ya29.test")
    url = f"{google.url}/v1/accountTypes/GOOGLE_ADS/accounts/{CUSTOMER}/userLists"
    auth = {"Authorization": "Bearer ya29.test"}
    refused = httpx.post(url, json={**body, "membershipLifeSpan": 30}, headers=auth)
    assert refused.status_code == 400 and refused.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert httpx.post(url, json=body, headers=auth).status_code == 200
