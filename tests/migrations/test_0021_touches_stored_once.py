"""Migration 0021: touches stored twice before keep one row each, then become unique.

Built on a database of its own, migrated up to the revision before 0021; then upgraded.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from partnerlink.db.base import UTCDateTime
from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES, TEST_DATABASE_URL

REVISION = "0021"
SERVER_URL = Settings(database_url=TEST_DATABASE_URL or "sqlite://").database_url
HASH = "a" * 64
AT = datetime(2024, 5, 9, 10, 0, tzinfo=UTC)

_TOUCHES = sa.table(
    "touches",
    sa.column("profile_id", sa.String()),
    sa.column("campaign_id", sa.String()),
    sa.column("email_sha256", sa.String()),
    sa.column("phone_sha256", sa.String()),
    sa.column("touched_at", UTCDateTime()),
    sa.column("imported_at", UTCDateTime()),
)


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    if not ON_POSTGRES:
        url = f"sqlite:///{tmp_path / 'before-0021.db'}"
        _upgrade_to_previous(url)
        yield url
        return
    name = f"plk_m21_{uuid.uuid4().hex[:8]}"
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


def _upgrade_to_previous(url: str) -> None:
    config = alembic_config(url)
    previous = ScriptDirectory.from_config(config).get_revision(REVISION).down_revision
    assert isinstance(previous, str)
    command.upgrade(config, previous)


def test_duplicate_touches_keep_their_oldest_row_and_then_are_refused(
    database_before: str,
) -> None:
    engine = make_engine(database_before)
    touch = {
        "profile_id": "p-1",
        "campaign_id": "spring",
        "email_sha256": HASH,
        "phone_sha256": None,
        "touched_at": AT,
        "imported_at": AT,
    }
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO merchants (id, email, password_hash, created_at) "
                "VALUES ('m-1', 'm@example.com', 'x', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO profiles (id, merchant_id, name, created_at) "
                "VALUES ('p-1', 'm-1', 'P', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            _TOUCHES.insert(),
            [
                touch,
                touch,
                touch,
                {**touch, "campaign_id": "autumn"},
                {**touch, "email_sha256": None, "phone_sha256": HASH},
                {**touch, "email_sha256": None, "phone_sha256": HASH},
            ],
        )
    engine.dispose()

    upgrade(database_before)

    engine = make_engine(database_before)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, campaign_id, phone_sha256 FROM touches ORDER BY id")
        ).all()
        assert [(r[0], r[1], r[2]) for r in rows] == [
            (1, "spring", None),
            (4, "autumn", None),
            (5, "spring", HASH),
        ]
        with pytest.raises(sa.exc.IntegrityError):
            conn.execute(_TOUCHES.insert(), [touch])
    engine.dispose()
