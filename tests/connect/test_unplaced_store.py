"""A store created by consent under a profile with no other store: country and currency unset.

No placeholder (CONTRACT.md §6): both stay null until the partner's PUT /v1/stores,
and nothing downstream (merchant API, console, orders, receipts) trips on that.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.connect.conftest import (
    World,
    approve,
    build_world,
    exchange,
    fetch_one,
    merchant_headers,
    new_integration_token,
)
from tests.factories import create_profile
from tests.orders.builders import order_body, post, receipts
from tests.web.conftest import sign_in_console


def _unplaced_store(
    client: TestClient, session: Session, world: World
) -> tuple[str, dict[str, str]]:
    """Approves a consent under a new, empty profile; answers the store id and partner auth."""
    empty = create_profile(session, world.merchant, name="New Venture")
    token = new_integration_token(client, world.partner)
    store_id = approve(session, world, token, profile_id=empty.id, green_invoices=True)
    tokens = exchange(client, world, token)
    return store_id, {"Authorization": f"Bearer {tokens['accessToken']}"}


def _store(session: Session, store_id: str) -> Store:
    store: Store = fetch_one(session, select(Store).where(Store.id == store_id))
    return store


def _stores_in_api(client: TestClient, session: Session, world: World) -> dict[str, Any]:
    response = client.get(
        "/merchant/api/profiles", headers=merchant_headers(session, world.merchant)
    )
    assert response.status_code == 200, response.text
    profiles = response.json()["profiles"]
    return {store["id"]: store for profile in profiles for store in profile["stores"]}


def _put_store(client: TestClient, auth: dict[str, str], **fields: str) -> dict[str, Any]:
    body = {"storeName": "New Venture", "storeAddress": "1 Rue", **fields}
    response = client.put("/v1/stores", json=body, headers=auth)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_store_of_an_empty_profile_has_no_country_or_currency(
    client: TestClient, session: Session
) -> None:
    world = build_world(session, ereceipt=True)
    store_id, _ = _unplaced_store(client, session, world)
    store = _store(session, store_id)
    assert (store.country_code, store.currency) == (None, None)
    api_store = _stores_in_api(client, session, world)[store_id]
    assert (api_store["countryCode"], api_store["currency"]) == (None, None)
    sign_in_console(client, email=world.merchant.email)
    page = client.get(f"/merchant/stores/{store_id}")
    assert page.status_code == 200, page.text
    assert "Not set yet" in page.text and "None" not in page.text
    profile_page = client.get(f"/merchant/profiles/{store.profile_id}")
    assert profile_page.status_code == 200, profile_page.text
    assert "Country and currency not set yet" in profile_page.text


def test_a_put_without_currency_gives_the_country_s_currency(
    client: TestClient, session: Session
) -> None:
    world = build_world(session, ereceipt=True)
    store_id, auth = _unplaced_store(client, session, world)
    answer = _put_store(client, auth, storeCountryCode="JP")
    assert answer["store"]["currency"] == "JPY"
    assert answer["store"]["address"]["country"] == "JP"
    store = _store(session, store_id)
    assert (store.country_code, store.currency) == ("JP", "JPY")


def test_a_put_with_currency_sets_it(client: TestClient, session: Session) -> None:
    world = build_world(session, ereceipt=True)
    store_id, auth = _unplaced_store(client, session, world)
    assert (
        _put_store(client, auth, storeCountryCode="FR", storeCurrency="CHF")["store"]["currency"]
        == "CHF"
    )
    store = _store(session, store_id)
    assert (store.country_code, store.currency) == ("FR", "CHF")


def test_an_order_before_any_put_is_stored_and_its_receipt_renders(
    client: TestClient, session: Session
) -> None:
    world = build_world(session, ereceipt=True)
    store_id, auth = _unplaced_store(client, session, world)
    response = post(client, auth, order_body(orderCurrency="EUR"))
    assert response.status_code in (200, 201), response.text
    order = client.get("/v1/orders", params={"orderId": "A-1001"}, headers=auth)
    assert order.status_code == 200, order.text
    assert order.json()["store"]["storeCurrency"] is None
    [receipt] = receipts(session)
    page = client.get(receipt.link.removeprefix("http://testserver"))
    assert page.status_code == 200, page.text
    assert "€24.00" in page.text and "Amounts in EUR" in page.text
    store = _store(session, store_id)
    assert (store.country_code, store.currency) == (None, None)  # the order's currency is its own
