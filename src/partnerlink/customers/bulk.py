"""The SQL of batch ingestion, at the driver level: it runs for every record of a file.

Statements go through `exec_driver_sql` with tuples: measured, SQLAlchemy's
per-row parameter processing cost as much as SQLite's own insert work. They
are written once per dialect here, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from partnerlink.customers.merge import StoredRow
from partnerlink.db.raw import Sql

_MERGED = "email, phone_number, first_name, last_name, city, country_code"


class ConcurrentInsert(Exception):
    """Another writer created some of the batch's new customers meanwhile."""


def _placeholder(dialect: Dialect) -> str:
    return "?" if dialect.paramstyle == "qmark" else "%s"


@lru_cache(maxsize=4)
def _in_list(placeholder: str, count: int) -> str:
    return ", ".join([placeholder] * count)


def load_customers(
    session: Session, *, profile_id: str, column: str, keys: Collection[str]
) -> list[StoredRow]:
    """The profile's customers whose `column` (email or phone_number) is one of `keys`.

    On PostgreSQL the rows are locked until the batch commits, so that a
    concurrent order cannot change a customer between our read and our write.
    """
    if column not in ("email", "phone_number"):
        raise ValueError(column)
    if not keys:
        return []
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        sql = (
            f"SELECT id, {_MERGED} FROM customers WHERE profile_id = %s "
            f"AND {column} = ANY(%s) FOR UPDATE"
        )
        return [tuple(row) for row in connection.exec_driver_sql(sql, (profile_id, list(keys)))]
    return [tuple(row) for row in _sqlite_in(connection, column, profile_id, list(keys))]


# SQLite caches every distinct statement it prepared (128 per connection), and a
# statement with thousands of parameters is large: a list of another length each
# batch grew the server by 150 MB over a million records. Lists are therefore
# padded with NULLs (which match nothing) to one fixed length.
SQLITE_IN_LIST = 5000


def _sqlite_in(connection: Any, column: str, profile_id: str, keys: list[str]) -> list[Any]:
    sql = (
        f"SELECT id, {_MERGED} FROM customers WHERE profile_id = ? "
        f"AND {column} IN ({_in_list('?', SQLITE_IN_LIST)})"
    )
    found: list[Any] = []
    for start in range(0, len(keys), SQLITE_IN_LIST):
        chunk = keys[start : start + SQLITE_IN_LIST]
        padding = [None] * (SQLITE_IN_LIST - len(chunk))
        found.extend(connection.exec_driver_sql(sql, (profile_id, *chunk, *padding)))
    return found


def insert_customers(
    session: Session, *, profile_id: str, values: Sequence[Sequence[str | None]], now: datetime
) -> None:
    """Batched INSERT of new customers; raises ConcurrentInsert if any already exists."""
    if not values:
        return
    connection = session.connection()
    mark = _placeholder(connection.dialect)
    stamp = Sql.of_session(session).time(now)
    sql = (
        f"INSERT INTO customers (profile_id, {_MERGED}, created_at, updated_at) "
        f"VALUES ({_in_list(mark, 9)}) ON CONFLICT DO NOTHING"
    )
    result = connection.exec_driver_sql(sql, [(profile_id, *v, stamp, stamp) for v in values])
    if result.rowcount != len(values):
        raise ConcurrentInsert


def update_customers(
    session: Session, *, rows: Sequence[tuple[int, Sequence[str | None]]], now: datetime
) -> None:
    """Batched UPDATE by id of every merged column."""
    if not rows:
        return
    connection = session.connection()
    mark = _placeholder(connection.dialect)
    stamp = Sql.of_session(session).time(now)
    columns = ", ".join(f"{name.strip()} = {mark}" for name in _MERGED.split(","))
    sql = f"UPDATE customers SET {columns}, updated_at = {mark} WHERE id = {mark}"
    connection.exec_driver_sql(sql, [(*v, stamp, customer_id) for customer_id, v in rows])
