"""Migration 0020: partners get `redirect_uris`, and nothing below partners is lost.

On SQLite a batch copy of `partners` would drop the old table, and ON DELETE
CASCADE would empty integration tokens, connections and tokens on the way; the
migration adds the column in place, which this test holds it to.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES, TEST_DATABASE_URL

SERVER_URL = Settings(database_url=TEST_DATABASE_URL or "sqlite://").database_url


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    """A new database at the revision before 0020."""
    if not ON_POSTGRES:
        url = f"sqlite:///{tmp_path / 'before-0020.db'}"
        command.upgrade(alembic_config(url), "0016")
        yield url
        return
    name = f"plk_m20_{uuid.uuid4().hex[:8]}"
    admin = create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(SERVER_URL).set(database=name).render_as_string(hide_password=False)
        command.upgrade(alembic_config(url), "0016")
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_partners_keep_their_integration_tokens_across_0020_and_back(
    database_before: str,
) -> None:
    engine = make_engine(database_before)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO partners (id, name, pos_type, client_id, client_secret_hash,"
                " ereceipt, frame_origins, active, sandbox, created_at) VALUES ('p1', 'Acme',"
                " 'acme', 'plk_ci_1', 'h', false, '[]', true, false, '2024-01-01 00:00:00+00')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO integration_tokens (id, partner_id, token_hash, status, created_at,"
                " expires_at, green_invoices) VALUES ('i1', 'p1', 'th', 'pending',"
                " '2024-01-01 00:00:00+00', '2025-01-01 00:00:00+00', false)"
            )
        )
    engine.dispose()

    upgrade(database_before)
    engine = make_engine(database_before)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id FROM integration_tokens")).scalars().all() == ["i1"]
        uris = conn.execute(text("SELECT redirect_uris FROM partners")).scalar_one()
        assert uris in ("[]", [])
    engine.dispose()

    command.downgrade(alembic_config(database_before), "0016")
    engine = make_engine(database_before)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id FROM integration_tokens")).scalars().all() == ["i1"]
    engine.dispose()
