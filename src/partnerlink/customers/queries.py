"""The customers domain's SQL, in one place.

Two styles, by measurement: hand-written statements on the driver's connection
where every order or every record of a file runs them (matching, ingestion), the
ORM elsewhere (uploads, listing). ARCHITECTURE.md states the split.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Row, Table, func, select, update
from sqlalchemy.engine import Connection as DriverConnection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from partnerlink import jobs
from partnerlink.customers.matching import MERGED_COLUMNS, LookUp
from partnerlink.customers.merge import StoredRow
from partnerlink.customers.models import Customer, Upload
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection

# --- matching: single records and order batches, on the driver's connection (db/raw.py) ---
# Orders resolve a customer on every POST; the look-ups are matching.py's steps.

_MERGED = ", ".join(MERGED_COLUMNS)
_RECORD = f"id, {_MERGED}"
# Every INSERT of a customer, named (single records) or positional (ingestion).
_INSERT_COLUMNS = ("profile_id", *MERGED_COLUMNS, "created_at", "updated_at")


def _insert_customers(values: str) -> str:
    return (
        f"INSERT INTO customers ({', '.join(_INSERT_COLUMNS)}) VALUES ({values})"
        " ON CONFLICT DO NOTHING"
    )


LOOK_UPS = {
    LookUp.BY_EMAIL: Statement(
        f"SELECT {_RECORD} FROM customers WHERE profile_id = :profile_id AND email = :email"
    ),
    LookUp.PHONE_ONLY: Statement(
        f"SELECT {_RECORD} FROM customers WHERE profile_id = :profile_id"
        " AND phone_number = :phone_number AND email IS NULL"
    ),
    LookUp.BY_PHONE: Statement(
        f"SELECT {_RECORD} FROM customers WHERE profile_id = :profile_id"
        " AND phone_number = :phone_number"
        " ORDER BY CASE WHEN email IS NULL THEN 0 ELSE 1 END, id LIMIT 1"
    ),
}
INSERT_ONE = Statement(
    _insert_customers(
        ", ".join(f":{name}" for name in ("profile_id", *MERGED_COLUMNS, "now", "now"))
    )
    + f" RETURNING {_RECORD}"
)
# Non-empty incoming fields overwrite stored ones: NULL (not given) keeps the column.
_MERGE_SET = ", ".join(f"{column} = COALESCE(:{column}, {column})" for column in MERGED_COLUMNS)
MERGE_ONE = Statement(
    f"UPDATE customers SET {_MERGE_SET}, updated_at = :now WHERE id = :id RETURNING {_RECORD}"
)
# Taking over a phone-only customer: only while it still has no email.
TAKE_OVER_PHONE_ONLY = Statement(
    f"UPDATE customers SET {_MERGE_SET}, updated_at = :now"
    f" WHERE id = :id AND email IS NULL RETURNING {_RECORD}"
)


# --- ingestion: whole batches, through `exec_driver_sql` with positional tuples ---
# It runs for every record of a file: measured, SQLAlchemy's per-row parameter
# processing cost as much as SQLite's own insert work.


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
        # a 5,000-element array was a tenth of ingestion's time in the worker. Stored
        # emails and phones hold no control character, so never the separator; a key
        # that did would go as an array.
        listed: Any = _KEY_SEPARATOR.join(keys)
        keys_sql = "string_to_array(%s, chr(31))"
        if any(_KEY_SEPARATOR in key for key in keys):
            listed, keys_sql = list(keys), "%s"
        sql = (
            f"SELECT id, {_MERGED} FROM customers WHERE profile_id = %s "
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
        f"SELECT id, {_MERGED} FROM customers WHERE profile_id = ? "
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
    session: Session, *, profile_id: str, values: Sequence[Sequence[str | None]], now: datetime
) -> None:
    """Batched INSERT of new customers; raises ConcurrentInsert if any already exists.

    PostgreSQL takes them through COPY (measured: a third of executemany's CPU,
    client and server together); a unique key another writer took meanwhile
    fails the COPY, and the caller's transaction with it.
    """
    if not values:
        return
    connection, mark, stamp = _bulk_writer(session, now)
    if connection.dialect.name == "postgresql":
        _copy_customers(connection, profile_id, values, stamp)
        return
    sql = _insert_customers(_in_list(mark, len(_INSERT_COLUMNS)))
    result = connection.exec_driver_sql(sql, [(profile_id, *v, stamp, stamp) for v in values])
    if result.rowcount != len(values):
        raise ConcurrentInsert


COPY_CUSTOMERS = f"COPY customers ({', '.join(_INSERT_COLUMNS)}) FROM STDIN"


def _copy_customers(
    connection: DriverConnection,
    profile_id: str,
    values: Sequence[Sequence[str | None]],
    stamp: object,
) -> None:
    """COPY on the session's psycopg connection, in its transaction. Driver errors come
    back as SQLAlchemy's, as from any statement (the caller retries deadlocks)."""
    import psycopg

    raw: Any = connection.connection.driver_connection
    try:
        with raw.cursor() as cursor, cursor.copy(COPY_CUSTOMERS) as copy:
            write_row = copy.write_row
            for row in values:
                write_row((profile_id, *row, stamp, stamp))
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


# --- upload claiming and progress ---


_uploads: Table = Upload.__table__  # type: ignore[assignment]
# Received, or taken by a worker whose lease ran out (the jobs module checks the lease).
_CLAIMABLE = Upload.status.in_(("received", "processing"))


def claim_next_upload(session: Session, *, lease_seconds: int) -> Row[Any] | None:
    """Takes the oldest received upload, or one whose worker's lease ran out (one
    conditional UPDATE, after SKIP LOCKED on PostgreSQL, so workers do not queue on the
    same row). The row answers `lease_until`, the lease to hold the upload by."""
    claimed = jobs.claim_due(
        session,
        _uploads,
        due=_CLAIMABLE,
        order_by=[Upload.created_at],
        limit=1,
        lease_seconds=lease_seconds,
        now=utcnow(),
        returning=[
            Upload.id,
            Upload.attempts,
            Upload.store_id,
            Upload.profile_id,
            Upload.storage_key,
            Upload.size_bytes,
            Upload.records_committed,
            Upload.errors,
            Upload.connection_id,
        ],
        values={"status": "processing"},
    )
    return claimed[0] if claimed else None


def nonce_used(session: Session, *, nonce: str) -> bool:
    """Whether an upload already consumed this upload URL's nonce."""
    return session.scalar(select(Upload.id).where(Upload.nonce == nonce)) is not None


def connection_live(session: Session, *, connection_id: str, store_id: str) -> bool:
    """Whether the store's connection that got an upload URL is still live."""
    live = select(Connection.id).where(
        Connection.id == connection_id,
        Connection.store_id == store_id,
        Connection.revoked_at.is_(None),
    )
    return session.scalar(live) is not None


def upload_and_partner(session: Session, *, upload_id: str) -> tuple[Upload, str | None] | None:
    """An upload with the partner whose connection got its URL."""
    found = session.execute(
        select(Upload, Connection.partner_id)
        .outerjoin(Connection, Connection.id == Upload.connection_id)
        .where(Upload.id == upload_id)
    ).first()
    return None if found is None else (found[0], found[1])


def connection_revoked(session: Session, *, connection_id: str | None) -> bool:
    """Whether the connection that asked for an upload's URL is revoked by now."""
    if connection_id is None:  # none recorded (before migration 0013 and a store without any)
        return False
    return bool(
        session.scalar(
            select(Connection.revoked_at.is_not(None)).where(Connection.id == connection_id)
        )
    )


def renew_lease(
    session: Session, *, upload_id: str, lease_until: datetime, lease_seconds: int
) -> datetime | None:
    """Extends the held lease (and locks the upload row); the new lease, or None if lost."""
    return jobs.renew_lease(
        session,
        _uploads,
        row_id=upload_id,
        lease_until=lease_until,
        lease_seconds=lease_seconds,
        now=utcnow(),
    )


def record_progress(
    session: Session,
    *,
    upload_id: str,
    next_index: int,
    created: int,
    updated: int,
    unchanged: int,
    rejected: int,
    errors: list[dict[str, Any]] | None,
) -> None:
    """Commits a batch's counts with the batch: a restart resumes after `next_index`."""
    values: dict[str, Any] = {
        "records": next_index,
        "records_committed": next_index,
        "created": Upload.created + created,
        "updated": Upload.updated + updated,
        "unchanged": Upload.unchanged + unchanged,
        "rejected": Upload.rejected + rejected,
    }
    if errors is not None:
        values["errors"] = errors
    session.execute(
        update(Upload)
        .where(Upload.id == upload_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def finish_upload(
    session: Session, *, upload_id: str, lease_until: datetime, status: str, reason: str | None
) -> bool:
    """Ends the upload as done or failed, if this worker still holds its lease."""
    return jobs.record_if_leased(
        session,
        _uploads,
        row_id=upload_id,
        lease_until=lease_until,
        values={"status": status, "failure_reason": reason, "finished_at": utcnow()},
    )


def release_lease(session: Session, *, upload_id: str, lease_until: datetime) -> None:
    """Lets another loop retry at once after an unexpected error."""
    jobs.record_if_leased(
        session,
        _uploads,
        row_id=upload_id,
        lease_until=lease_until,
        values={"lease_until": utcnow()},
    )


def store_profile_id(session: Session, *, store_id: str) -> str | None:
    return session.scalar(select(Store.profile_id).where(Store.id == store_id))


def store_country(session: Session, *, store_id: str) -> str | None:
    return session.scalar(select(Store.country_code).where(Store.id == store_id))


def count_customers(session: Session, *, profile_id: str) -> int:
    """Counts the profile's customers."""
    return (
        session.scalar(
            select(func.count()).select_from(Customer).where(Customer.profile_id == profile_id)
        )
        or 0
    )


def list_customers(session: Session, *, profile_id: str, limit: int) -> list[Customer]:
    """The profile's customers, newest first."""
    return list(
        session.scalars(
            select(Customer)
            .where(Customer.profile_id == profile_id)
            .order_by(Customer.id.desc())
            .limit(limit)
        )
    )


def identifiers_of(sql: Sql, *, profile_id: str, ids: Sequence[int]) -> list[Any]:
    """(id, email, phone_number) of the profile's customers among `ids` (orders'
    re-classification hashes them to find their touches)."""
    placeholders = ", ".join(f":c{n}" for n in range(len(ids)))
    params: dict[str, Any] = {f"c{n}": value for n, value in enumerate(ids)}
    params["profile_id"] = profile_id
    return sql.all_rows(
        Statement(
            "SELECT id, email, phone_number FROM customers"
            f" WHERE profile_id = :profile_id AND id IN ({placeholders})"
        ),
        params,
    )
