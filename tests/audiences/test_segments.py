"""GET /merchant/api/profiles/{id}/audiences: segments as CONTRACT.md §8 defines them."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import opt_out_phone
from tests.audiences.helpers import add_customer, add_order, audience_sizes
from tests.factories import ConnectedStoreFixture


def _audiences(client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]) -> dict:
    return audience_sizes(client, shop.profile.id, owner)


def test_each_segment_by_its_definition(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    store = shop.store
    add_customer(session, store, email="idle@example.com")  # no order: only `all`
    fresh = add_customer(session, store, email="fresh@example.com", phone="+14155550101")
    add_order(session, store, fresh, days_ago=3, price=500)  # buyers, new
    loyal = add_customer(session, store, phone="+14155550102")
    for days in (200, 120, 90):  # repeat and lapsed
        add_order(session, store, loyal, days_ago=days, price=4000)
    twice = add_customer(session, store, email="twice@example.com")
    add_order(session, store, twice, days_ago=100, price=100)
    add_order(session, store, twice, days_ago=10, price=100)  # not lapsed: one within 60 days
    old_pair = add_customer(session, store, email="pair@example.com")
    add_order(session, store, old_pair, days_ago=80, price=300)
    add_order(session, store, old_pair, days_ago=61, price=300)  # lapsed, not repeat
    # Another currency: spent the most, but not in the profile's most used currency.
    euro = add_customer(session, store, email="euro@example.com")
    add_order(session, store, euro, days_ago=40, price=999_999, currency="EUR")
    # Someone else's orders of another profile do not count here.
    counts = _audiences(client, shop, owner)
    assert counts["all"] == (6, 5, 2)
    assert counts["buyers"] == (5, 4, 2)
    assert counts["new"] == (1, 1, 1)
    assert counts["repeat"] == (1, 0, 1)
    assert counts["lapsed"] == (2, 1, 1)
    # ceil(5 / 5) = 1 buyer: the loyal one, 12,000 USD in total.
    assert counts["top"] == (1, 0, 1)


def test_top_is_a_fifth_of_buyers_rounded_up(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    for i in range(6):
        customer = add_customer(session, shop.store, email=f"b{i}@example.com")
        add_order(session, shop.store, customer, days_ago=5, price=100 * (i + 1))
    assert _audiences(client, shop, owner)["top"] == (2, 2, 0)  # ceil(6 / 5)


def test_opted_out_customers_are_not_counted(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    stays = add_customer(session, shop.store, email="stays@example.com")
    add_order(session, shop.store, stays, days_ago=1)
    leaves = add_customer(session, shop.store, phone="+14155550199")
    add_order(session, shop.store, leaves, days_ago=1)
    assert _audiences(client, shop, owner)["buyers"] == (2, 1, 1)
    assert opt_out_phone(session, "+14155550199") == 1
    session.commit()
    counts = _audiences(client, shop, owner)
    assert counts["buyers"] == (1, 1, 0)
    assert counts["all"] == (1, 1, 0)


def test_another_merchants_profile_answers_404(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    response = client.get("/merchant/api/profiles/not-mine/audiences", headers=owner)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "not_found"
    assert client.get(f"/merchant/api/profiles/{shop.profile.id}/audiences").status_code == 401
