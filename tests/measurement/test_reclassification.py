"""The conversion class is a function of the stored data, whatever order it arrives in
(CONTRACT.md §6): touches after orders, older orders after newer ones, customers after
the touches that name them, a campaign's windows changed after its touches (§16)."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.measurement.models import Campaign
from partnerlink.measurement.service import change_windows, create_campaign, import_touch_lines
from partnerlink.orders.models import Order, Touch
from partnerlink.orders.tasks import apply_journaled_orders
from partnerlink.settings import Settings
from tests.customers.conftest import ingest
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import PHONE, order_body, orders, post, stored_order

START = datetime(2024, 5, 1, tzinfo=UTC)
# Each campaign's windows (click, view) in days, as created; some change during a test.
WINDOWS = {"c0": (7, 1), "c1": (2, 0), "c2": (30, 3)}


def sha(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


def import_touches(session: Session, profile_id: str, touches: list[dict[str, Any]]) -> int:
    lines = [json.dumps({"profileId": profile_id, **t}).encode() for t in touches]
    result = import_touch_lines(session, lines, default_click_days=7)
    session.commit()
    assert result.rejected == 0, result.rejections
    return result.reclassified


def send(client: TestClient, shop: ConnectedStoreFixture, order_id: str, **fields: Any) -> None:
    response = post(client, shop.auth, order_body(order_id, **fields))
    assert response.status_code == 200, response.text


Classes = dict[str, tuple[str, str | None, str | None]]  # order id: class, campaign, kind


def expected_classes(session: Session) -> Classes:
    """The written rule, applied to what is stored, independently of the service's code:
    a touch counts for the orders at most its campaign's window of its kind after it."""
    customers = {c.id: c for c in session.scalars(select(Customer))}
    touches = list(session.scalars(select(Touch)))
    all_orders = list(session.scalars(select(Order)))
    windows = {
        c.campaign_id: {"click": c.click_window_days, "view": c.view_window_days}
        for c in session.scalars(select(Campaign))
    }
    session.rollback()
    expected: Classes = {}
    for order in all_orders:
        if order.customer_id is None:
            expected[order.order_id] = ("anonymous", None, None)
            continue
        customer = customers[order.customer_id]
        email, phone = sha(customer.email), sha(customer.phone_number)
        qualifying = [
            t
            for t in touches
            if t.profile_id == order.profile_id
            and (
                (email is not None and t.email_sha256 == email)
                or (phone is not None and t.phone_sha256 == phone)
            )
            and t.touched_at <= order.ordered_at
            and order.ordered_at - t.touched_at <= timedelta(days=windows[t.campaign_id][t.kind])
        ]
        if not qualifying:
            expected[order.order_id] = ("organic", None, None)
            continue
        latest = max(qualifying, key=lambda t: (t.touched_at, t.campaign_id, t.kind == "click"))
        earlier = any(
            o.customer_id == order.customer_id and o.ordered_at < order.ordered_at
            for o in all_orders
        )
        conversion = "returning" if earlier else "new"
        expected[order.order_id] = (conversion, latest.campaign_id, latest.kind)
    return expected


def stored_classes(session: Session) -> Classes:
    return {o.order_id: (o.conversion, o.campaign_id, o.touch_kind) for o in orders(session)}


@pytest.mark.parametrize(
    ("seed", "batched", "resent"),
    [
        (1, False, False),
        (2, False, False),
        (3, False, False),
        (4, True, False),
        (5, True, False),
        (6, True, False),
        (11, False, True),
        (17, False, True),
        (24, True, True),
        (34, True, True),
    ],
)
def test_classes_hold_whatever_order_the_data_arrives_in(
    client: TestClient,
    app: FastAPI,
    shop: ConnectedStoreFixture,
    session: Session,
    seed: int,
    batched: bool,
    resent: bool,
) -> None:
    """`batched`: the orders between two touch files go as one batch (POST
    /v1/orders/batch), stored together (orders/upsert.py's rounds on PostgreSQL).
    `resent`: a third of the orders re-send an earlier order id with another createdAt
    and perhaps another customer (the stored version is the last one sent), so orders
    move later, earlier, and from one customer to another. Touches are clicks or views of
    three campaigns with windows of their own, two of which change on the way."""
    rng = random.Random(seed)
    for campaign_id, (click, view) in WINDOWS.items():
        create_campaign(
            session,
            profile_id=shop.profile.id,
            campaign_id=campaign_id,
            name=campaign_id,
            starts_at=START,
            ends_at=None,
            holdout_percent=0,
            click_window_days=click,
            view_window_days=view,
        )
    session.commit()
    people = [(f"p{i}@example.com", f"+1415555{i:04d}") for i in range(6)]

    def moment() -> str:
        return (START + timedelta(hours=rng.randrange(0, 24 * 20))).isoformat()

    events: list[tuple[str, Any]] = []
    for n in range(36):
        email, phone = rng.choice(people)
        shape = rng.random()
        fields: dict[str, Any] = {"createdAt": moment(), "updatedAt": None}
        if shape < 0.1:  # anonymous
            fields.update(customerEmail=None, customerPhoneNumber=None)
        elif shape < 0.35:
            fields.update(customerEmail=email, customerPhoneNumber=None)
        else:
            fields.update(customerEmail=email, customerPhoneNumber=phone)
        order_id = f"o{n}"
        if resent and n > 0 and rng.random() < 0.35:
            order_id = f"o{rng.randrange(n)}"
        events.append(("order", (order_id, fields)))
    for _n in range(8):
        batch = []
        for _ in range(rng.randrange(1, 4)):
            email, phone = rng.choice(people)
            who: dict[str, str | None] = rng.choice(
                [{"email": email}, {"phoneNumber": phone}, {"emailSha256": sha(email)}]
            )
            touch = {"campaignId": f"c{rng.randrange(3)}", "touchedAt": moment(), **who}
            batch.append(
                touch | {"kind": rng.choice(["click", "view"])} if rng.random() < 0.7 else touch
            )
        events.append(("touches", batch))
    events += [("windows", ("c0", rng.randrange(1, 15), None)), ("windows", ("c1", 5, 2))]
    rng.shuffle(events)

    waiting: list[dict[str, Any]] = []

    def send_waiting() -> None:
        if waiting:
            answer = client.post("/v1/orders/batch", headers=shop.auth, json={"orders": waiting})
            assert answer.status_code == 200, answer.text
            assert {r["status"] for r in answer.json()["results"]} == {200}
            waiting.clear()
            # A long batch is journaled (orders/intake/journal.py): applied before the next data.
            apply_journaled_orders(app.state.sessionmaker, app.state.settings, gather_seconds=0)

    for kind, payload in events:
        if kind == "order" and batched:
            waiting.append(order_body(payload[0], **payload[1]))
        elif kind == "order":
            send(client, shop, payload[0], **payload[1])
        elif kind == "windows":
            send_waiting()
            campaign_id, click, view = payload
            found = session.scalars(select(Campaign).where(Campaign.campaign_id == campaign_id))
            change_windows(session, found.one(), click_days=click, view_days=view)
            session.commit()
        else:
            send_waiting()
            import_touches(session, shop.profile.id, payload)
    send_waiting()

    stored = stored_classes(session)
    assert stored == expected_classes(session)
    classes = {conversion for conversion, _, _ in stored.values()}
    assert "organic" in classes and classes & {"new", "returning"}, classes


def test_touch_after_order_makes_it_new_and_counts_it(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    send(client, shop, "1", createdAt="2024-05-10T12:00:00Z")
    assert stored_order(session, "1").conversion == "organic"
    touch = {"campaignId": "spring", "touchedAt": "2024-05-09T12:00:00Z"}
    assert import_touches(session, shop.profile.id, [{**touch, "email": "ADA@example.com"}]) == 1
    order = stored_order(session, "1")
    assert (order.conversion, order.campaign_id) == ("new", "spring")
    # The same touch again changes nothing: nothing re-classified.
    assert import_touches(session, shop.profile.id, [{**touch, "email": "ada@example.com"}]) == 0


def test_older_order_sent_after_a_newer_one_makes_the_newer_returning(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    import_touches(
        session,
        shop.profile.id,
        [{"campaignId": "spring", "touchedAt": "2024-05-08T00:00:00Z", "email": "ada@example.com"}],
    )
    send(client, shop, "late", createdAt="2024-05-10T12:00:00Z")
    assert stored_order(session, "late").conversion == "new"
    send(client, shop, "early", createdAt="2024-05-09T12:00:00Z")
    assert stored_order(session, "early").conversion == "new"
    assert stored_order(session, "late").conversion == "returning"


def test_customer_appearing_after_the_touches_naming_them(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    phone_hash = sha("+14155550123")
    imported = import_touches(
        session,
        shop.profile.id,
        [{"campaignId": "summer", "touchedAt": "2024-05-09T00:00:00Z", "phoneSha256": phone_hash}],
    )
    assert imported == 0  # no customer yet: the touch is kept
    # First known by email only, then the phone arrives with a later order.
    send(client, shop, "1", createdAt="2024-05-10T12:00:00Z", customerPhoneNumber=None)
    assert stored_order(session, "1").conversion == "organic"
    send(client, shop, "2", createdAt="2024-05-11T12:00:00Z")
    assert (stored_order(session, "1").conversion, stored_order(session, "2").conversion) == (
        "new",
        "returning",
    )


def test_upload_giving_a_customer_a_phone_reclassifies_their_orders(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    shop: ConnectedStoreFixture,
    session: Session,
) -> None:
    """A customer file that gives a known customer the phone a touch named: their orders
    match that touch from then on, in the upload's own transaction."""
    phone_hash = sha("+14155550123")
    touch = {"campaignId": "summer", "touchedAt": "2024-05-09T00:00:00Z", "phoneSha256": phone_hash}
    assert import_touches(session, shop.profile.id, [touch]) == 0
    send(client, shop, "1", createdAt="2024-05-10T12:00:00Z", customerPhoneNumber=None)
    send(client, shop, "2", createdAt="2024-05-11T12:00:00Z", customerPhoneNumber=None)
    assert {o.conversion for o in orders(session)} == {"organic"}
    session.rollback()

    status = ingest(
        client, app, settings, shop, [{"email": "ada@example.com", "phoneNumber": "+14155550123"}]
    )
    assert (status["status"], status["updated"]) == ("done", 1)
    assert stored_classes(session) == {
        "1": ("new", "summer", "click"),
        "2": ("returning", "summer", "click"),
    }
    assert stored_classes(session) == expected_classes(session)
    # The same file again changes no identifier: nothing is classified again.
    session.rollback()
    ingest(
        client, app, settings, shop, [{"email": "ada@example.com", "phoneNumber": "+14155550123"}]
    )
    assert stored_classes(session) == expected_classes(session)


def two_touched_orders(client: TestClient, shop: ConnectedStoreFixture, session: Session) -> None:
    """Ada, touched by a campaign, orders twice: "first", then "second" (`returning`)."""
    import_touches(
        session,
        shop.profile.id,
        [{"campaignId": "spring", "touchedAt": "2024-05-08T00:00:00Z", "email": "ada@example.com"}],
    )
    send(client, shop, "first", createdAt="2024-05-09T12:00:00Z", updatedAt=None)
    send(client, shop, "second", createdAt="2024-05-10T12:00:00Z", updatedAt=None)
    assert stored_order(session, "second").conversion == "returning"


def test_first_order_resent_later_makes_the_next_one_new(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    two_touched_orders(client, shop, session)
    # The partner corrects the first order's time: it now comes after the second.
    send(client, shop, "first", createdAt="2024-05-11T12:00:00Z", updatedAt=None)
    assert stored_order(session, "second").conversion == "new"
    assert stored_order(session, "first").conversion == "returning"


def test_order_resent_with_another_customer_leaves_the_first_one_new(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    two_touched_orders(client, shop, session)
    # The first order was keyed to the wrong person: re-sent with another customer.
    send(
        client,
        shop,
        "first",
        createdAt="2024-05-09T12:00:00Z",
        updatedAt=None,
        customerEmail="grace@example.com",
        customerPhoneNumber=None,
    )
    assert stored_order(session, "second").conversion == "new"
    assert stored_order(session, "first").conversion == "organic"


def test_a_hash_counts_only_in_its_own_field(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    """`emailSha256` is an email's hash: the customer's phone hash sent there names nobody,
    for the order's own classification (the upsert) and for the re-classification a
    touch brings alike (SQLite's in-process form matched either hash in either field)."""
    phone_hash = sha(PHONE)
    send(client, shop, "1", createdAt="2024-05-10T12:00:00Z")
    misfiled = {"campaignId": "spring", "touchedAt": "2024-05-09T12:00:00Z"}
    assert import_touches(session, shop.profile.id, [{**misfiled, "emailSha256": phone_hash}]) == 0
    assert stored_order(session, "1").conversion == "organic"
    send(client, shop, "2", createdAt="2024-05-11T12:00:00Z")
    assert stored_order(session, "2").conversion == "organic"
    # In its own field the same hash names the customer: both orders are the campaign's.
    filed = {"campaignId": "spring", "touchedAt": "2024-05-09T12:00:00Z"}
    assert import_touches(session, shop.profile.id, [{**filed, "phoneSha256": phone_hash}]) == 2
    assert [stored_order(session, o).campaign_id for o in ("1", "2")] == ["spring", "spring"]
