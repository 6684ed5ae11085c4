"""The read barrier (orders/deps.py, orders/intake/barrier.py): a route that reads what an
applied order writes first applies the orders acknowledged into the journal before it;
a route that reads none of it leaves them to the worker."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.merchant.sessions import start_session
from partnerlink.orders.models import JournaledOrder
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, orders


@pytest.fixture
def journal_client(settings: Settings) -> Iterator[TestClient]:
    """Every batch journaled, even a single order: the path taken under load."""
    journaled = settings.model_copy(update={"orders_journal_at": 1})
    with TestClient(create_app(journaled)) as test_client:
        yield test_client


def waiting(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(JournaledOrder)) or 0
    session.rollback()  # SQLite: the app's one connection back
    return count


def acknowledge_one(client: TestClient, session: Session, shop: ConnectedStoreFixture) -> None:
    answer = client.post(
        "/v1/orders",
        content=json.dumps(order_body("B-1")),
        headers={**shop.auth, "content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    assert waiting(session) == 1


def merchant_auth(session: Session, shop: ConnectedStoreFixture) -> dict[str, str]:
    started = start_session(session, merchant=shop.merchant, ttl_seconds=3600)
    session.commit()
    return {"Authorization": f"Bearer {started.token}"}


@pytest.mark.parametrize(
    "read",
    [
        "partner: the order",
        "partner: the store",
        "merchant: the store's orders",
        "merchant: the profile's customers",
    ],
)
def test_a_read_of_what_an_order_writes_applies_the_journal_first(
    journal_client: TestClient, session: Session, shop: ConnectedStoreFixture, read: str
) -> None:
    store_id, profile_id = shop.store.id, shop.profile.id
    acknowledge_one(journal_client, session, shop)
    merchant = merchant_auth(session, shop)
    answer = {
        "partner: the order": lambda: journal_client.get(
            "/v1/orders", params={"orderId": "B-1"}, headers=shop.auth
        ),
        "partner: the store": lambda: journal_client.get("/v1/stores", headers=shop.auth),
        "merchant: the store's orders": lambda: journal_client.get(
            f"/merchant/api/stores/{store_id}/orders", headers=merchant
        ),
        "merchant: the profile's customers": lambda: journal_client.get(
            f"/merchant/api/profiles/{profile_id}/customers", headers=merchant
        ),
    }[read]()
    assert answer.status_code == 200, answer.text
    assert waiting(session) == 0
    assert [order.order_id for order in orders(session)] == ["B-1"]


def test_a_route_that_reads_nothing_an_order_writes_leaves_the_journal_to_the_worker(
    journal_client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    acknowledge_one(journal_client, session, shop)
    status = journal_client.get("/v1/auth/token/status", headers=shop.auth)
    assert status.status_code == 200, status.text
    assert waiting(session) == 1
    assert orders(session) == []
