"""Orders batched in one transaction reuse the token look-up, never stale store facts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.raw import Sql, Statement
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost, StoredOrder, accept_orders
from partnerlink.problems import InvalidToken
from partnerlink.receipts.models import Receipt
from partnerlink.stores import service as store_service
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import revoke_connection
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, run_posts

JAPANESE_LOCAL_MOBILE = "090-1234-5678"  # usable only when the store's country is JP


def run_batch(app: FastAPI, token: str, bodies: list[dict[str, object]]) -> list[object]:
    """Submits the orders at once, so that the pipeline stores them in one transaction."""
    posts = [OrderPost(token=token, order=OrderIn.model_validate(body)) for body in bodies]
    return run_posts(app, partial(accept_orders, settings=app.state.settings), posts)


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
        revoke_connection(revoking, connection, reason="merchant")
    results = run_batch(app, shop.access_token, [order_body("B-2"), order_body("B-3")])
    assert [type(result) for result in results] == [InvalidToken, InvalidToken]


@pytest.mark.parametrize("count", [2, 5])
def test_one_token_serves_every_order_of_a_batch(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture, count: int
) -> None:
    session.close()
    results = run_batch(app, shop.access_token, [order_body(f"C-{n}") for n in range(count)])
    assert all(isinstance(result, StoredOrder) and result.order_pk for result in results)


class CountingSql(Sql):
    """The real Sql on the pipeline's connection, noting every statement it runs."""

    __slots__ = ("ran",)
    ran: list[Statement]

    def row(self, statement: Statement, params: Mapping[str, Any]) -> Any:
        self.ran.append(statement)
        return super().row(statement, params)

    def first_rows(self, statement: Statement, many: Sequence[Mapping[str, Any]]) -> list[Any]:
        self.ran.append(statement)
        return super().first_rows(statement, many)

    def run(self, statement: Statement, params: Mapping[str, Any]) -> int:
        self.ran.append(statement)
        return super().run(statement, params)


def test_a_batch_reads_its_store_with_its_token(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    """Orders carrying store snapshots cost no read of the store besides the token's."""
    store_id = shop.store.id
    session.close()
    settings = app.state.settings
    ran: list[Statement] = []

    def counting(sql: Sql, posts: list[OrderPost]) -> list[tuple[bool, Any]]:
        dialect = "postgresql" if sql.postgres else "sqlite"
        recording = CountingSql(sql.connection, dialect, sql.errors)
        recording.ran = ran
        return accept_orders(recording, posts, settings=settings)

    renamed = {"storeName": "Renamed Bistro", "storeAddress": "1 Main St", "storeCountryCode": "US"}
    bodies = [order_body("D-1", store=renamed), order_body("D-2", store=renamed)]

    posts = [OrderPost(token=shop.access_token, order=OrderIn.model_validate(b)) for b in bodies]
    results = run_posts(app, counting, posts)
    assert all(isinstance(result, StoredOrder) for result in results), results
    assert store_service._STORE_NOW not in ran
    assert ran.count(store_service._STORE_UPDATE) == 1  # the change, written once
    with app.state.sessionmaker() as check:
        assert check.scalar(select(Store.name).where(Store.id == store_id)) == "Renamed Bistro"
