"""The audiences list's counts against the exports: each segment's `customers`, `withEmail`
and `withPhone` are the rows of its export file and the rows with an email or a phone
(every customer here has one), on a varied profile (CONTRACT.md §8)."""

from __future__ import annotations

import csv
import io

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.audiences.queries import SEGMENTS
from tests.audiences.helpers import add_customer, add_order, audience_sizes
from tests.factories import ConnectedStoreFixture


def _exported(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], segment: str
) -> tuple[int, int, int]:
    response = client.get(
        f"/merchant/api/profiles/{shop.profile.id}/audiences/{segment}/export",
        params={"format": "meta"},
        headers=owner,
    )
    assert response.status_code == 200, response.text
    rows = list(csv.DictReader(io.StringIO(response.text)))
    return len(rows), sum(1 for r in rows if r["email"]), sum(1 for r in rows if r["phone"])


def _varied_profile(
    session: Session, shop: ConnectedStoreFixture, latest: str
) -> tuple[str, str, str]:
    """Customers with an email, a phone or both; buyers in three currencies, none with most
    of the orders (USD the most used); anonymous orders; ties of spend; the latest
    order in `latest`. Returns the emails of the customers to opt out, erase, and the
    biggest spender in another currency than USD."""
    store = shop.store
    currencies = ("USD", "USD", "EUR", "GBP", "USD", "EUR", "GBP")
    ages = (1, 5, 20, 45, 70, 95, 130, 200)
    for i in range(36):
        email = f"c{i}@example.com" if i % 3 != 2 else None
        phone = f"+1415555{i:04d}" if i % 3 != 0 else None
        customer = add_customer(session, shop.store, email=email, phone=phone)
        if i % 6 == 5:
            continue  # no order: only `all`
        for k in range(1 + i % 4):  # 1 to 4 orders, from 1 to 200 days ago
            # Prices repeat, so that spends tie around top's cut (then the older first).
            price = 1000 * (1 + (i + k) % 3)
            add_order(
                session,
                store,
                customer,
                days_ago=ages[(i + 3 * k) % len(ages)] + 0.01 * i,
                price=price,
                currency=currencies[(i + k) % len(currencies)],
            )
    big = add_customer(session, store, email="big@example.com", phone="+14155559999")
    add_order(session, store, big, days_ago=2, price=10_000_000, currency="EUR")
    for days in (3, 33, 66):  # without a customer: in no segment
        add_order(session, store, None, days_ago=days, price=5000, currency="GBP")
    add_order(session, store, None, days_ago=0.001, price=100, currency=latest)
    return "c4@example.com", "c7@example.com", "big@example.com"


@pytest.mark.parametrize("latest", ["GBP", "USD"])
def test_list_counts_are_the_exports_rows(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    latest: str,
) -> None:
    opted_out, erased, big_spender = _varied_profile(session, shop, latest)
    base = f"/merchant/api/profiles/{shop.profile.id}/customers"
    response = client.post(f"{base}/opt-out", json={"email": opted_out}, headers=owner)
    assert response.json() == {"optedOut": 1}
    response = client.post(f"{base}/erase", json={"email": erased}, headers=owner)
    assert response.json() == {"erased": 1}
    # The erased person comes back as a customer with an order: never in a segment.
    back = add_customer(session, shop.store, email=erased)
    add_order(session, shop.store, back, days_ago=4, price=2000)

    listed = audience_sizes(client, shop.profile.id, owner)
    assert list(listed) == list(SEGMENTS)
    for segment in SEGMENTS:
        assert listed[segment] == _exported(client, shop, owner, segment), segment
    # Independently of the export: every customer but the opted-out, the erased and the
    # one who came back; `top` is by spend in USD, the most used currency (not a majority),
    # so the EUR big spender, a buyer, is not in it.
    assert listed["all"][0] == 36 + 1 - 2
    assert listed["top"][0] == -(-listed["buyers"][0] // 5)
    response = client.post(f"{base}/opt-out", json={"email": big_spender}, headers=owner)
    assert response.json() == {"optedOut": 1}
    after = audience_sizes(client, shop.profile.id, owner)
    assert after["buyers"][0] == listed["buyers"][0] - 1
    assert after["top"][1:] == _exported(client, shop, owner, "top")[1:]
