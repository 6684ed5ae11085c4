"""A batch's orders upserted together (orders/upsert.py) store what one after another
stores: on PostgreSQL each round of the batch is one statement (db/sets.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.orders.conversion import identifier_hash
from partnerlink.orders.intake.journal import OrderIntake, journal_orders
from partnerlink.orders.models import Order, Touch
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost, accept_orders
from partnerlink.orders.tasks import apply_journaled_orders
from partnerlink.orders.upsert import rounds
from partnerlink.receipts.models import Receipt
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body, run_posts, with_status

ANN, BOB, CARLA, DAN = "ann@example.com", "bob@example.com", "carla@example.com", "dan@example.com"
ANN_PHONE = "+14155550101"


def _order(
    order_id: str, email: str | None, created: str, updated: str, **more: Any
) -> dict[str, Any]:
    return order_body(
        order_id,
        customerEmail=email,
        customerPhoneNumber=more.pop("phone", None),
        createdAt=created,
        updatedAt=updated,
        **more,
    )


# In batch order. Every way an order of a batch depends on an earlier one: the same order
# again (newer, then an older re-send that must not apply), the same customer again with an
# older createdAt (the later order becomes returning), a customer created by the batch and
# matched by its next order, by email and by phone; touches by email and by phone, a tie
# between two campaigns, one outside the window; an anonymous order.
BATCH = [
    _order("O-1", ANN, "2024-05-02T10:00:00Z", "2024-05-02T10:05:00Z", phone=ANN_PHONE),
    _order("O-2", ANN, "2024-05-01T09:00:00Z", "2024-05-01T09:05:00Z"),
    _order(
        "O-1",
        ANN,
        "2024-05-02T10:00:00Z",
        "2024-05-02T11:00:00Z",
        orderPrice="3100",
        phone=ANN_PHONE,
    ),
    _order("O-3", BOB, "2024-05-03T10:00:00Z", "2024-05-03T12:00:00Z", phone="+14155550102"),
    _order("O-3", BOB, "2024-05-03T10:00:00Z", "2024-05-03T11:00:00Z", orderPrice="1"),
    _order("O-4", None, "2024-05-03T10:00:00Z", "2024-05-03T10:00:00Z"),
    with_status(_order("O-5", CARLA, "2024-05-04T10:00:00Z", "2024-05-04T10:00:00Z"), "OPEN"),
    _order("O-5", CARLA, "2024-05-04T10:00:00Z", "2024-05-04T10:30:00Z", phone="+14155550103"),
    _order("O-6", DAN, "2024-05-05T10:00:00Z", "2024-05-05T10:00:00Z"),
    _order("O-7", DAN, "2024-05-05T09:00:00Z", "2024-05-05T09:00:00Z"),
    _order("O-8", None, "2024-05-06T10:00:00Z", "2024-05-06T10:00:00Z", phone=ANN_PHONE),
]
TOUCHES = [
    ("by-email", identifier_hash(ANN), None, datetime(2024, 4, 28, tzinfo=UTC)),
    ("by-phone", None, identifier_hash(ANN_PHONE), datetime(2024, 4, 29, tzinfo=UTC)),
    ("tie-a", identifier_hash(BOB), None, datetime(2024, 5, 1, tzinfo=UTC)),
    ("tie-b", identifier_hash(BOB), None, datetime(2024, 5, 1, tzinfo=UTC)),
    ("too-old", identifier_hash(CARLA), None, datetime(2023, 1, 1, tzinfo=UTC)),
    ("dan", identifier_hash(DAN), None, datetime(2024, 5, 4, tzinfo=UTC)),
]


def _shop(session: Session, name: str) -> ConnectedStoreFixture:
    shop = create_connected_store(
        session, ereceipt=True, green_invoices=True, email=f"{name}@example.com", pos_type=name
    )
    for campaign, email, phone, at in TOUCHES:
        session.add(
            Touch(
                profile_id=shop.profile.id,
                campaign_id=campaign,
                email_sha256=email,
                phone_sha256=phone,
                touched_at=at,
            )
        )
    session.commit()
    return shop


def _stored(session: Session, shop: ConnectedStoreFixture) -> dict[str, tuple[Any, ...]]:
    """Each order of the shop's profile as the tests compare it, by the partner's order id."""
    receipts = {
        receipt.order_pk
        for receipt in session.scalars(select(Receipt).where(Receipt.profile_id == shop.profile.id))
    }
    rows = session.execute(
        select(Order, Customer.email)
        .outerjoin(Customer, Customer.id == Order.customer_id)
        .where(Order.profile_id == shop.profile.id)
    )
    return {
        order.order_id: (
            order.order_price,
            order.order_status,
            order.conversion,
            order.campaign_id,
            email,
            order.id in receipts,
        )
        for order, email in rows
    }


def test_a_batch_stores_what_the_same_orders_one_after_another_store(
    app: FastAPI, session: Session
) -> None:
    alone, journaled, at_once = (_shop(session, name) for name in ("alone", "journal", "batch"))
    session.close()  # SQLite: the app's one connection must be free
    settings = app.state.settings

    def posts(shop: ConnectedStoreFixture) -> list[OrderPost]:
        return [
            OrderPost(shop.access_token, OrderIn.model_validate_json(json.dumps(body)))
            for body in BATCH
        ]

    # A quiet process stores a lone order at once, row by row.
    one_by_one = [run_posts(app, OrderIntake(settings), [one])[0] for one in posts(alone)]
    run_posts(app, journal_orders, posts(journaled))
    assert apply_journaled_orders(app.state.sessionmaker, settings, gather_seconds=0) == len(BATCH)
    batch: Callable[..., Any] = lambda sql, p: accept_orders(sql, p, settings=settings)  # noqa: E731
    together = run_posts(app, batch, posts(at_once))
    # An order's receipt is queued once, by its first version that is due one.
    queued = [stored.receipt_queued for stored in one_by_one]  # type: ignore[attr-defined]
    assert queued == [True, False, False, True, False, False, False, True, False, False, True]
    assert [stored.receipt_queued for stored in together] == queued  # type: ignore[attr-defined]

    expected = _stored(session, alone)
    # The cases above are what they say (so that the comparison means something).
    assert expected["O-1"][:4] == (3100, "CLOSED", "returning", "by-phone")
    assert expected["O-2"][2:4] == ("new", "by-phone")  # its customer has the phone now
    assert expected["O-3"][0] == 2400 and expected["O-3"][2:4] == ("new", "tie-b")
    assert expected["O-4"][2:] == ("anonymous", None, None, False)
    assert expected["O-5"][1:] == ("CLOSED", "organic", None, CARLA, True)
    assert expected["O-6"][2] == "returning" and expected["O-7"][2] == "new"
    assert _stored(session, journaled) == expected
    assert _stored(session, at_once) == expected
    for shop in (alone, journaled, at_once):
        count = session.scalars(select(Customer).where(Customer.profile_id == shop.profile.id))
        assert len(list(count)) == 4


_ORDERS = st.lists(
    st.tuples(st.sampled_from("abcd"), st.one_of(st.none(), st.integers(1, 4))), max_size=40
)


@given(_ORDERS)
def test_rounds_keep_what_one_order_reads_of_another_in_arrival_order(
    picks: Sequence[tuple[str, int | None]],
) -> None:
    columns = [
        {"store_id": "s", "partner_id": "p", "order_id": key, "profile_id": "pr", "customer_id": c}
        for key, c in picks
    ]
    grouped = rounds(columns)
    assert sorted(p for group in grouped for p in group) == list(range(len(columns)))
    round_of = {p: number for number, group in enumerate(grouped) for p in group}
    for group in grouped:
        assert group == sorted(group) and group  # arrival order within a round, none empty
        keys = [picks[p][0] for p in group]
        customers = [picks[p][1] for p in group if picks[p][1] is not None]
        assert len(set(keys)) == len(keys) and len(set(customers)) == len(customers)
    for later, (key, customer) in enumerate(picks):
        for earlier in range(later):
            shares = picks[earlier][0] == key or (
                customer is not None and picks[earlier][1] == customer
            )
            if shares:
                assert round_of[earlier] < round_of[later]
