"""Runs Alembic migrations programmatically (serve, `db upgrade`, tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from partnerlink.db.engine import make_engine

# Alembic's scripts live in partnerlink/migrations, above every domain (env.py reads the
# model registry); db only names their folder for Alembic and imports none of them.
MIGRATIONS_DIR = Path(__file__).parents[1] / "migrations"


@dataclass(frozen=True)
class Migration:
    """What an upgrade did: the revision found (None for an empty database) and the one left."""

    before: str | None
    after: str | None

    @property
    def applied(self) -> bool:
        return self.before != self.after


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def current_revision(database_url: str) -> str | None:
    """The schema revision the database is at (None when it has none yet)."""
    engine = (
        make_engine(database_url)
        if database_url.startswith("sqlite")
        else create_engine(database_url, poolclass=NullPool)
    )
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def upgrade(database_url: str) -> Migration:
    before = current_revision(database_url)
    head = ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()
    if before != head:
        command.upgrade(alembic_config(database_url), "head")
    return Migration(
        before=before, after=current_revision(database_url) if before != head else head
    )
