"""Orders batched in one transaction reuse the token look-up, never stale store facts."""

from __future__ import annotations

import asyncio
from functools import partial

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.orders.pipeline import Pipeline
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost, StoredOrder, accept_orders
from partnerlink.problems import InvalidToken
from partnerlink.receipts.models import Receipt
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import revoke_connection
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body

JAPANESE_LOCAL_MOBILE = "090-1234-5678"  # usable only when the store's country is JP


def run_batch(app: FastAPI, token: str, bodies: list[dict[str, object]]) -> list[object]:
    """Submits the orders at once, so that the pipeline stores them in one transaction."""
    settings = app.state.settings

    async def main() -> list[object]:
        pipeline = Pipeline(
            app.state.engine, slots=1, handler=partial(accept_orders, settings=settings)
        )
        posts = [OrderPost(token=token, order=OrderIn.model_validate(body)) for body in bodies]
        return await asyncio.gather(*(pipeline.run(post) for post in posts), return_exceptions=True)

    return asyncio.run(main())


def test_a_store_snapshot_reaches_the_next_order_of_the_same_batch(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    session.close()  # SQLite: the app's one connection must be free
    moved = order_body(
        "A-1",
        store={"storeName": "Tokyo Bistro", "storeAddress": "1-1 Ginza", "storeCountryCode": "JP"},
    )
    after = order_body("A-2", customerPhoneNumber=JAPANESE_LOCAL_MOBILE, customerEmail=None)
    results = run_batch(app, shop.access_token, [moved, after])
    assert all(isinstance(result, StoredOrder) for result in results), results
    with app.state.sessionmaker() as check:
        receipts = {
            receipt.body.split(":")[0]: receipt.to_phone
            for receipt in check.scalars(select(Receipt).order_by(Receipt.id))
        }
    # The second order saw the store as the first one left it: Japanese name and numbering.
    assert receipts == {"Your receipt from Tokyo Bistro": "+819012345678"}


def test_a_revoked_token_is_refused_by_the_next_batch(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    session.close()
    assert all(
        isinstance(r, StoredOrder) for r in run_batch(app, shop.access_token, [order_body("B-1")])
    )
    with app.state.sessionmaker() as revoking, revoking.begin():
        connection = revoking.scalar(select(Connection))
        assert connection is not None
        revoke_connection(revoking, connection)
    results = run_batch(app, shop.access_token, [order_body("B-2"), order_body("B-3")])
    assert [type(result) for result in results] == [InvalidToken, InvalidToken]


@pytest.mark.parametrize("count", [2, 5])
def test_one_token_serves_every_order_of_a_batch(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture, count: int
) -> None:
    session.close()
    results = run_batch(app, shop.access_token, [order_body(f"C-{n}") for n in range(count)])
    assert all(isinstance(result, StoredOrder) and result.order_pk for result in results)
