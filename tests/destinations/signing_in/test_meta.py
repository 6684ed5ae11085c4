"""CONTRACT §14 with Meta, through the merchant API and the callback, against the local
stand-in: sign in, list, create, connect a destination, sync, disconnect; and every bad
input (forged, reused or expired state, a refused code, access_denied, another
merchant's connection) stores nothing."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.ad_connections.models import AdConnectionState
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations import fake_meta, fake_meta_login
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.signing_in.helpers import (
    approve,
    connect,
    connections_path,
    count_connections,
    query_of,
)
from tests.destinations.sync_helpers import run_worker
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import OTHER, sign_in

ACCOUNT = "101000000001"


def test_a_merchant_connects_meta_picks_and_syncs(
    app: FastAPI,
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    meta: FakeMeta,
    session: Session,
    settings: Settings,
) -> None:
    profile_id, business = shop.profile.id, shop.profile.name
    base = connections_path(profile_id)
    started = client.post(f"{base}/meta", headers=owner)
    assert started.status_code == 201
    url = started.json()["authorizeUrl"]
    assert url.startswith(f"{meta.url}/{fake_meta.VERSION}/dialog/oauth?")
    asked = query_of(url)
    assert asked["client_id"] == fake_meta_login.APP_ID
    assert asked["redirect_uri"] == "http://testserver/merchant/ad-platforms/meta/callback"
    assert asked["response_type"] == "code"
    assert asked["scope"] == "ads_management,business_management"
    assert len(asked["state"]) >= 32

    page = client.get(approve(url))
    assert page.status_code == 200 and "Connected with Meta" in page.text
    listed = client.get(base, headers=owner).json()["connections"]
    assert [c["platform"] for c in listed] == ["meta"]
    connection = listed[0]
    assert set(connection) == {"id", "platform", "accountName", "expiresAt"}
    assert connection["accountName"] == fake_meta_login.USER_NAME
    assert connection["expiresAt"] > (utcnow() + timedelta(days=59)).isoformat()

    path = f"{base}/{connection['id']}"
    accounts = client.get(f"{path}/accounts", headers=owner).json()["accounts"]
    assert accounts == [  # both pages, through paging.next
        {"id": "101000000001", "name": "Bakery ads", "currency": "EUR"},
        {"id": "101000000002", "name": "Second shop", "currency": "EUR"},
    ]
    meta.add_audience(ACCOUNT, "23850000000000001", "Old list")
    meta.add_audience(ACCOUNT, "23850000000000002", "Site visitors", subtype="WEBSITE")
    meta.add_dataset(ACCOUNT, "555000000000001", "Bakery pixel")
    audiences = client.get(f"{path}/audiences", params={"account": ACCOUNT}, headers=owner)
    assert audiences.json() == {"audiences": [{"id": "23850000000000001", "name": "Old list"}]}
    datasets = client.get(f"{path}/datasets", params={"account": f"act_{ACCOUNT}"}, headers=owner)
    assert datasets.json() == {"datasets": [{"id": "555000000000001", "name": "Bakery pixel"}]}

    made = client.post(
        f"{path}/audiences", json={"account": ACCOUNT, "segment": "all"}, headers=owner
    )
    assert made.status_code == 201, made.text
    audience = made.json()["audience"]
    assert audience["name"] == f"{business} – all"
    sent = meta.created_audiences[0]
    assert sent["subtype"] == "CUSTOM" and sent["customer_file_source"] == "USER_PROVIDED_ONLY"
    assert sent["description"]

    add_customer(session, shop.store, email="someone@example.com")
    created = client.post(
        f"/merchant/api/profiles/{profile_id}/destinations",
        json={
            "platform": "meta",
            "kind": "audience",
            "segment": "all",
            "connection": connection["id"],
            "target": {"audienceId": audience["id"]},
        },
        headers=owner,
    )
    assert created.status_code == 201, created.text
    run_worker(app, settings)
    assert len(meta.audiences[audience["id"]]) == 1
    destination = client.get(
        f"/merchant/api/profiles/{profile_id}/destinations/{created.json()['destination']['id']}",
        headers=owner,
    ).json()["destination"]
    assert destination["status"] == "active"

    # The token is in no answer and not in clear in the database.
    for answer in (started, page, made, created):
        assert fake_meta.ACCESS_TOKEN not in answer.text
    dump = "\n".join(
        str(row) for row in session.execute(text("SELECT * FROM ad_connections")).all()
    ) + "\n".join(str(row) for row in session.execute(text("SELECT * FROM destinations")).all())
    assert fake_meta.ACCESS_TOKEN not in dump
    session.rollback()

    assert client.delete(path, headers=owner).status_code == 204
    after = client.get(
        f"/merchant/api/profiles/{profile_id}/destinations/{destination['id']}",
        headers=owner,
    ).json()["destination"]
    assert after["status"] == "needs_attention"
    assert "Reconnect with Meta" in after["lastError"]["message"]
    assert client.get(base, headers=owner).json() == {"connections": []}


def test_a_reused_forged_or_expired_state_stores_nothing(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], session: Session
) -> None:
    base = connections_path(shop.profile.id)
    callback = approve(client.post(f"{base}/meta", headers=owner).json()["authorizeUrl"])
    assert client.get(callback).status_code == 200
    reused = client.get(callback)
    assert reused.status_code == 400 and "only once" in reused.text
    assert count_connections(session) == 1

    forged = client.get(
        "/merchant/ad-platforms/meta/callback", params={"code": "AQxyz", "state": "made-up"}
    )
    assert forged.status_code == 400 and "Nothing was connected" in forged.text

    late = approve(client.post(f"{base}/meta", headers=owner).json()["authorizeUrl"])
    session.execute(update(AdConnectionState).values(created_at=utcnow() - timedelta(minutes=11)))
    session.commit()
    expired = client.get(late)
    assert expired.status_code == 400 and "10 minutes" in expired.text
    assert count_connections(session) == 1


def test_a_refused_code_or_access_denied_stores_nothing(
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    meta: FakeMeta,
    session: Session,
) -> None:
    base = connections_path(shop.profile.id)
    callback = approve(client.post(f"{base}/meta", headers=owner).json()["authorizeUrl"])
    state = query_of(callback)["state"]
    refused = client.get(
        "/merchant/ad-platforms/meta/callback", params={"code": "AQnot-issued", "state": state}
    )
    assert refused.status_code == 400 and "did not accept" in refused.text

    meta.deny_next()
    denied = client.get(approve(client.post(f"{base}/meta", headers=owner).json()["authorizeUrl"]))
    assert denied.status_code == 400
    assert "You did not allow PartnerLink" in denied.text
    assert count_connections(session) == 0


def test_another_merchants_connection_answers_404(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], session: Session
) -> None:
    connection_id = connect(client, shop.profile.id, owner, "meta")
    other_shop = create_connected_store(session, email=OTHER, pos_type="other-pos")
    other = sign_in(client, OTHER)
    base = connections_path(shop.profile.id)
    path = f"{base}/{connection_id}"
    assert client.get(base, headers=other).status_code == 404
    assert client.post(f"{base}/meta", headers=other).status_code == 404
    assert client.get(f"{path}/accounts", headers=other).status_code == 404
    assert client.delete(path, headers=other).status_code == 404
    theirs = f"{connections_path(other_shop.profile.id)}/{connection_id}"
    answer = client.get(f"{theirs}/accounts", headers=other)
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"
    assert count_connections(session) == 1


def test_without_the_app_registered_there_is_no_meta_sign_in(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], app: FastAPI
) -> None:
    app.state.settings.meta_app_id = None
    answer = client.post(f"{connections_path(shop.profile.id)}/meta", headers=owner)
    assert answer.status_code == 404 and answer.json()["code"] == "not_configured"


def test_no_token_code_or_secret_reaches_a_log_line(
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    meta: FakeMeta,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)  # what a server logs (DEBUG traces are off there)
    base = connections_path(shop.profile.id)
    callback = approve(client.post(f"{base}/meta", headers=owner).json()["authorizeUrl"])
    assert client.get(callback).status_code == 200
    connection_id = client.get(base, headers=owner).json()["connections"][0]["id"]
    client.get(f"{base}/{connection_id}/accounts", headers=owner)
    logged = caplog.text
    assert fake_meta.ACCESS_TOKEN not in logged
    assert fake_meta_login.APP_SECRET not in logged
    assert query_of(callback)["code"] not in logged
    assert not any(short in logged for short in meta.short_tokens)


def test_without_expires_in_the_expiry_is_read_with_debug_token(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], meta: FakeMeta
) -> None:
    meta.says_expires_in = False
    connect(client, shop.profile.id, owner, "meta")
    (connection,) = client.get(connections_path(shop.profile.id), headers=owner).json()[
        "connections"
    ]
    assert connection["expiresAt"] > (utcnow() + timedelta(days=58)).isoformat()


def test_an_account_the_sign_in_cannot_use_is_refused_by_name(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    connection_id = connect(client, shop.profile.id, owner, "meta")
    path = f"{connections_path(shop.profile.id)}/{connection_id}"
    answer = client.get(f"{path}/audiences", params={"account": "999000000001"}, headers=owner)
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {"field": "account", "message": "is not an ad account this connection can use"}
    ]
    bad = client.post(
        f"{path}/audiences", json={"account": "act_x", "segment": "nope"}, headers=owner
    )
    assert bad.status_code == 400
    assert {e["field"] for e in bad.json()["errors"]} == {"account", "segment"}  # both at once


def test_reconnecting_gives_every_destination_of_the_connection_the_new_token(
    app: FastAPI,
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    meta: FakeMeta,
    session: Session,
    settings: Settings,
) -> None:
    profile_id = shop.profile.id
    add_customer(session, shop.store, email="someone@example.com")
    connection_id = connect(client, profile_id, owner, "meta")
    destinations = f"/merchant/api/profiles/{profile_id}/destinations"
    body = {
        "platform": "meta",
        "kind": "audience",
        "segment": "all",
        "connection": connection_id,
        "target": {"audienceId": fake_meta.AUDIENCE_ID},
    }
    made = client.post(destinations, json=body, headers=owner).json()["destination"]
    meta.access_token = "EAAGrenewed-long-lived-token"  # the old token stops working
    run_worker(app, settings)
    stopped = client.get(f"{destinations}/{made['id']}", headers=owner).json()["destination"]
    assert stopped["status"] == "needs_attention"

    base = connections_path(profile_id)
    again = client.post(f"{base}/meta", params={"connection": connection_id}, headers=owner)
    assert client.get(approve(again.json()["authorizeUrl"])).status_code == 200
    listed = client.get(base, headers=owner).json()["connections"]
    assert [c["id"] for c in listed] == [connection_id]  # the same connection, a new token
    run_worker(app, settings)
    synced = client.get(f"{destinations}/{made['id']}", headers=owner).json()["destination"]
    assert synced["status"] == "active" and synced["sent"]["added"] == 1
    other = client.post(f"{base}/google", params={"connection": connection_id}, headers=owner)
    assert other.status_code == 404
