"""Engine and session factory for SQLite (default) and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import QueuePool


def make_engine(url: str, *, pool_size: int = 20) -> Engine:
    """Builds the engine.

    SQLite gets one shared connection: measured, a pool of several writers only
    adds lock waits (a long p99: bench/README.md), and BEGIN IMMEDIATE avoids the "database is
    locked" upgrade failure when another process (the CLI, a worker) writes too.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            poolclass=QueuePool,
            pool_size=1,
            max_overflow=0,
            pool_timeout=60,
            connect_args={"check_same_thread": False, "timeout": 30},
        )
        _configure_sqlite(engine)
        return engine
    # A database host that is down (not refusing) would otherwise hold a connect for the
    # system's TCP timeout (minutes); the URL's own `connect_timeout` wins.
    connect_args = {} if "connect_timeout" in parsed.query else {"connect_timeout": 10}
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=10,
        pool_pre_ping=True,
        pool_timeout=30,
        connect_args=connect_args,
    )


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own BEGIN is deferred).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=True)


@contextmanager
def committed_session(sessions: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: committed when the block ends normally, rolled back on any error
    (a refused request or command stores nothing)."""
    session = sessions()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
