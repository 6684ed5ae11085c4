"""Migration tests: each builds a database of its own at the revision before its
migration (`database_at`), fills it, and upgrades it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from partnerlink.db.migrate import alembic_config
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES, TEST_DATABASE_URL


@contextmanager
def database_at(revision: str, tmp_path: Path) -> Iterator[str]:
    """A new database at `revision` (a SQLite file, or a database on the test server,
    dropped afterwards); yields its URL."""
    if not ON_POSTGRES:
        url = f"sqlite:///{tmp_path / f'at-{revision}.db'}"
        command.upgrade(alembic_config(url), revision)
        yield url
        return
    server = Settings(database_url=TEST_DATABASE_URL).database_url
    name = f"plk_m{revision}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(server).set(database=name).render_as_string(hide_password=False)
        command.upgrade(alembic_config(url), revision)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
