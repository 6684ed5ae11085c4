"""The merchant API of destinations (CONTRACT §11): shapes, ownership, refusals."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from partnerlink.db.base import Base
from partnerlink.destinations.models import Destination
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import OTHER, sign_in

META_TOKEN = "EAAB-meta-secret-token-0123456789"
GOOGLE_SECRET = "google-client-secret-abcdef"
GOOGLE_REFRESH = "1//google-refresh-token-xyz"

META_AUDIENCE: dict[str, Any] = {
    "platform": "meta",
    "kind": "audience",
    "segment": "buyers",
    "credentials": {"accessToken": META_TOKEN},
    "target": {"audienceId": "23851234567890123"},
}
GOOGLE_CONVERSIONS: dict[str, Any] = {
    "platform": "google",
    "kind": "conversions",
    "credentials": {
        "clientId": "123-abc.apps.googleusercontent.com",
        "clientSecret": GOOGLE_SECRET,
        "refreshToken": GOOGLE_REFRESH,
    },
    "target": {"customerId": "1234567890", "conversionActionId": "987654321"},
    "consent": {"adUserData": "granted", "adPersonalization": "denied"},
}

DESTINATION_KEYS = {
    "id",
    "platform",
    "kind",
    "segment",
    "campaignId",
    "target",
    "consent",
    "status",
    "lastSyncAt",
    "lastError",
    "members",
    "sent",
    "lastReport",
}


def _base(shop: ConnectedStoreFixture) -> str:
    return f"/merchant/api/profiles/{shop.profile.id}/destinations"


def test_connect_list_get_change_sync_disconnect(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    created = client.post(_base(shop), json=META_AUDIENCE, headers=owner)
    assert created.status_code == 201, created.text
    destination = created.json()["destination"]
    assert set(destination) == DESTINATION_KEYS
    assert destination["status"] == "pending"
    assert destination["target"] == {"audienceId": "23851234567890123"}
    assert destination["sent"] == {"added": 0, "removed": 0, "events": 0, "rejected": 0}
    assert destination["members"] == 0
    assert META_TOKEN not in created.text

    google = client.post(_base(shop), json=GOOGLE_CONVERSIONS, headers=owner)
    assert google.status_code == 201, google.text
    assert google.json()["destination"]["consent"] == GOOGLE_CONVERSIONS["consent"]
    assert GOOGLE_SECRET not in google.text and GOOGLE_REFRESH not in google.text

    listed = client.get(_base(shop), headers=owner)
    assert [d["id"] for d in listed.json()["destinations"]] == [
        destination["id"],
        google.json()["destination"]["id"],
    ]
    one = client.get(f"{_base(shop)}/{destination['id']}", headers=owner)
    assert one.json()["destination"] == destination

    changed = client.patch(
        f"{_base(shop)}/{destination['id']}", json={"segment": "top"}, headers=owner
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["destination"]["segment"] == "top"

    synced = client.post(f"{_base(shop)}/{destination['id']}/sync", headers=owner)
    assert synced.status_code == 202
    assert synced.json()["destination"]["id"] == destination["id"]

    gone = client.delete(f"{_base(shop)}/{destination['id']}", headers=owner)
    assert gone.status_code == 204
    assert client.get(f"{_base(shop)}/{destination['id']}", headers=owner).status_code == 404


def test_credentials_are_in_no_answer_and_no_database_text(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], session: Session
) -> None:
    client.post(_base(shop), json=META_AUDIENCE, headers=owner)
    client.post(_base(shop), json=GOOGLE_CONVERSIONS, headers=owner)
    dump = []
    for table in Base.metadata.sorted_tables:
        for row in session.execute(select(table)):
            dump.append(repr(tuple(row)))
    everything = "\n".join(dump)
    assert "23851234567890123" in everything  # the dump did read the destinations
    for secret in (META_TOKEN, GOOGLE_SECRET, GOOGLE_REFRESH):
        assert secret not in everything


def test_another_merchants_profile_and_destinations_answer_404(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], session: Session
) -> None:
    created = client.post(_base(shop), json=META_AUDIENCE, headers=owner).json()["destination"]
    create_connected_store(session, email=OTHER, pos_type="other-pos")
    other = sign_in(client, OTHER)
    path = f"{_base(shop)}/{created['id']}"
    assert client.get(_base(shop), headers=other).status_code == 404
    assert client.post(_base(shop), json=META_AUDIENCE, headers=other).status_code == 404
    assert client.get(path, headers=other).status_code == 404
    assert client.patch(path, json={"segment": "all"}, headers=other).status_code == 404
    assert client.post(f"{path}/sync", headers=other).status_code == 404
    assert client.delete(path, headers=other).status_code == 404
    assert client.get(f"{_base(shop)}/not-a-destination", headers=owner).status_code == 404
    assert client.get(_base(shop)).status_code == 401


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = {**base, **changes}
    return {k: v for k, v in body.items() if v is not None}


BAD_REQUESTS = [
    (_with(META_AUDIENCE, platform="tiktok"), "platform"),
    (_with(META_AUDIENCE, kind="lookalike"), "kind"),
    (_with(META_AUDIENCE, segment="vip"), "segment"),
    ({k: v for k, v in META_AUDIENCE.items() if k != "segment"}, "segment"),
    (_with(META_AUDIENCE, target={"audienceId": "238-512"}), "target.audienceId"),
    (_with(META_AUDIENCE, target={}), "target.audienceId"),
    (_with(META_AUDIENCE, credentials={}), "credentials.accessToken"),
    (_with(META_AUDIENCE, credentials={"accessToken": ""}), "credentials.accessToken"),
    (_with(META_AUDIENCE, credentials="token"), "credentials"),
    (_with(META_AUDIENCE, campaignId="no-such-campaign"), "campaignId"),
    (
        _with(META_AUDIENCE, consent={"adUserData": "granted", "adPersonalization": "granted"}),
        "consent",
    ),
    (
        _with(GOOGLE_CONVERSIONS, consent={"adUserData": "yes", "adPersonalization": "denied"}),
        "consent.adUserData",
    ),
    (
        _with(GOOGLE_CONVERSIONS, target={"customerId": "123-456-789", "conversionActionId": "1"}),
        "target.customerId",
    ),
    (_with(GOOGLE_CONVERSIONS, target={"customerId": "1234567890"}), "target.conversionActionId"),
    (
        _with(GOOGLE_CONVERSIONS, credentials={"clientId": "a", "clientSecret": "b"}),
        "credentials.refreshToken",
    ),
    (_with(GOOGLE_CONVERSIONS, segment="all"), "segment"),
    (
        _with(
            GOOGLE_CONVERSIONS,
            target={"customerId": "1234567890", "conversionActionId": "2", "loginCustomerId": "x"},
        ),
        "target.loginCustomerId",
    ),
]


@pytest.mark.parametrize(("body", "field"), BAD_REQUESTS)
def test_bad_requests_answer_400_and_store_nothing(
    client: TestClient,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    session: Session,
    body: dict[str, Any],
    field: str,
) -> None:
    response = client.post(_base(shop), json=body, headers=owner)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["code"] == "invalid_field"
    assert problem["errors"][0]["field"] == field
    assert "secret" not in response.text and META_TOKEN not in response.text
    assert session.scalar(select(func.count()).select_from(Destination)) == 0


@pytest.mark.parametrize("body", ["[1]", '"text"', "{", ""])
def test_malformed_bodies_never_500(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], body: str
) -> None:
    response = client.post(
        _base(shop), content=body, headers={**owner, "Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text


def test_patch_refusals_change_nothing(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], session: Session
) -> None:
    created = client.post(_base(shop), json=META_AUDIENCE, headers=owner).json()["destination"]
    path = f"{_base(shop)}/{created['id']}"
    before = session.execute(text("SELECT credentials_sealed FROM destinations")).scalar_one()
    session.rollback()  # the SQLite test database has one connection: give it back
    body: object
    for body in (
        {"segment": "top", "credentials": {"accessToken": ""}},
        {"segment": "vip"},
        {"campaignId": "unknown"},
        [],
    ):
        response = client.patch(path, json=body, headers=owner)
        assert response.status_code == 400, (body, response.text)
    after = session.execute(text("SELECT credentials_sealed FROM destinations")).scalar_one()
    session.rollback()
    assert after == before
    assert client.get(path, headers=owner).json()["destination"]["segment"] == "buyers"


def test_the_list_pages_with_cursors(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    made = [
        client.post(_base(shop), json={**META_AUDIENCE, "segment": segment}, headers=owner).json()[
            "destination"
        ]["id"]
        for segment in ("all", "buyers", "new", "repeat", "lapsed")
    ]
    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get(_base(shop), params=query, headers=owner).json()
        assert len(page["destinations"]) <= 2
        seen += [d["id"] for d in page["destinations"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == made
    whole = client.get(_base(shop), headers=owner).json()
    assert whole["nextCursor"] is None and len(whole["destinations"]) == 5
    bad = client.get(_base(shop), params={"cursor": "nonsense"}, headers=owner)
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_field"
