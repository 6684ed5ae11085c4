"""Runs Alembic migrations programmatically (serve, `db upgrade`, every command, tests).

Every command-line start brings the database up to date first, and nearly always finds
it so. That check is plain SQL against the newest migration's number (`head_revision`):
Alembic, and the 30 migration scripts its script directory loads, cost a start ~0.15 s,
so they are imported only when there is something to migrate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

from partnerlink.db.engine import make_engine

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic's scripts live in partnerlink/migrations, above every domain (env.py reads the
# model registry); db only names their folder for Alembic and imports none of them.
MIGRATIONS_DIR = Path(__file__).parents[1] / "migrations"
# Each script is named after its revision, which is a number one above its parent's or
# more (0032's parent is 0030): one chain, whose head is the largest number. A test holds
# this to Alembic's own head.
_SCRIPT_NAMES = "[0-9][0-9][0-9][0-9]_*.py"


@dataclass(frozen=True)
class Migration:
    """What an upgrade did: the revision found (None for an empty database) and the one left."""

    before: str | None
    after: str | None

    @property
    def applied(self) -> bool:
        return self.before != self.after


def alembic_config(database_url: str) -> Config:
    from alembic.config import Config  # only to migrate (module doc)

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def head_revision() -> str:
    """The newest migration's revision (the largest script number)."""
    return max(path.name[:4] for path in (MIGRATIONS_DIR / "versions").glob(_SCRIPT_NAMES))


def current_revision(database_url: str) -> str | None:
    """The schema revision the database is at (None when it has none yet): the row
    Alembic keeps in `alembic_version`."""
    engine = (
        make_engine(database_url)
        if database_url.startswith("sqlite")
        else create_engine(database_url, poolclass=NullPool)
    )
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return None
            versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
            return versions[0][0] if len(versions) == 1 else None
    finally:
        engine.dispose()


def upgrade(database_url: str) -> Migration:
    return upgrade_from(database_url, current_revision(database_url))


def upgrade_from(database_url: str, before: str | None) -> Migration:
    """`upgrade` of a database whose revision the caller just read (`before`)."""
    head = head_revision()
    if before == head:
        return Migration(before=before, after=head)
    from alembic import command  # only to migrate (module doc)

    command.upgrade(alembic_config(database_url), "head")
    return Migration(before=before, after=current_revision(database_url))
