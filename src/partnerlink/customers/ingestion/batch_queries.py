"""The customers domain's SQL for whole batches of an upload (ingestion), on the driver's
connection with positional tuples: it runs for every record of a file, and measured,
SQLAlchemy's per-row parameter processing cost as much as SQLite's own insert work.
Single records, uploads and listings: queries.py."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import psycopg
from sqlalchemy.engine import Connection as DriverConnection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from partnerlink.customers.ingestion.copy_rows import needs_escaping, row_text, row_values
from partnerlink.customers.ingestion.merge import StoredRow
from partnerlink.customers.matching import MERGED_COLUMNS
from partnerlink.customers.queries import INSERT_COLUMNS, MERGED_LIST, insert_customers_sql
from partnerlink.db.raw import Sql


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
        # The keys go as one text the server splits: measured, the driver's dumping of
        # a batch's array was a good share of ingestion's time in the worker
        # (bench/README.md). Stored
        # emails and phones hold no control character, so never the separator; a key
        # that did would go as an array.
        listed: Any = _KEY_SEPARATOR.join(keys)
        keys_sql = "string_to_array(%s, chr(31))"
        if any(_KEY_SEPARATOR in key for key in keys):
            listed, keys_sql = list(keys), "%s"
        sql = (
            f"SELECT id, {MERGED_LIST} FROM customers WHERE profile_id = %s "
            f"AND {column} = ANY({keys_sql}) FOR UPDATE"
        )
        return [tuple(row) for row in connection.exec_driver_sql(sql, (profile_id, listed))]
    return [tuple(row) for row in _sqlite_in(connection, column, profile_id, list(keys))]


_KEY_SEPARATOR = "\x1f"  # chr(31), the unit separator


# SQLite caches every distinct statement it prepared (128 per connection), and a
# statement with thousands of parameters is large: a list of another length each
# batch grew the server by 150 MB over a million records. Lists are therefore
# padded with NULLs (which match nothing) to one fixed length.
SQLITE_IN_LIST = 5000


def _sqlite_in(connection: Any, column: str, profile_id: str, keys: list[str]) -> list[Any]:
    sql = (
        f"SELECT id, {MERGED_LIST} FROM customers WHERE profile_id = ? "
        f"AND {column} IN ({_in_list('?', SQLITE_IN_LIST)})"
    )
    found: list[Any] = []
    for start in range(0, len(keys), SQLITE_IN_LIST):
        chunk = keys[start : start + SQLITE_IN_LIST]
        padding = [None] * (SQLITE_IN_LIST - len(chunk))
        found.extend(connection.exec_driver_sql(sql, (profile_id, *chunk, *padding)))
    return found


def _bulk_writer(session: Session, now: datetime) -> tuple[DriverConnection, str, object]:
    """The session's connection, its driver's placeholder and `now` as the driver stores it."""
    connection = session.connection()
    return connection, _placeholder(connection.dialect), Sql.of_session(session).time(now)


def insert_customers(
    session: Session,
    *,
    profile_id: str,
    values: Sequence[Sequence[str | None] | str],
    now: datetime,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Batched INSERT of new customers; raises ConcurrentInsert if any already exists.

    PostgreSQL takes them through COPY (measured: far less CPU than executemany's,
    client and server together; bench/README.md); a unique key another writer took meanwhile
    fails the COPY, and the caller's transaction with it. A row given as text is
    its values already in COPY's text format (reader._copy_lines): PostgreSQL only.
    `meanwhile` is called while the server takes in the COPY (once the rows are sent,
    before its end is awaited): work of the caller's that overlaps with the server's.
    It must not raise. Not on SQLite: its insert runs in this thread, so nothing would
    overlap, and work done inside the transaction keeps the one connection that
    requests share from them (the next batch's checkout then follows the commit at once).
    """
    if not values:
        return
    connection, mark, stamp = _bulk_writer(session, now)
    if connection.dialect.name == "postgresql":
        _copy_customers(connection, profile_id, values, stamp, meanwhile)
        return
    if any(isinstance(row, str) for row in values):
        raise TypeError("rows in COPY's text format are for PostgreSQL")
    sql = insert_customers_sql(_in_list(mark, len(INSERT_COLUMNS)))
    result = connection.exec_driver_sql(sql, [(profile_id, *v, stamp, stamp) for v in values])
    if result.rowcount != len(values):
        raise ConcurrentInsert


COPY_CUSTOMERS = f"COPY customers ({', '.join(INSERT_COLUMNS)}) FROM STDIN"


def _copy_text(
    profile_id: str, values: Sequence[Sequence[str | None] | str], stamp: object
) -> str | None:
    """The rows in COPY's text format, or None when a value needs escaping (then psycopg's
    write_row formats them). Measured (bench/README.md): psycopg's per-row formatting
    was a good share of the worker's time; one join per row and one search a batch are
    a fraction of it. A row given as text is already formatted (and holds nothing
    to escape)."""
    given = [value for row in values if not isinstance(row, str) for value in row]
    if needs_escaping(given) or needs_escaping([profile_id]):
        return None
    assert isinstance(stamp, datetime)
    at = stamp.isoformat()
    suffix = f"\t{at}\t{at}\n"
    prefix = profile_id + "\t"
    return "".join(
        [prefix + (row if isinstance(row, str) else row_text(row)) + suffix for row in values]
    )


def _copy_customers(
    connection: DriverConnection,
    profile_id: str,
    values: Sequence[Sequence[str | None] | str],
    stamp: object,
    meanwhile: Callable[[], None] | None,
) -> None:
    """COPY on the session's psycopg connection, in its transaction. Driver errors come
    back as SQLAlchemy's, as from any statement (the caller retries deadlocks)."""
    raw: Any = connection.connection.driver_connection
    text = _copy_text(profile_id, values, stamp)
    try:
        with raw.cursor() as cursor, cursor.copy(COPY_CUSTOMERS) as copy:
            if text is not None:
                copy.write(text)
            else:
                for row in values:
                    if isinstance(row, str):  # holds nothing to escape: its values as given
                        row = row_values(row)
                    copy.write_row((profile_id, *row, stamp, stamp))
            if meanwhile is not None:
                meanwhile()  # the rows are on their way; the server works on them
    except psycopg.errors.UniqueViolation as error:
        raise ConcurrentInsert from error
    except psycopg.Error as error:
        raise DBAPIError.instance(COPY_CUSTOMERS, None, error, psycopg.Error) from error


def update_customers(
    session: Session, *, rows: Sequence[tuple[int, Sequence[str | None]]], now: datetime
) -> None:
    """Batched UPDATE by id of every merged column."""
    if not rows:
        return
    connection, mark, stamp = _bulk_writer(session, now)
    columns = ", ".join(f"{name} = {mark}" for name in MERGED_COLUMNS)
    sql = f"UPDATE customers SET {columns}, updated_at = {mark} WHERE id = {mark}"
    connection.exec_driver_sql(sql, [(*v, stamp, customer_id) for customer_id, v in rows])
