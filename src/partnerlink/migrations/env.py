"""Alembic environment: one metadata for every domain."""

from __future__ import annotations

from alembic import context
from sqlalchemy import pool, text

from partnerlink.db.engine import make_engine
from partnerlink.models import Base

config = context.config
target_metadata = Base.metadata
# pg_advisory_xact_lock's key for "migrating": `serve` and `partnerlink worker` started
# together on a new database both migrate; the second waits for the first's commit, then
# finds nothing left to do (without it, it failed creating alembic_version a second time).
_MIGRATION_LOCK = 0x706C6B6D6967


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url
    engine = make_engine(url)
    if engine.dialect.name != "sqlite":
        engine.dispose()
        from sqlalchemy import create_engine

        engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK}
                )
            context.run_migrations()
    engine.dispose()


run_migrations_online()
