"""A fresh, empty database for one benchmark run (shared by the benchmarks)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

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
