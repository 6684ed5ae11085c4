"""The audiences list's counts against the exports: each segment's `customers`, `withEmail`
and `withPhone` are the rows of its export file and the rows with an email or a phone
(every customer here has one), on a varied profile (CONTRACT.md §8)."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from partnerlink.audiences import one_pass
from partnerlink.audiences.queries import SEGMENTS
from partnerlink.audiences.service import audience_scope, digest_key
from tests.audiences.helpers import add_customer, add_order, audience_sizes
from tests.conftest import ON_POSTGRES
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


@pytest.mark.skipif(not ON_POSTGRES, reason="the one pass and its halves are PostgreSQL's")
@pytest.mark.parametrize("latest", ["GBP", "USD"])
def test_a_profile_counted_in_two_halves_counts_as_in_one_pass(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    latest: str,
) -> None:
    """The two halves at once of a large profile (one_pass.py) against the whole pass, on
    the varied profile: ties of spend around top's cut, anonymous orders, an opt-out and
    an erasure."""
    opted_out, erased, _ = _varied_profile(session, shop, latest)
    base = f"/merchant/api/profiles/{shop.profile.id}/customers"
    assert client.post(f"{base}/opt-out", json={"email": opted_out}, headers=owner).is_success
    assert client.post(f"{base}/erase", json={"email": erased}, headers=owner).is_success
    session.commit()
    key = digest_key(client.app.state.settings.signing_key)  # type: ignore[attr-defined]
    most_used = audience_scope(session, shop.profile.id, key)  # USD
    counted = {}
    for currency in ("USD", "EUR", None):
        scope = replace(most_used, currency=currency)
        whole = one_pass.segment_sizes(session.connection(), scope, split_from=None)
        halves = one_pass.segment_sizes(session.connection(), scope, split_from=0)
        assert halves == whole, currency
        assert whole.sizes["top"][0] > 0
        counted[currency] = whole
    # And as the merchant sees it.
    listed = audience_sizes(client, shop.profile.id, owner)
    assert listed == counted[most_used.currency].sizes


@given(
    lower=st.lists(st.tuples(st.integers(-3, 6), st.integers(0, 3)), max_size=12),
    upper=st.lists(st.tuples(st.integers(-3, 6), st.integers(0, 3)), max_size=12),
    share=st.floats(0, 1),
)
def test_top_of_two_halves_is_top_of_the_whole(
    lower: list[tuple[int, int]], upper: list[tuple[int, int]], share: float
) -> None:
    """top_coverage against sorting every buyer: (spend descending, id ascending), the
    lower half's ids all below the upper half's."""
    lower_ranked = sorted(enumerate(lower), key=lambda b: (-b[1][0], b[0]))
    upper_ranked = sorted(enumerate(upper), key=lambda b: (-b[1][0], b[0]))
    size = round(share * (len(lower) + len(upper)))
    everyone = [(spend, 0, i, code) for i, (spend, code) in enumerate(lower)]
    everyone += [(spend, 1, i, code) for i, (spend, code) in enumerate(upper)]
    top = sorted(everyone, key=lambda b: (-b[0], b[1], b[2]))[:size]
    expected = (sum(b[3] & 1 for b in top), sum(b[3] >> 1 for b in top))
    packed_lower = [spend * 4 + code for _, (spend, code) in lower_ranked]
    packed_upper = [spend * 4 + code for _, (spend, code) in upper_ranked]
    assert one_pass.top_coverage(packed_lower, packed_upper, size) == expected
