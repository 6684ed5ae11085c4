"""Migration 0014: existing orders get the partner whose connection most plausibly sent them.

Built on a database of its own, migrated up to the revision before 0014, where
orders had no partner; then upgraded to the head.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from partnerlink.customers.models import Upload
from partnerlink.db.base import Base, UTCDateTime
from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from partnerlink.settings import Settings
from partnerlink.tokens.models import Connection
from tests.conftest import ON_POSTGRES, TEST_DATABASE_URL
from tests.factories import connect_another_partner, create_connected_store

REVISION = "0014"
SERVER_URL = Settings(database_url=TEST_DATABASE_URL or "sqlite://").database_url

# The orders table as the revision before 0014 has it (the model has partner_id now).
_ORDERS_BEFORE = sa.table(
    "orders",
    sa.column("store_id", sa.String()),
    sa.column("profile_id", sa.String()),
    sa.column("order_id", sa.String()),
    sa.column("order_price", sa.BigInteger()),
    sa.column("order_currency", sa.String()),
    sa.column("ordered_at", UTCDateTime()),
    sa.column("details", sa.JSON()),
    sa.column("conversion", sa.String()),
    sa.column("received_at", UTCDateTime()),
    sa.column("updated_at", UTCDateTime()),
)


def at(month: int, day: int = 1) -> datetime:
    return datetime(2024, month, day, 12, 0, tzinfo=UTC)


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    """A new database at the revision before 0014."""
    if not ON_POSTGRES:
        url = f"sqlite:///{tmp_path / 'before-0014.db'}"
        _upgrade_to_previous(url)
        yield url
        return
    name = f"plk_m14_{uuid.uuid4().hex[:8]}"
    admin = create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(SERVER_URL).set(database=name).render_as_string(hide_password=False)
        _upgrade_to_previous(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def _later_columns_meanwhile(url: str) -> Iterator[None]:
    """The factories write through today's models, which also name columns that revisions
    after this one add (a partner's rotated webhook secret, ...): those are added bare
    while the test arranges its rows, then dropped, so that their own migrations add them."""
    engine = make_engine(url)
    inspector = sa.inspect(engine)
    later = [
        (table.name, column)
        for table in Base.metadata.sorted_tables
        if inspector.has_table(table.name)
        for column in table.columns
        if column.name not in {c["name"] for c in inspector.get_columns(table.name)}
    ]
    with engine.begin() as conn:
        for table_name, column in later:
            kind = column.type.compile(dialect=engine.dialect)
            conn.execute(text(f"ALTER TABLE {table_name} ADD COLUMN {column.name} {kind}"))
    try:
        yield
    finally:
        with engine.begin() as conn:
            for table_name, column in later:
                conn.execute(text(f"ALTER TABLE {table_name} DROP COLUMN {column.name}"))
        engine.dispose()


def _upgrade_to_previous(url: str) -> None:
    config = alembic_config(url)
    previous = ScriptDirectory.from_config(config).get_revision(REVISION).down_revision
    assert isinstance(previous, str)
    command.upgrade(config, previous)


def _add_order(session: Session, store: Any, order_id: str, received_at: datetime) -> None:
    session.execute(
        _ORDERS_BEFORE.insert().values(
            store_id=store.id,
            profile_id=store.profile_id,
            order_id=order_id,
            order_price=100,
            order_currency="USD",
            ordered_at=received_at,
            details={},
            conversion="organic",
            received_at=received_at,
            updated_at=received_at,
        )
    )


def test_existing_orders_and_uploads_get_the_connection_live_when_they_came(
    database_before: str,
) -> None:
    engine = make_engine(database_before)
    with _later_columns_meanwhile(database_before), Session(engine) as session:
        first = create_connected_store(session)
        second = connect_another_partner(session, first)
        first_partner, second_partner = first.partner.partner.id, second.partner.partner.id
        opened = {first_partner: at(1), second_partner: at(3)}
        for partner_id, created_at in opened.items():
            session.execute(
                update(Connection)
                .where(Connection.partner_id == partner_id)
                .values(created_at=created_at)
            )
        _add_order(session, first.store, "before-the-second", at(2))
        _add_order(session, first.store, "after-the-second", at(4))
        _add_order(session, first.store, "before-any", datetime(2023, 6, 1, tzinfo=UTC))
        session.add(
            Upload(
                id=str(uuid.uuid4()),
                nonce="n" * 24,
                store_id=first.store.id,
                profile_id=first.store.profile_id,
                status="done",
                storage_key="k",
                created_at=at(2),
            )
        )
        session.commit()
    engine.dispose()

    upgrade(database_before)

    engine = make_engine(database_before)
    with engine.connect() as conn:
        senders: dict[str, str] = {
            order_id: partner_id
            for order_id, partner_id in conn.execute(
                text("SELECT order_id, partner_id FROM orders")
            )
        }
        asker = conn.execute(text("SELECT connection_id FROM uploads")).scalar_one()
        first_connection = conn.execute(
            text("SELECT id FROM connections WHERE partner_id = :p"),
            {"p": first_partner},
        ).scalar_one()
    engine.dispose()
    assert senders == {
        "before-the-second": first_partner,
        "after-the-second": second_partner,
        # Received before any connection was opened (clocks): the store's latest one.
        "before-any": second_partner,
    }
    assert asker == first_connection
