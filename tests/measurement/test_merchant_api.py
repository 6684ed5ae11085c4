"""The measurement routes of the merchant API (CONTRACT.md §7)."""

from __future__ import annotations

import csv
import hashlib
import io
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.measurement.models import Campaign
from partnerlink.orders.models import Touch
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import OTHER, sign_in
from tests.orders.builders import order_body, post

ADA_HASH = hashlib.sha256(b"ada@example.com").hexdigest()


def base(shop: ConnectedStoreFixture) -> str:
    # Read once per fixture: after a test's own rollback, reading an expired attribute
    # would hold SQLite's one connection away from the app.
    if "_base" not in shop.__dict__:
        shop.__dict__["_base"] = f"/merchant/api/profiles/{shop.profile.id}"
    path: str = shop.__dict__["_base"]
    return path


def count(session: Session, model: Any) -> int:
    n = session.scalar(select(func.count()).select_from(model)) or 0
    session.rollback()
    return n


def test_campaigns_are_created_listed_and_unique(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    body = {
        "campaignId": "spring",
        "name": "Spring",
        "startsAt": "2024-05-01T00:00:00Z",
        "holdoutPercent": 10,
    }
    created = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
    assert created.status_code == 200, created.text
    campaign = created.json()["campaign"]
    assert campaign["campaignId"] == "spring" and campaign["holdoutPercent"] == 10
    assert campaign["endsAt"] is None and set(campaign) == {
        "campaignId",
        "name",
        "startsAt",
        "endsAt",
        "holdoutPercent",
        "clickWindowDays",
        "viewWindowDays",
        "createdAt",
    }
    assert (campaign["clickWindowDays"], campaign["viewWindowDays"]) == (7, 1)
    again = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
    assert again.status_code == 409 and again.json()["code"] == "campaign_exists"
    too_much = client.post(
        f"{base(shop)}/campaigns",
        json={**body, "campaignId": "x", "holdoutPercent": 51},
        headers=owner,
    )
    assert too_much.status_code == 400 and too_much.json()["code"] == "invalid_field"
    listed = client.get(f"{base(shop)}/campaigns", headers=owner).json()["campaigns"]
    assert [c["campaignId"] for c in listed] == ["spring"]


def test_other_merchants_profile_answers_404(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    other = create_connected_store(session, email=OTHER, pos_type="other-pos")
    intruder = sign_in(client, OTHER)
    for method, path, body in [
        ("GET", "/campaigns", None),
        (
            "POST",
            "/touches",
            {
                "touches": [
                    {
                        "campaignId": "c",
                        "touchedAt": "2024-05-01T00:00:00Z",
                        "email": "a@example.com",
                    }
                ]
            },
        ),
        ("GET", "/results", None),
        ("GET", "/campaigns/c/lift", None),
    ]:
        answer = client.request(method, base(shop) + path, json=body, headers=intruder)
        assert answer.status_code == 404 and answer.json()["code"] == "not_found", path
    assert client.get("/merchant/api/profiles/nope/results", headers=intruder).status_code == 404
    assert count(session, Touch) == 0
    assert other.profile.id != shop.profile.id


def test_touches_bad_ones_rejected_alone_with_their_index(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    touch = {"campaignId": "spring", "touchedAt": "2024-05-09T00:00:00Z"}
    answer = client.post(
        f"{base(shop)}/touches",
        json={
            "touches": [
                {**touch, "email": "ada@example.com"},
                {**touch},  # no identifier
                {**touch, "emailSha256": "abc"},  # bad hash
                {**touch, "phoneSha256": ADA_HASH.upper()},
                "not an object",
                {**touch, "touchedAt": "yesterday", "email": "b@example.com"},
            ]
        },
        headers=owner,
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert (result["imported"], result["rejected"], result["reclassified"]) == (2, 4, 0)
    assert [e["index"] for e in result["errors"]] == [1, 2, 4, 5]
    stored = list(session.scalars(select(Touch).order_by(Touch.id)))
    assert [(t.email_sha256, t.phone_sha256) for t in stored] == [
        (ADA_HASH, None),
        (None, ADA_HASH),
    ]
    # An unknown campaign is created with its id as name.
    assert [(c.campaign_id, c.name) for c in session.scalars(select(Campaign))] == [
        ("spring", "spring")
    ]
    session.rollback()


def test_refused_batches_store_nothing(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    touch = {"campaignId": "c", "touchedAt": "2024-05-09T00:00:00Z", "emailSha256": ADA_HASH}
    too_many = client.post(
        f"{base(shop)}/touches", json={"touches": [touch] * 10_001}, headers=owner
    )
    assert too_many.status_code == 400 and too_many.json()["code"] == "too_many_touches"
    assert too_many.headers["content-type"].startswith("application/problem+json")
    body: object
    for body in ({"touches": "nope"}, {"touch": []}, [touch]):
        malformed = client.post(f"{base(shop)}/touches", json=body, headers=owner)
        assert malformed.status_code == 400, body
    raw = client.post(
        f"{base(shop)}/touches", content=b"{", headers={**owner, "content-type": "application/json"}
    )
    assert raw.status_code == 400
    assert count(session, Touch) == count(session, Campaign) == 0
    # The largest accepted batch fits the body limit (10,000 equal touches: stored once).
    full = client.post(f"{base(shop)}/touches", json={"touches": [touch] * 10_000}, headers=owner)
    assert full.status_code == 200
    assert (full.json()["imported"], full.json()["duplicates"]) == (1, 9_999)


def send(client: TestClient, shop: ConnectedStoreFixture, order_id: str, **fields: Any) -> None:
    response = post(client, shop.auth, order_body(order_id, **fields))
    assert response.status_code == 200, response.text


def test_results_per_class_campaign_week_and_currency(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    client.post(
        f"{base(shop)}/touches",
        headers=owner,
        json={
            "touches": [
                {
                    "campaignId": "spring",
                    "touchedAt": "2024-05-05T00:00:00Z",
                    "email": "ada@example.com",
                }
            ]
        },
    )
    # Monday 2024-05-06 starts a week; the 5th is the Sunday before.
    send(client, shop, "1", createdAt="2024-05-06T10:00:00Z", orderPrice="1000")
    send(client, shop, "2", createdAt="2024-05-07T10:00:00Z", orderPrice="500", orderCurrency="EUR")
    send(
        client,
        shop,
        "3",
        createdAt="2024-05-05T10:00:00Z",
        orderPrice="300",
        customerEmail="bob@example.com",
        customerPhoneNumber=None,
    )
    send(
        client,
        shop,
        "4",
        createdAt="2024-05-08T10:00:00Z",
        orderPrice="200",
        customerEmail=None,
        customerPhoneNumber=None,
    )
    # Re-sent with a new price: counted once, at its latest price.
    send(
        client,
        shop,
        "1",
        createdAt="2024-05-06T10:00:00Z",
        orderPrice="1200",
        updatedAt="2024-05-06T11:00:00Z",
    )
    send(client, shop, "5", createdAt="2024-06-01T10:00:00Z")  # outside the period

    answer = client.get(f"{base(shop)}/results?from=2024-05-01&to=2024-05-31", headers=owner)
    assert answer.status_code == 200, answer.text
    r = answer.json()
    assert (r["from"], r["to"]) == ("2024-05-01", "2024-05-31")
    assert r["classes"]["new"] == {"orders": 1, "revenue": [{"currency": "USD", "amount": "1200"}]}
    assert r["classes"]["returning"] == {
        "orders": 1,
        "revenue": [{"currency": "EUR", "amount": "500"}],
    }
    assert r["classes"]["organic"]["orders"] == r["classes"]["anonymous"]["orders"] == 1
    assert r["campaigns"] == [
        {
            "campaignId": "spring",
            "name": "spring",
            "orders": 2,
            "newCustomers": 1,
            "clickOrders": 2,
            "viewOrders": 0,
            "revenue": [
                {"currency": "EUR", "amount": "500"},
                {"currency": "USD", "amount": "1200"},
            ],
        }
    ]
    weeks = {w["weekStart"]: w for w in r["weeks"]}
    assert weeks["2024-04-29"]["organic"] == 1
    assert weeks["2024-05-06"] == {
        "weekStart": "2024-05-06",
        "new": 1,
        "returning": 1,
        "organic": 0,
        "anonymous": 1,
    }

    as_csv = client.get(
        f"{base(shop)}/results?from=2024-05-01&to=2024-05-31&format=csv", headers=owner
    )
    assert as_csv.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(as_csv.text)))
    assert rows[0] == ["weekStart", "class", "currency", "orders", "revenue"]
    assert rows[1:] == [
        ["2024-04-29", "organic", "USD", "1", "300"],
        ["2024-05-06", "new", "USD", "1", "1200"],
        ["2024-05-06", "returning", "EUR", "1", "500"],
        ["2024-05-06", "anonymous", "USD", "1", "200"],
    ]
    bad = client.get(f"{base(shop)}/results?from=2024-05-31&to=2024-05-01", headers=owner)
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_field"
    assert client.get(f"{base(shop)}/results?from=may", headers=owner).status_code == 400


def test_lift_needs_a_holdout(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    client.post(
        f"{base(shop)}/campaigns",
        headers=owner,
        json={"campaignId": "plain", "name": "Plain", "startsAt": "2024-05-01T00:00:00Z"},
    )
    answer = client.get(f"{base(shop)}/campaigns/plain/lift", headers=owner)
    assert answer.status_code == 400 and answer.json()["code"] == "no_holdout"
    assert client.get(f"{base(shop)}/campaigns/none/lift", headers=owner).status_code == 404
