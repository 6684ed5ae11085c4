"""Journaling on the event loop (orders/intake/journal_append.py): the thread's answers, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.orders.facts import facts_of, from_journal, journal_text
from partnerlink.orders.intake.journal import JOURNALED, OrderIntake
from partnerlink.orders.models import JournaledOrder
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderAnswer, OrderPost
from partnerlink.orders.tasks import apply_journaled_orders
from partnerlink.problems import InvalidToken, Unavailable
from tests.conftest import ON_POSTGRES
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body, orders, run_posts

pytestmark = pytest.mark.skipif(not ON_POSTGRES, reason="the asyncio connection is PostgreSQL's")


def quick(app: FastAPI, *batches: Sequence[OrderPost]) -> list[list[OrderAnswer] | None]:
    """Each batch through the app's event-loop journal, on one loop, then closed."""
    pipeline = app.state.orders_pipeline

    async def run() -> list[list[OrderAnswer] | None]:
        try:
            return [await pipeline.quick(list(batch)) for batch in batches]
        finally:
            await pipeline.close()

    answers: list[list[OrderAnswer] | None] = asyncio.run(run())
    return answers


def kinds(outcomes: Sequence[OrderAnswer] | None) -> list[Any]:
    assert outcomes is not None
    return [value if ok else type(value) for ok, value in outcomes]


def journaled(session: Session) -> list[JournaledOrder]:
    rows = list(session.scalars(select(JournaledOrder).order_by(JournaledOrder.id)))
    session.rollback()
    return rows


def test_a_batch_is_accepted_and_refused_as_on_the_thread_and_kept_in_arrival_order(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    revoked = create_connected_store(session, email="revoked@example.com", pos_type="revoked-pos")
    expired = create_connected_store(session, email="expired@example.com", pos_type="expired-pos")
    session.execute(
        text("UPDATE connections SET revoked_at = :now WHERE store_id = :id"),
        {"now": utcnow(), "id": revoked.store.id},
    )
    session.execute(
        text(
            "UPDATE tokens SET expires_at = :past WHERE connection_id IN"
            " (SELECT id FROM connections WHERE store_id = :id)"
        ),
        {"past": utcnow() - timedelta(minutes=1), "id": expired.store.id},
    )
    session.commit()
    session.close()

    def posts(prefix: str) -> list[OrderPost]:
        tokens = [
            shop.access_token,
            "plk_at_unknown",
            shop.access_token,
            revoked.access_token,
            expired.access_token,
            shop.refresh_token,  # a live token, of the wrong kind
            shop.access_token,
        ]
        return [
            OrderPost(token, OrderIn.model_validate(order_body(f"{prefix}-{n}")))
            for n, token in enumerate(tokens)
        ]

    expected = [JOURNALED, InvalidToken, JOURNALED, InvalidToken, InvalidToken, InvalidToken]
    expected.append(JOURNALED)
    [on_the_loop] = quick(app, posts("L"))
    assert kinds(on_the_loop) == expected
    # The thread's handler, on the same batch (long: journaled without asking either).
    on_the_thread = run_posts(app, OrderIntake(app.state.settings), posts("T"))
    assert [value if value is JOURNALED else type(value) for value in on_the_thread] == expected

    # Ids in arrival order; each row the order's facts, under its own store.
    rows = journaled(session)
    loop_rows = [row for row in rows if from_journal(row.body).order_id.startswith("L-")]
    assert [from_journal(row.body).order_id for row in loop_rows] == ["L-0", "L-2", "L-6"]
    assert {(row.store_id, row.profile_id) for row in loop_rows} == {
        (shop.store.id, shop.profile.id)
    }
    first = posts("L")[0]
    assert from_journal(loop_rows[0].body) == facts_of(first.order)

    assert apply_journaled_orders(app.state.sessionmaker, app.state.settings, gather_seconds=0)
    assert {"L-0", "L-2", "L-6"} <= {order.order_id for order in orders(session)}


def test_each_order_is_kept_as_its_journal_form_exactly(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    """The journal forms travel unescaped inside the statement's JSON: what is stored is
    their text, character for character, whatever the order holds."""
    session.close()
    awkward = {
        "quote": 'say "hi" \\ back\\slash',
        "lines": "a\nb\u2028c\td",
        "text": "Zoë 🍕 中文",
        "nested": {"list": [1, 2.5, None, True, {"ü": ""}]},
    }
    posts = [
        OrderPost(
            shop.access_token,
            OrderIn.model_validate(
                order_body(f"X-{n}", customerFirstName='An "Ann"', orderDetails=awkward)
            ),
        )
        for n in range(3)
    ]
    [outcomes] = quick(app, posts)
    assert kinds(outcomes) == [JOURNALED] * 3
    bodies = [row.body for row in journaled(session)]
    assert bodies == [journal_text(facts_of(post.order)) for post in posts]


def test_a_lost_connection_refuses_the_batch_retryably_and_the_next_one_reconnects(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    session.close()
    pipeline = app.state.orders_pipeline

    def two(prefix: str) -> list[OrderPost]:
        return [
            OrderPost(shop.access_token, OrderIn.model_validate(order_body(f"{prefix}-{n}")))
            for n in range(2)
        ]

    async def run() -> list[list[OrderAnswer] | None]:
        answers = [await pipeline.quick(two("A"))]
        pid = pipeline.quick.__self__.connection.info.backend_pid
        with app.state.engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            conn.commit()
        answers.append(await pipeline.quick(two("B")))  # on the dead connection
        answers.append(await pipeline.quick(two("C")))  # on a new one
        await pipeline.close()
        return answers

    first, lost, again = asyncio.run(run())
    assert kinds(first) == [JOURNALED, JOURNALED]
    assert kinds(lost) == [Unavailable, Unavailable]
    assert kinds(again) == [JOURNALED, JOURNALED]
    ids = [from_journal(row.body).order_id for row in journaled(session)]
    assert ids == ["A-0", "A-1", "C-0", "C-1"]


def test_a_lone_order_of_a_quiet_process_is_left_to_the_thread(
    app: FastAPI, shop: ConnectedStoreFixture, session: Session
) -> None:
    session.close()
    lone = [OrderPost(shop.access_token, OrderIn.model_validate(order_body("Q-1")))]
    assert quick(app, lone) == [None]
    assert journaled(session) == []
