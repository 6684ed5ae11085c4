"""Migration 0024: receipts get their order's partner id, and no receipt is lost.

Built on a database of its own at 0023, with an order and its receipt; then
upgraded to the head (the column is added in place, never a batch copy that
would take rows referencing receipts' parents with it), and back down.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from tests.factories import create_merchant_account, create_profile, create_store
from tests.migrations import database_at

PREVIOUS = "0023"


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    """A new database at the revision before 0024."""
    with database_at(PREVIOUS, tmp_path) as url:
        yield url


def _add_order_with_receipt(
    conn: Connection, store: tuple[str, str], order_id: str, n: int
) -> None:
    values = {"store": store[0], "profile": store[1], "order_id": order_id, "n": n}
    conn.execute(
        text(
            "INSERT INTO orders (id, store_id, profile_id, partner_id, order_id, order_price,"
            " order_currency, ordered_at, details, conversion, received_at, updated_at)"
            " VALUES (:n, :store, :profile, 'p', :order_id, 100, 'USD',"
            " '2024-01-01 00:00:00+00', '{}', 'organic', '2024-01-01 00:00:00+00',"
            " '2024-01-01 00:00:00+00')"
        ),
        values,
    )
    conn.execute(
        text(
            "INSERT INTO receipts (id, order_pk, store_id, key_hash, to_phone, body, link, status,"
            " attempts, next_attempt_at, created_at) VALUES (:n, :n, :store, :order_id,"
            " '+12025550100', 'b', 'l', 'sent', 1, '2024-01-01 00:00:00+00',"
            " '2024-01-01 00:00:00+00')"
        ),
        values,
    )


def test_existing_receipts_get_their_orders_id_across_0024_and_back(
    database_before: str,
) -> None:
    engine = make_engine(database_before)
    with Session(engine) as session:
        # A store without a connection: today's connections (0025's profile_id) are not 0023's.
        profile = create_profile(session, create_merchant_account(session))
        made = create_store(session, profile, green_invoices=True)
        store = (made.id, made.profile_id)
    with engine.begin() as conn:
        _add_order_with_receipt(conn, store, "A-1", 1)
        _add_order_with_receipt(conn, store, "B/2 é", 2)
    engine.dispose()

    upgrade(database_before)
    engine = make_engine(database_before)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT order_pk, order_id FROM receipts ORDER BY id")).all()
    engine.dispose()
    assert [tuple(row) for row in rows] == [(1, "A-1"), (2, "B/2 é")]

    command.downgrade(alembic_config(database_before), PREVIOUS)
    engine = make_engine(database_before)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM receipts")).scalar_one() == 2
        assert conn.execute(text("SELECT count(*) FROM orders")).scalar_one() == 2
    engine.dispose()
