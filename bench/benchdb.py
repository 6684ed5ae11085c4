"""A fresh, empty database for one benchmark run (shared by the benchmarks)."""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from partnerlink.settings import Settings


def fresh_database(url: str | None, workdir: Path) -> tuple[str, Callable[[], None]]:
    """A SQLite file in workdir, or a new database on the given PostgreSQL server.

    Returns its URL and a function that drops it again.
    """
    if not url:
        return f"sqlite:///{workdir / 'bench.db'}", lambda: None
    server = make_url(Settings(database_url=url).database_url)
    name = f"plk_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return server.set(database=name).render_as_string(hide_password=False), drop


def analyze(database_url: str) -> None:
    """PostgreSQL: statistics on every table, as autovacuum keeps them in service.

    A fresh database has none until autovacuum's first ANALYZE (a minute or more),
    longer than a benchmark run; without them PostgreSQL's generic plan finds a
    customer by email through ix_customers_profile_id_id, reading every customer of
    the profile (measured: ~180 us a look-up instead of ~10, and PostgreSQL's CPU an
    order 310 us instead of 180 in batches of 16). SQLite: nothing (it keeps no
    statistics unless told to, in service too).
    """
    url = Settings(database_url=database_url).database_url
    if not url.startswith("postgresql"):
        return
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("ANALYZE"))
    engine.dispose()


def journal_drained(database_url: str, timeout: float = 600.0) -> tuple[int, float]:
    """Waits until the orders' journal (orders/intake/journal.py) is empty: the orders it held
    when called, and the seconds the server took to apply them."""
    url = Settings(database_url=database_url).database_url
    engine = create_engine(url)
    count = "SELECT count(*) FROM order_journal WHERE failed_at IS NULL"
    started = time.monotonic()
    try:
        with engine.connect() as conn:
            held = waiting = int(conn.execute(text(count)).scalar_one())
            conn.rollback()
            while waiting and time.monotonic() - started < timeout:
                time.sleep(0.05)
                waiting = int(conn.execute(text(count)).scalar_one())
                conn.rollback()
    finally:
        engine.dispose()
    return held, time.monotonic() - started


@contextmanager
def app_with_store(url: str | None, prefix: str) -> Iterator[tuple[Any, Any, str]]:
    """The real application, in process, on a fresh migrated database (dropped afterwards,
    with its temporary directory), with a connected store that has e-receipts on:
    (app, settings, its access token)."""
    from tests.factories import create_connected_store

    from partnerlink.app import create_app
    from partnerlink.db.migrate import upgrade

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        database_url, drop = fresh_database(url, Path(tmp))
        try:
            settings = Settings(
                database_url=database_url, secret_key="bench", data_dir=Path(tmp), run_worker=False
            )
            upgrade(settings.database_url)
            app = create_app(settings)
            with app.state.sessionmaker() as session:
                token = create_connected_store(session, green_invoices=True).access_token
            yield app, settings, token
        finally:
            drop()


def checkpoint(database_url: str) -> None:
    """PostgreSQL: writes out every dirty page now (superuser; else nothing), so that a
    measured run does not inherit the previous run's checkpoint, with the full-page
    images every page's first change after it adds to the WAL: two runs that write a
    million rows each start from the same state (bench/README.md, fifteenth session)."""
    if not database_url.startswith("postgres"):
        return
    engine = create_engine(
        Settings(database_url=database_url).database_url, isolation_level="AUTOCOMMIT"
    )
    try:
        with engine.connect() as conn:
            conn.execute(text("CHECKPOINT"))
    except DBAPIError:
        pass  # not a superuser: the runs stay comparable, only noisier
    finally:
        engine.dispose()
