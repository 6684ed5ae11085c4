"""Migration 0025: connections, tokens and receipts get their profile, and nothing is lost.

Built on a database of its own at 0024 (rows written in SQL: today's models carry the
new columns), upgraded to the head, then back down. On PostgreSQL the composite keys
hold: deleting an order takes its receipt, a token still needs its connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from tests.migrations import database_at

PREVIOUS = "0024"
NOW = "'2024-01-01 00:00:00+00'"
NEW_COLUMN_TABLES = ("connections", "tokens", "receipts")


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    with database_at(PREVIOUS, tmp_path) as url:
        yield url


def _fill(conn: Connection) -> None:
    """Two profiles, a store each with a connection, its token, an order and its receipt."""
    conn.execute(
        text(
            "INSERT INTO merchants (id, email, password_hash, created_at)"
            f" VALUES ('m', 'm@example.com', 'x', {NOW})"
        )
    )
    conn.execute(
        text(
            "INSERT INTO partners (id, name, pos_type, client_id, client_secret_hash, ereceipt,"
            " frame_origins, active, created_at, sandbox, redirect_uris)"
            f" VALUES ('pa', 'Acme', 'acme', 'c', 'x', true, '[]', true, {NOW}, false, '[]')"
        )
    )
    for n in (1, 2):
        values = {"n": n, "profile": f"p{n}", "store": f"s{n}", "conn": f"c{n}"}
        values |= {"hash": f"hash{n}", "key": f"key{n}"}
        for statement in (
            f"INSERT INTO profiles (id, merchant_id, name, created_at) VALUES (:profile, 'm',"
            f" 'P', {NOW})",
            "INSERT INTO stores (id, profile_id, name, address, green_invoices, manual,"
            f" created_at, updated_at, is_test) VALUES (:store, :profile, 'S', 'A', true, false,"
            f" {NOW}, {NOW}, false)",
            "INSERT INTO connections (id, store_id, partner_id, method, created_at)"
            f" VALUES (:conn, :store, 'pa', 'pairing', {NOW})",
            "INSERT INTO tokens (id, connection_id, kind, token_hash, created_at)"
            f" VALUES (:n, :conn, 'access', :hash, {NOW})",
            "INSERT INTO orders (id, store_id, profile_id, partner_id, order_id, order_price,"
            " order_currency, ordered_at, details, conversion, received_at, updated_at)"
            f" VALUES (:n, :store, :profile, 'pa', 'A-1', 100, 'USD', {NOW}, '{{}}', 'organic',"
            f" {NOW}, {NOW})",
            "INSERT INTO receipts (id, order_pk, order_id, store_id, key_hash, body, link,"
            f" status, attempts, next_attempt_at, created_at) VALUES (:n, :n, 'A-1', :store,"
            f" :key, 'b', 'l', 'sent', 1, {NOW}, {NOW})",
        ):
            conn.execute(text(statement), values)


def _profiles(conn: Connection, table: str) -> list[tuple[object, ...]]:
    rows = conn.execute(text(f"SELECT id, profile_id FROM {table} ORDER BY id")).all()
    return [tuple(row) for row in rows]


def test_rows_get_their_profile_across_0025_and_back(database_before: str) -> None:
    engine = make_engine(database_before)
    with engine.begin() as conn:
        _fill(conn)
    engine.dispose()

    upgrade(database_before)
    engine = make_engine(database_before)
    with engine.begin() as conn:
        assert _profiles(conn, "connections") == [("c1", "p1"), ("c2", "p2")]
        assert _profiles(conn, "tokens") == [(1, "p1"), (2, "p2")]
        assert _profiles(conn, "receipts") == [(1, "p1"), (2, "p2")]
        postgres = conn.dialect.name == "postgresql"
        if postgres:
            # The composite key to the order cascades as the old one did.
            conn.execute(text("DELETE FROM orders WHERE id = 1"))
            assert conn.execute(text("SELECT id FROM receipts")).scalars().all() == [2]
    if postgres:
        # A token's connection must be of its profile.
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO tokens (connection_id, profile_id, kind, token_hash,"
                    f" created_at) VALUES ('c1', 'p2', 'access', 'other', {NOW})"
                )
            )
    engine.dispose()

    command.downgrade(alembic_config(database_before), PREVIOUS)
    engine = make_engine(database_before)
    with engine.connect() as conn:
        for table in NEW_COLUMN_TABLES:
            columns = {c["name"] for c in inspect(conn).get_columns(table)}
            assert "profile_id" not in columns, table
        assert conn.execute(text("SELECT count(*) FROM connections")).scalar_one() == 2
        assert conn.execute(text("SELECT count(*) FROM tokens")).scalar_one() == 2
        receipts = 1 if postgres else 2
        assert conn.execute(text("SELECT count(*) FROM receipts")).scalar_one() == receipts
    engine.dispose()
