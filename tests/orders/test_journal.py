"""Accept-then-process (orders/intake/journal.py): orders journaled under load are durable when
answered, applied once and in arrival order, and seen by every read that follows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from functools import partial

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.cli.common import unit_of_work
from partnerlink.db.base import utcnow
from partnerlink.orders.facts import facts_of, from_journal
from partnerlink.orders.intake.journal import APPLY_BATCH, BUSY_SECONDS, JOURNALED, OrderIntake
from partnerlink.orders.models import JournaledOrder
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost, StoredOrder
from partnerlink.orders.tasks import apply_journaled_orders, apply_when_gathered
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, orders, post, receipts, run_posts, with_status

JAPANESE_LOCAL_MOBILE = "090-1234-5678"


@pytest.fixture
def journal_settings(settings: Settings) -> Settings:
    """Every batch journaled, even a single order: the path taken under load."""
    return settings.model_copy(update={"orders_journal_at": 1})


@pytest.fixture
def journal_app(journal_settings: Settings) -> FastAPI:
    return create_app(journal_settings)


@pytest.fixture
def journal_client(journal_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(journal_app) as test_client:
        yield test_client


def journal(session: Session) -> list[JournaledOrder]:
    rows = list(session.scalars(select(JournaledOrder).order_by(JournaledOrder.id)))
    session.expunge_all()
    session.rollback()  # SQLite: the app's one connection back
    return rows


def test_the_worker_lets_fewer_than_a_batch_gather_before_applying_them(
    journal_client: TestClient,
    journal_app: FastAPI,
    journal_settings: Settings,
    session: Session,
    shop: ConnectedStoreFixture,
) -> None:
    for order_id in ("G-1", "G-2"):
        assert post(journal_client, shop.auth, order_body(order_id)).status_code == 200
    sessions = journal_app.state.sessionmaker
    # Two orders, just acknowledged: left to gather, and the worker told when to look again.
    applied, again = apply_when_gathered(sessions, journal_settings, gather_seconds=60)
    assert applied == 0 and again is not None and 50 < again <= 60
    assert len(journal(session)) == 2
    # Waited 40 of the 60 seconds: about 20 left.
    session.execute(update(JournaledOrder).values(received_at=utcnow() - timedelta(seconds=40)))
    session.commit()
    applied, again = apply_when_gathered(sessions, journal_settings, gather_seconds=60)
    assert applied == 0 and again is not None and 10 < again <= 20
    # The oldest has waited long enough: both applied.
    session.execute(update(JournaledOrder).values(received_at=utcnow() - timedelta(seconds=61)))
    session.commit()
    assert apply_journaled_orders(sessions, journal_settings, gather_seconds=60) == 2
    # Nothing waits: nothing to look at before the poll interval.
    assert apply_when_gathered(sessions, journal_settings, gather_seconds=60) == (0, None)
    assert sorted(order.order_id for order in orders(session)) == ["G-1", "G-2"]


def test_a_full_batch_is_applied_without_gathering(
    journal_client: TestClient,
    journal_app: FastAPI,
    journal_settings: Settings,
    session: Session,
    shop: ConnectedStoreFixture,
) -> None:
    assert post(journal_client, shop.auth, order_body("G-3")).status_code == 200
    [entry] = journal(session)
    # A batch's worth: copies of its row (one order, applied APPLY_BATCH times over).
    for _ in range(APPLY_BATCH - 1):
        session.execute(
            text(
                "INSERT INTO order_journal (profile_id, store_id, connection_id, body,"
                " received_at) SELECT profile_id, store_id, connection_id, body, received_at"
                " FROM order_journal WHERE id = :id"
            ),
            {"id": entry.id},
        )
    session.commit()
    assert len(journal(session)) == APPLY_BATCH
    sessions = journal_app.state.sessionmaker
    assert apply_journaled_orders(sessions, journal_settings, gather_seconds=60) == APPLY_BATCH
    assert [order.order_id for order in orders(session)] == ["G-3"]


def test_an_acknowledged_order_is_journaled_then_seen_by_the_next_read(
    journal_client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    body = order_body("J-1")
    sent = json.dumps(body)
    answer = journal_client.post(
        "/v1/orders", content=sent, headers={**shop.auth, "content-type": "application/json"}
    )
    assert answer.status_code == 200
    assert answer.json() == {"statusCode": 200}

    # Durable before the answer: the order as validated, by the connection that sent it.
    [entry] = journal(session)
    assert from_journal(entry.body) == facts_of(OrderIn.model_validate_json(sent))
    assert entry.profile_id == shop.profile.id
    assert entry.store_id == shop.store.id
    assert entry.failed_at is None
    assert orders(session) == []

    # A read applies what was acknowledged before it: GET /v1/orders finds the order.
    read = journal_client.get("/v1/orders", params={"orderId": "J-1"}, headers=shop.auth)
    assert read.status_code == 200, read.text
    assert read.json()["orderId"] == "J-1"
    assert journal(session) == []
    [stored] = orders(session)
    assert (stored.order_id, stored.order_price, stored.conversion) == ("J-1", 2400, "organic")
    assert len(receipts(session)) == 1


def test_the_worker_applies_journaled_orders_once_and_in_arrival_order(
    journal_client: TestClient,
    journal_app: FastAPI,
    journal_settings: Settings,
    session: Session,
    shop: ConnectedStoreFixture,
) -> None:
    opened = with_status(order_body("J-2", updatedAt="2024-05-01T12:41:00Z"), "OPEN")
    closed = order_body("J-2", updatedAt="2024-05-01T12:41:00Z")  # same time: the later wins
    for body in (opened, closed):
        assert post(journal_client, shop.auth, body).status_code == 200
    assert len(journal(session)) == 2

    sessions = journal_app.state.sessionmaker
    assert apply_journaled_orders(sessions, journal_settings, gather_seconds=0) == 2
    assert apply_journaled_orders(sessions, journal_settings, gather_seconds=0) == 0
    [stored] = orders(session)
    assert stored.order_status == "CLOSED"
    assert len(receipts(session)) == 1  # one SMS for the closed order
    assert journal(session) == []


def test_a_refused_token_journals_nothing(
    journal_client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    refused = post(journal_client, {"Authorization": "Bearer plk_at_unknown"}, order_body("J-3"))
    assert refused.status_code == 403
    assert refused.json()["code"] == "invalid_token"
    assert journal(session) == []


def test_a_short_queue_stores_at_once(
    client: TestClient, app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    """The default: one order at a time (no queue) is stored before the answer."""
    assert app.state.settings.orders_journal_at == 2
    assert post(client, shop.auth, order_body("J-4")).status_code == 200
    assert journal(session) == []
    assert [order.order_id for order in orders(session)] == ["J-4"]


def test_a_long_queue_is_journaled_and_a_store_snapshot_reaches_the_next_order(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    session.close()  # SQLite: the app's one connection must be free
    settings = app.state.settings
    moved = order_body(
        "J-5",
        store={"storeName": "Tokyo Bistro", "storeAddress": "1-1 Ginza", "storeCountryCode": "JP"},
    )
    after = order_body("J-6", customerPhoneNumber=JAPANESE_LOCAL_MOBILE, customerEmail=None)
    posts = [
        OrderPost(token=shop.access_token, order=OrderIn.model_validate(body))
        for body in (moved, after)
    ]
    # Two orders queued together reach the default threshold (2): journaled, not stored.
    assert run_posts(app, OrderIntake(settings), posts) == [JOURNALED, JOURNALED]
    assert orders(session) == []

    assert apply_journaled_orders(app.state.sessionmaker, settings, gather_seconds=0) == 2
    by_body = {receipt.body.split(":")[0]: receipt.to_phone for receipt in receipts(session)}
    # The second order was applied with the store as the first one left it.
    assert by_body == {"Your receipt from Tokyo Bistro": "+819012345678"}


ClockedIntake = tuple[OrderIntake, list[float]]


@pytest.fixture
def clocked(app: FastAPI) -> ClockedIntake:
    """The app's intake on a clock of the test's: set `now[0]`."""
    now = [0.0]
    return OrderIntake(app.state.settings, clock=lambda: now[0]), now


def lone_post(shop: ConnectedStoreFixture, order_id: str) -> OrderPost:
    return OrderPost(shop.access_token, OrderIn.model_validate(order_body(order_id)))


def test_while_orders_wait_in_the_journal_a_single_order_waits_behind_them(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture, clocked: ClockedIntake
) -> None:
    session.close()  # SQLite: the app's one connection must be free
    settings = app.state.settings
    intake, now = clocked
    single = partial(lone_post, shop)

    assert run_posts(app, intake, [single("J-7"), single("J-8")]) == [JOURNALED, JOURNALED]
    # Alone, it would be stored at once; behind journaled orders it is journaled too.
    now[0] = 1.0
    assert run_posts(app, intake, [single("J-9")]) == [JOURNALED]
    assert apply_journaled_orders(app.state.sessionmaker, settings, gather_seconds=0) == 3
    assert [order.order_id for order in orders(session)] == ["J-7", "J-8", "J-9"]
    # The journal empty, a single order is stored at once again.
    [stored] = run_posts(app, intake, [single("J-10")])
    assert isinstance(stored, StoredOrder) and stored.order_pk is not None


def test_a_single_order_is_journaled_while_the_process_is_busy(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture, clocked: ClockedIntake
) -> None:
    session.close()  # SQLite: the app's one connection must be free
    settings = app.state.settings
    intake, now = clocked
    single = partial(lone_post, shop)

    assert run_posts(app, intake, [single("J-13"), single("J-14")]) == [JOURNALED, JOURNALED]
    assert apply_journaled_orders(app.state.sessionmaker, settings, gather_seconds=0) == 2
    # The journal is empty, but a long batch was journaled a moment ago: under load.
    now[0] = BUSY_SECONDS / 2
    assert run_posts(app, intake, [single("J-15")]) == [JOURNALED]
    assert apply_journaled_orders(app.state.sessionmaker, settings, gather_seconds=0) == 1
    # Quiet again: stored before the answer.
    now[0] = BUSY_SECONDS * 2
    [stored] = run_posts(app, intake, [single("J-16")])
    assert isinstance(stored, StoredOrder) and stored.order_pk is not None
    assert [order.order_id for order in orders(session)] == ["J-13", "J-14", "J-15", "J-16"]


def test_an_order_that_cannot_be_applied_is_kept_as_failed_and_stops_no_other(
    journal_client: TestClient,
    journal_app: FastAPI,
    journal_settings: Settings,
    session: Session,
    shop: ConnectedStoreFixture,
) -> None:
    assert post(journal_client, shop.auth, order_body("J-11")).status_code == 200
    # A body that no longer reads as an order (written by hand: the service never does).
    [good] = journal(session)
    session.execute(
        text(
            "INSERT INTO order_journal (profile_id, store_id, connection_id, body, received_at)"
            " SELECT profile_id, store_id, connection_id, :body, received_at FROM order_journal"
        ),
        {"body": '{"orderId": "broken"}'},
    )
    session.commit()
    assert post(journal_client, shop.auth, order_body("J-12")).status_code == 200

    assert (
        apply_journaled_orders(journal_app.state.sessionmaker, journal_settings, gather_seconds=0)
        == 3
    )
    assert sorted(order.order_id for order in orders(session)) == ["J-11", "J-12"]
    [kept] = journal(session)
    assert kept.id != good.id and kept.failed_at is not None
    assert kept.error == "ValidationError"
    # Kept, never retried in a loop, and no read waits for it.
    assert (
        apply_journaled_orders(journal_app.state.sessionmaker, journal_settings, gather_seconds=0)
        == 0
    )
    read = journal_client.get("/v1/orders", params={"orderId": "J-12"}, headers=shop.auth)
    assert read.status_code == 200


def test_the_command_line_sees_journaled_orders(
    journal_settings: Settings, app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    session.close()
    post_ = OrderPost(shop.access_token, OrderIn.model_validate(order_body("J-13")))
    handler = OrderIntake(journal_settings)
    assert run_posts(app, handler, [post_]) == [JOURNALED]
    with unit_of_work(journal_settings) as cli_session:
        count = cli_session.execute(text("SELECT count(*) FROM orders")).scalar_one()
    assert count == 1
    assert journal(session) == []


def test_a_keyed_batch_is_applied_after_the_orders_journaled_before_it(
    journal_client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    """An Idempotency-Key batch is stored in its own transaction, never through the
    journal: the orders journaled before it are applied first, so its version wins."""
    first = order_body("J-14", orderPrice="1000", updatedAt="2024-05-01T12:41:00Z")
    assert post(journal_client, shop.auth, first).status_code == 200
    assert len(journal(session)) == 1
    later = order_body("J-14", orderPrice="1500", updatedAt="2024-05-01T12:41:00Z")
    answer = journal_client.post(
        "/v1/orders/batch",
        headers={**shop.auth, "Idempotency-Key": "journal-1"},
        json={"orders": [later]},
    )
    assert answer.status_code == 200, answer.text
    assert journal(session) == []
    [stored] = orders(session)
    assert stored.order_price == 1500
