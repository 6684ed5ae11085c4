"""A person's data through the merchant API (CONTRACT §8, §12): lifting the merchant's
opt-out, the data-subject export, and erasure in Results' campaign rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.audiences.helpers import add_customer, add_order
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import sign_in
from tests.orders.builders import PHONE, order_body, post


def _all(client: TestClient, profile_id: str, auth: dict[str, str]) -> int:
    response = client.get(f"/merchant/api/profiles/{profile_id}/audiences", headers=auth)
    assert response.status_code == 200, response.text
    return next(a["customers"] for a in response.json()["audiences"] if a["segment"] == "all")


def _problem(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == code


def test_the_merchant_lifts_its_own_opt_out(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(session, shop.store, email="ann@example.com", phone="+14155550131")
    path = f"/merchant/api/profiles/{shop.profile.id}/customers/opt-out"
    assert client.post(path, json={"email": "ann@example.com"}, headers=owner).status_code == 200
    assert _all(client, shop.profile.id, owner) == 0
    # Read as opt-out reads it: a national number in the profile's country.
    lifted = client.request("DELETE", path, json={"phoneNumber": "(415) 555-0131"}, headers=owner)
    assert lifted.status_code == 200 and lifted.json() == {"optedIn": 1}
    assert _all(client, shop.profile.id, owner) == 1
    again = client.request("DELETE", path, json={"email": "ann@example.com"}, headers=owner)
    assert again.json() == {"optedIn": 0}


def test_lifting_an_opt_out_refuses_as_every_merchant_call_does(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(session, shop.store, email="ann@example.com")
    path = f"/merchant/api/profiles/{shop.profile.id}/customers/opt-out"
    client.post(path, json={"email": "ann@example.com"}, headers=owner)
    for body in ({}, {"email": " ", "phoneNumber": ""}):
        _problem(client.request("DELETE", path, json=body, headers=owner), 400, "missing_field")
    _problem(
        client.request("DELETE", path, json={"phoneNumber": "12"}, headers=owner),
        400,
        "invalid_field",
    )
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    add_customer(session, other.store, email="ann@example.com")
    theirs = f"/merchant/api/profiles/{other.profile.id}/customers/opt-out"
    _problem(
        client.request("DELETE", theirs, json={"email": "ann@example.com"}, headers=owner),
        404,
        "not_found",
    )
    unsigned = client.request("DELETE", path, json={"email": "ann@example.com"})
    assert unsigned.status_code == 401
    assert _all(client, shop.profile.id, owner) == 0  # nothing was lifted


def test_the_data_subject_export_answers_everything_the_profile_holds(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session, ereceipt=True, green_invoices=True)
    owner = sign_in(client)
    body = order_body("DS-1", customerEmail="Ada@Example.com", customerPhoneNumber=PHONE)
    body["orderDetails"]["note"] = "window seat"
    assert post(client, shop.auth, body).status_code == 200
    add_customer(session, shop.store, email="someone.else@example.com")
    path = f"/merchant/api/profiles/{shop.profile.id}/customers"
    client.post(f"{path}/opt-out", json={"email": "ada@example.com"}, headers=owner)

    response = client.get(f"{path}/export", params={"phoneNumber": PHONE}, headers=owner)
    assert response.status_code == 200, response.text
    [person] = response.json()["customers"]
    customer = person["customer"]
    assert customer["email"] == "ada@example.com" and customer["phoneNumber"] == PHONE
    assert (customer["firstName"], customer["lastName"]) == ("Ada", "Lovelace")
    assert customer["createdAt"] and customer["updatedAt"]
    [order] = person["orders"]
    assert order["orderId"] == "DS-1" and order["orderDetails"]["note"] == "window seat"
    assert order["orderItems"][0]["itemName"] == "Flat white"
    assert person["optedOut"] is True and person["optedOutBy"] == ["merchant"]
    [receipt] = person["receipts"]
    assert receipt["orderId"] == "DS-1" and receipt["to"] == PHONE
    assert receipt["status"] == "pending" and receipt["createdAt"]
    assert "/inv/DS-1" in receipt["link"] and "k=" not in receipt["link"]
    by_email = client.get(f"{path}/export", params={"email": " ADA@example.com"}, headers=owner)
    assert by_email.json() == response.json()

    unknown = client.get(f"{path}/export", params={"email": "no@example.com"}, headers=owner)
    assert unknown.status_code == 200 and unknown.json() == {"customers": []}
    _problem(client.get(f"{path}/export", headers=owner), 400, "missing_field")
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    theirs = f"/merchant/api/profiles/{other.profile.id}/customers/export"
    _problem(client.get(theirs, params={"phoneNumber": PHONE}, headers=owner), 404, "not_found")

    erased = client.post(f"{path}/erase", json={"phoneNumber": PHONE}, headers=owner)
    assert erased.json() == {"erased": 1}
    after = client.get(f"{path}/export", params={"phoneNumber": PHONE}, headers=owner)
    assert after.json() == {"customers": []}


def test_an_erased_customers_orders_leave_their_campaign_row(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    gone = add_customer(session, shop.store, email="gone@example.com")
    stays = add_customer(session, shop.store, email="stays@example.com")
    for customer in (gone, stays):
        order = add_order(session, shop.store, customer, days_ago=1)
        order.conversion, order.campaign_id = "new", "spring"
    session.commit()
    today = datetime.now(UTC).date()
    params = {"from": (today - timedelta(days=7)).isoformat(), "to": today.isoformat()}
    results = f"/merchant/api/profiles/{shop.profile.id}/results"

    def spring_orders() -> int:
        answer = client.get(results, params=params, headers=owner).json()
        return sum(c["orders"] for c in answer["campaigns"] if c["campaignId"] == "spring")

    assert spring_orders() == 2
    path = f"/merchant/api/profiles/{shop.profile.id}/customers/erase"
    assert client.post(path, json={"email": "gone@example.com"}, headers=owner).json() == {
        "erased": 1
    }
    assert spring_orders() == 1
    answer = client.get(results, params=params, headers=owner).json()
    assert answer["classes"]["anonymous"]["orders"] == 1
