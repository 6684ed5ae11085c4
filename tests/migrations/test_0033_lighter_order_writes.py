"""Migration 0033: fewer keys and index entries written per order, same deletions.

Built on a database of its own at 0032; upgraded to the head and back down. What the
dropped foreign keys did (deleting a profile's or a store's orders, receipts and
journaled orders) is still done by the keys kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.engine.interfaces import ReflectedIndex
from sqlalchemy.orm import Session

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from tests.conftest import ON_POSTGRES
from tests.factories import create_merchant_account, create_profile, create_store
from tests.migrations import database_at

PREVIOUS = "0032"
DROPPED_KEYS = {
    ("orders", "fk_orders_profile_id_profiles"),
    ("order_journal", "fk_order_journal_profile_id_profiles"),
    ("receipts", "fk_receipts_store_id_stores"),
}


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    with database_at(PREVIOUS, tmp_path) as url:
        yield url


def _schema(url: str) -> tuple[set[tuple[str, str | None]], dict[str | None, ReflectedIndex]]:
    engine = make_engine(url)
    inspector = inspect(engine)
    keys = {
        (table, key["name"])
        for table in ("orders", "order_journal", "receipts")
        for key in inspector.get_foreign_keys(table)
    }
    indexes = {index["name"]: index for index in inspector.get_indexes("receipts")}
    engine.dispose()
    return keys, indexes


def _fill(url: str) -> tuple[str, str]:
    engine = make_engine(url)
    with Session(engine) as session:
        profile = create_profile(session, create_merchant_account(session))
        store = create_store(session, profile, green_invoices=True)
        ids = (store.id, profile.id)
    values = {"store": ids[0], "profile": ids[1]}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO orders (id, store_id, profile_id, partner_id, order_id, order_price,"
                " order_currency, ordered_at, details, conversion, received_at, updated_at)"
                " VALUES (1, :store, :profile, 'p', 'A-1', 100, 'USD', '2024-01-01 00:00:00+00',"
                " '{}', 'organic', '2024-01-01 00:00:00+00', '2024-01-01 00:00:00+00')"
            ),
            values,
        )
        conn.execute(
            text(
                "INSERT INTO receipts (id, order_pk, order_id, store_id, profile_id, key_hash,"
                " to_phone, body, link, status, attempts, next_attempt_at, created_at) VALUES"
                " (1, 1, 'A-1', :store, :profile, 'k', '+12025550100', 'b', 'l', 'pending', 0,"
                " '2024-01-01 00:00:00+00', '2024-01-01 00:00:00+00')"
            ),
            values,
        )
        conn.execute(
            text(
                "INSERT INTO order_journal (profile_id, store_id, connection_id, body,"
                " received_at) VALUES (:profile, :store, 'c', '[]', '2024-01-01 00:00:00+00')"
            ),
            values,
        )
    engine.dispose()
    return ids


def test_0033_drops_implied_keys_and_idle_index_entries_and_deletes_as_before(
    database_before: str,
) -> None:
    keys_before, indexes_before = _schema(database_before)
    assert keys_before >= DROPPED_KEYS and "ix_receipts_status" in indexes_before
    _store_id, profile_id = _fill(database_before)

    upgrade(database_before)
    keys, indexes = _schema(database_before)
    assert keys == (keys_before - DROPPED_KEYS if ON_POSTGRES else keys_before)
    assert "ix_receipts_status" not in indexes
    engine = make_engine(database_before)
    with engine.begin() as conn:
        if not ON_POSTGRES:
            conn.execute(text("PRAGMA foreign_keys = ON"))
        # The worker's claim still finds pending receipts by the partial index's terms.
        due = "SELECT id FROM receipts WHERE status = 'pending' AND next_attempt_at <= :now"
        assert conn.execute(text(due), {"now": "2025-01-01 00:00:00+00"}).all() == [(1,)]
        conn.execute(text("DELETE FROM profiles WHERE id = :id"), {"id": profile_id})
        for table in ("orders", "receipts", "order_journal", "stores"):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0, table
    engine.dispose()

    command.downgrade(alembic_config(database_before), PREVIOUS)
    keys_after, indexes_after = _schema(database_before)
    assert keys_after == keys_before
    assert set(indexes_after) == set(indexes_before)
