"""Migration 0038: PostgreSQL's customers keep their identifiers' hashes, touches keep
half of each page free; on both, touches' hash indexes hold the latest-first order.
Built at 0037 with customers, upgraded to the head and back down. Expected hashes come
from hashlib."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, inspect, text

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from tests.conftest import ON_POSTGRES
from tests.migrations import database_at

PREVIOUS = "0037"
PEOPLE = [("ana@example.com", None), (None, "+14155550100"), ("zoë@exämple.de", "+33612345678")]


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    with database_at(PREVIOUS, tmp_path) as url:
        yield url


def sha(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


def test_customers_stored_before_get_their_hashes_and_lose_them_going_down(
    database_before: str,
) -> None:
    engine = make_engine(database_before)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO merchants (id, email, password_hash, name, created_at)"
                " VALUES ('m', 'm@example.com', 'x', 'M', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO profiles (id, merchant_id, name, created_at)"
                " VALUES ('p', 'm', 'P', CURRENT_TIMESTAMP)"
            )
        )
        for email, phone in PEOPLE:
            conn.execute(
                text(
                    "INSERT INTO customers (profile_id, email, phone_number, created_at,"
                    " updated_at) VALUES ('p', :e, :ph, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                ),
                {"e": email, "ph": phone},
            )
    upgrade(database_before)
    assert _touch_index_order(engine) == [
        ["email_sha256", "profile_id", "touched_at DESC", "campaign_id DESC", "kind"],
        ["phone_sha256", "profile_id", "touched_at DESC", "campaign_id DESC", "kind"],
    ]
    columns = {c["name"] for c in inspect(engine).get_columns("customers")}
    if not ON_POSTGRES:
        command.downgrade(alembic_config(database_before), PREVIOUS)
        assert _touch_index_order(engine) == [
            ["email_sha256", "profile_id", "touched_at"],
            ["phone_sha256", "profile_id", "touched_at"],
        ]
        assert not {"email_sha256", "phone_sha256"} & columns
        engine.dispose()
        return
    with engine.connect() as conn:
        stored = conn.execute(
            text(
                "SELECT email, phone_number, encode(email_sha256, 'hex'),"
                " encode(phone_sha256, 'hex') FROM customers ORDER BY id"
            )
        ).all()
        fill = conn.execute(
            text("SELECT reloptions FROM pg_class WHERE relname = 'touches'")
        ).scalar()
    assert [tuple(row) for row in stored] == [(e, p, sha(e), sha(p)) for e, p in PEOPLE]
    assert fill == ["fillfactor=50"]

    command.downgrade(alembic_config(database_before), PREVIOUS)
    assert _touch_index_order(engine) == [
        ["email_sha256", "profile_id", "touched_at"],
        ["phone_sha256", "profile_id", "touched_at"],
    ]
    columns = {c["name"] for c in inspect(engine).get_columns("customers")}
    assert not {"email_sha256", "phone_sha256"} & columns
    with engine.connect() as conn:
        assert conn.execute(
            text("SELECT reloptions FROM pg_class WHERE relname = 'touches'")
        ).scalar() == ["fillfactor=90"]
        assert not conn.execute(
            text("SELECT 1 FROM pg_proc WHERE proname = 'partnerlink_sha256'")
        ).scalar()
    engine.dispose()


def _touch_index_order(engine: Engine) -> list[list[str]]:
    """The key columns of ix_touches_email_sha256 and ix_touches_phone_sha256, as the
    database states them (its own catalog: pg_indexes, or SQLite's schema text)."""
    found = []
    with engine.connect() as conn:
        for column in ("email_sha256", "phone_sha256"):
            name = f"ix_touches_{column}"
            if ON_POSTGRES:
                definition = conn.execute(
                    text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": name}
                ).scalar_one()
            else:
                definition = conn.execute(
                    text("SELECT sql FROM sqlite_master WHERE name = :n"), {"n": name}
                ).scalar_one()
            keys = definition[definition.index("(") + 1 : definition.rindex(")")]
            found.append([key.strip().replace('"', "") for key in keys.split(",")])
    return found
