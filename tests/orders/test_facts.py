"""An order journaled as its facts is stored exactly as the same order stored at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from partnerlink.orders.facts import OrderFacts, facts_of, from_journal, journal_text
from partnerlink.orders.intake.journal import JOURNALED, OrderIntake
from partnerlink.orders.queries import UPDATED_COLUMNS
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost, StoredOrder
from partnerlink.orders.tasks import apply_journaled_orders
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, orders, run_posts

# Bodies that exercise every field's form: offsets and fractions of seconds, a missing
# updatedAt, explicit nulls, no details, unknown keys of any JSON type, a local store
# phone and a lower-case country and currency, text beyond ASCII.
VARIED = [
    order_body("F-1"),
    order_body("F-2", createdAt="2024-05-01T12:30:00.123456+05:30", updatedAt=None),
    order_body(
        "F-3",
        createdAt="2024-12-31T23:59:59-08:00",
        orderCurrency="eur",
        customerFirstName="Zoë 🍕",
        customerLastName=None,
        customerPostalCode="75001",
        orderDetails={
            "orderStatus": "CLOSED",
            "tableNumber": 7,
            "tip": 1.25,
            "big": 2**70,
            "nested": {"a": [1, "two", None, True, {"ü": "é\n"}]},
            "orderItems": [{"itemId": "x", "itemPrice": "-100", "modifiers": ["oat"]}],
        },
    ),
    {
        key: value
        for key, value in order_body("F-4", createdAt="2024-05-01 12:30").items()
        if key != "orderDetails"
    },
    order_body(
        "F-5",
        store={
            "storeName": "Bistro Central",
            "storeAddress": "1 Main Street",
            "storeCountryCode": "us",
            "storePhoneNumber": "(217) 555-0100",
            "storeCurrency": "usd",
        },
    ),
]


@pytest.mark.parametrize("body", VARIED, ids=[body["orderId"] for body in VARIED])
def test_the_journal_form_reads_back_to_the_same_facts(body: dict[str, Any]) -> None:
    facts = facts_of(OrderIn.model_validate_json(json.dumps(body)))
    assert_same(from_journal(journal_text(facts)), facts)


def assert_same(read: OrderFacts, facts: OrderFacts) -> None:
    assert read == facts
    # Equal datetimes may differ in offset: the offset is stored with the order.
    assert read.created_at.utcoffset() == facts.created_at.utcoffset()


_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(_text.map(lambda t: t[:200]), min_size=3, max_size=3),
    extras=st.dictionaries(
        _text.filter(lambda k: k not in {"orderStatus", "orderType"}), _json_value, max_size=4
    ),
    minutes=st.integers(min_value=-14 * 60, max_value=14 * 60),
    micros=st.integers(min_value=0, max_value=999_999),
)
def test_any_valid_order_reads_back_from_the_journal(
    names: list[str], extras: dict[str, Any], minutes: int, micros: int
) -> None:
    sign = "+" if minutes >= 0 else "-"
    offset = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    body = order_body(
        "H-1",
        createdAt=f"2024-05-01T12:30:00.{micros:06d}{offset}",
        customerFirstName=names[0],
        customerLastName=names[1],
        orderDetails={"orderStatus": names[2][:50], **extras},
    )
    try:
        order = OrderIn.model_validate_json(json.dumps(body))
    except ValueError:  # a value the API refuses (nesting too deep): never journaled
        return
    facts = facts_of(order)
    assert_same(from_journal(journal_text(facts)), facts)


def test_a_row_journaled_as_the_body_received_is_validated_as_a_post() -> None:
    # What servers journaled before orders were journaled as facts.
    sent = json.dumps(order_body("F-6", orderCurrency="usd"))
    assert from_journal(sent) == facts_of(OrderIn.model_validate_json(sent))
    assert from_journal(sent).order_currency == "USD"


def test_a_journal_form_of_an_unknown_version_is_refused() -> None:
    text = journal_text(facts_of(OrderIn.model_validate(order_body("F-7"))))
    with pytest.raises(ValueError, match="unknown form"):
        from_journal("[2" + text[2:])


# Every column an order's sends write, but the time of the write.
_COMPARED = [
    *(column for column in UPDATED_COLUMNS if column != "updated_at"),
    "conversion",
    "campaign_id",
]


def test_journaled_then_applied_stores_what_storing_at_once_stores(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    session.close()  # SQLite: the app's one connection must be free
    settings = app.state.settings

    def post_of(body: dict[str, Any]) -> OrderPost:
        return OrderPost(shop.access_token, OrderIn.model_validate_json(json.dumps(body)))

    for body in VARIED:
        at_once = {**body, "orderId": body["orderId"] + "-at-once"}
        # A quiet process (a new intake) stores a lone order at once.
        [stored] = run_posts(app, OrderIntake(settings), [post_of(at_once)])
        assert isinstance(stored, StoredOrder) and stored.order_pk is not None
        twice = [post_of({**body, "orderId": body["orderId"] + f"-journaled-{n}"}) for n in (1, 2)]
        assert run_posts(app, OrderIntake(settings), twice) == [JOURNALED, JOURNALED]
        assert apply_journaled_orders(app.state.sessionmaker, settings, gather_seconds=0) == 2

    by_id = {order.order_id: order for order in orders(session)}
    for body in VARIED:
        kept = by_id[body["orderId"] + "-at-once"]
        for n in (1, 2):
            applied = by_id[body["orderId"] + f"-journaled-{n}"]
            for column in _COMPARED:
                assert getattr(applied, column) == getattr(kept, column), (body["orderId"], column)
