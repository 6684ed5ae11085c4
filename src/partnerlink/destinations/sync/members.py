"""The SQL of the members each audience destination holds (CONTRACT §11): what a sync
compares with the segment, and what it records once the platform took a batch.

Members are read a range of customer ids at a time (the audience export's keyset
chunks), so a sync of any size holds one range in memory; unless every member must be
compared, the database returns only the pairs of member and held row that may need a
call (audience_sync.py).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Table,
    any_,
    bindparam,
    delete,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from partnerlink.audiences import queries as audience_queries
from partnerlink.audiences.service import ExportPlan
from partnerlink.db import sets
from partnerlink.db.raw import Sql
from partnerlink.destinations.models import Destination, DestinationMember

log = logging.getLogger("partnerlink.destinations")

destinations: Table = Destination.__table__  # type: ignore[assignment]
members: Table = DestinationMember.__table__  # type: ignore[assignment]


class member_fingerprint(FunctionElement[int]):
    """The database's 64-bit digest of a customer's export columns (NULL and "" alike,
    as the rows are: both hash to ""). Columns are joined by U+001F, which no stored
    email or phone holds and which names and cities lose in normalization, so moving
    it between columns cannot keep the fingerprint and change the row."""

    type = BigInteger()
    inherit_cache = True


@compiles(member_fingerprint, "postgresql")
def _fingerprint_postgresql(element: member_fingerprint, compiler: SQLCompiler, **kw: Any) -> str:
    columns = [compiler.process(column, **kw) for column in element.clauses]
    return f"hashtextextended(concat({_POSTGRES_SEPARATOR.join(columns)}), 0)"


_POSTGRES_SEPARATOR = ", E'\\x1f', "


@compiles(member_fingerprint)
def _fingerprint_sqlite(element: member_fingerprint, compiler: SQLCompiler, **kw: Any) -> str:
    return f"partnerlink_fingerprint({compiler.process(element.clauses, **kw)})"


def _sqlite_fingerprint(*values: object) -> int:
    joined = "\x1f".join("" if value is None else str(value) for value in values)
    digest = hashlib.blake2b(joined.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def prepare(connection: Connection, digest_key: bytes) -> None:
    """The audience export's SQL functions, and SQLite's fingerprint (idempotent)."""
    audience_queries.prepare(connection, digest_key)
    if connection.dialect.name == "sqlite":
        raw: Any = connection.connection.driver_connection
        raw.create_function(
            "partnerlink_fingerprint",
            len(audience_queries.EXPORT_COLUMNS),
            _sqlite_fingerprint,
            deterministic=True,
        )


FINGERPRINT = member_fingerprint(*audience_queries.EXPORT_COLUMNS)


def _among(connection: Connection, id_column: Any, ids: Sequence[int]) -> ColumnElement[bool]:
    """`id_column` is one of `ids`: PostgreSQL takes them as one array parameter."""
    if connection.dialect.name == "postgresql":
        return id_column == any_(bindparam("among", list(ids), type_=postgresql.ARRAY(BigInteger)))
    return id_column.in_(list(ids))


def member_changes(
    connection: Connection,
    plan: ExportPlan,
    destination_id: str,
    after: int,
    until: int | None,
    *,
    compare_all: bool,
    ids: Sequence[int] | None = None,
) -> list[Any]:
    """The segment's members and the held members with ids in (after, until], side by
    side (a FULL JOIN on the customer id): (id, email, phone, first name, last name,
    city, country, postal code, fingerprint) of the member, NULLs when not one, then
    (customer id, row sent, fingerprint) of the held row, NULLs when none.

    Unless `compare_all`, only the pairs that may need a call: a member not held, a held
    row whose customer is no longer a member (opted out, erased, left the segment), and
    a member whose fingerprint differs from the one held with its row.

    With `ids` (ascending, within the range), only those customers and held rows."""
    current_statement = audience_queries.export_statement(
        plan.scope, plan.segment, plan.cut, after, until, FINGERPRINT.label("fingerprint")
    )
    if ids is not None:
        current_statement = current_statement.where(
            _among(connection, audience_queries.customers.c.id, ids)
        )
    current = current_statement.subquery("current")
    # The held side of the join is narrow (id and fingerprint): the rows sent, nearly all
    # of the table's bytes, are looked up only for the pairs returned.
    held = select(members.c.customer_id, members.c.fingerprint).where(
        members.c.destination_id == destination_id
    )
    if ids is not None:  # alone: with the range too, PostgreSQL scanned the range
        held = held.where(_among(connection, members.c.customer_id, ids))
    else:
        held = held.where(members.c.customer_id > after)
        if until is not None:
            held = held.where(members.c.customer_id <= until)
    held_ids = held.subquery("held")
    held_row = members.alias("held_row")
    sent = (
        select(held_row.c.sent)
        .where(
            held_row.c.destination_id == destination_id,
            held_row.c.customer_id == held_ids.c.customer_id,
        )
        .scalar_subquery()
    )
    statement = select(
        *current.c, held_ids.c.customer_id, sent.label("sent"), held_ids.c.fingerprint
    ).select_from(current.join(held_ids, held_ids.c.customer_id == current.c.id, full=True))
    if not compare_all:
        statement = statement.where(
            or_(
                current.c.id.is_(None),
                held_ids.c.customer_id.is_(None),
                held_ids.c.fingerprint.is_distinct_from(current.c.fingerprint),
            )
        )
    if connection.dialect.name == "postgresql":
        settings = JOIN_SETTINGS if ids is None else {**JOIN_SETTINGS, **LOOK_UP_SETTINGS}
        for name, value in settings.items():  # for the rest of the read's transaction
            connection.exec_driver_sql(f"SET LOCAL {name} = {value}")
    return list(connection.execute(statement).all())


# The join's hash of a range's held ids in memory, not in temporary files; and no JIT
# compilation, which the planner's guess at the look-ups of rows sent invites and which
# costs more than the rest of the read (measured: bench/README.md).
JOIN_SETTINGS = {"work_mem": "'64MB'", "jit": "off"}
# Reading given customers, each is looked up by its key: a small change of a large
# profile was read by a parallel scan of the whole table, growing with it (bench/README.md).
LOOK_UP_SETTINGS = {"enable_seqscan": "off"}


# PostgreSQL takes a batch's ids and rows as arrays: one statement of a few parameters
# rather than 10,000 bound values (a DELETE's IN list, an executemany's 10,000 INSERTs).
# The rows go as one text split by the server at line ends (db/sets.SPLIT; no stored row
# holds one: hex hashes and commas, or JSON, which escapes control characters): psycopg
# quotes a text array element by element in Python, many times slower. So do the ids and
# fingerprints of a remembered batch, as comma-separated numbers.
_FORGET_POSTGRES = text(
    "DELETE FROM destination_members WHERE destination_id = :destination_id "
    "AND customer_id = ANY(CAST(:ids AS bigint[]))"
)
_REMEMBER = sets.BulkWrite.insert(
    sets.RowSet(
        {"customer_id": "bigint", "sent": "text", "fingerprint": "bigint"}, form=sets.SPLIT
    ),
    "destination_members (destination_id, customer_id, profile_id, sent, fingerprint)",
    ":destination_id, :customer_id, :profile_id, :sent, :fingerprint",
    then=" ON CONFLICT (destination_id, customer_id, profile_id)"
    " DO UPDATE SET sent = EXCLUDED.sent, fingerprint = EXCLUDED.fingerprint",
)
_NEW_FINGERPRINTS = sets.RowSet({"customer_id": "bigint", "fingerprint": "bigint"}, form=sets.SPLIT)
_REFINGERPRINT = sets.BulkWrite(
    _NEW_FINGERPRINTS,
    postgres="UPDATE destination_members SET fingerprint = r.fingerprint"
    f" FROM {_NEW_FINGERPRINTS.source} WHERE destination_id = :destination_id"
    " AND destination_members.customer_id = r.customer_id",
    one="UPDATE destination_members SET fingerprint = :fingerprint"
    " WHERE destination_id = :destination_id AND customer_id = :customer_id",
)

# A member as sent: customer id, the row, the fingerprint of the columns it was made from.
Member = tuple[int, str, int | None]


def forget_members(connection: Connection, destination_id: str, ids: Sequence[int]) -> None:
    if not ids:
        return
    if connection.dialect.name == "postgresql":
        connection.execute(_FORGET_POSTGRES, {"destination_id": destination_id, "ids": list(ids)})
        return
    connection.execute(
        delete(members).where(
            members.c.destination_id == destination_id, members.c.customer_id.in_(ids)
        )
    )


def remember_members(
    connection: Connection, destination_id: str, profile_id: str, rows: Sequence[Member]
) -> None:
    """The rows the platform now holds (each replacing what was held for its customer):
    one upsert, not a delete then an insert."""
    _REMEMBER.run(
        Sql.of_connection(connection),
        [
            {"customer_id": customer_id, "sent": sent, "fingerprint": fingerprint}
            for customer_id, sent, fingerprint in rows
        ],
        {"destination_id": destination_id, "profile_id": profile_id},
    )


def refingerprint_members(
    connection: Connection, destination_id: str, rows: Sequence[tuple[int, int]]
) -> None:
    """New fingerprints of held members whose columns changed but whose row did not
    (a name's punctuation, a row held before fingerprints): no call, only a record."""
    _REFINGERPRINT.run(
        Sql.of_connection(connection),
        [
            {"customer_id": customer_id, "fingerprint": fingerprint}
            for customer_id, fingerprint in rows
        ],
        {"destination_id": destination_id},
    )


def vacuum_members(engine: Engine) -> None:
    """PostgreSQL: marks the held rows' pages all-visible and renews the table's
    statistics (`VACUUM (ANALYZE)`, outside any transaction), so that the next sync
    reads ids and fingerprints by an index-only scan rather than the heap of rows sent,
    without waiting for autovacuum (measured: a range's held side read faster than
    unvacuumed, and than by the sequential scan the statistics invite without the index:
    bench/README.md).
    SQLite: nothing (its covering index needs no visibility map)."""
    if engine.dialect.name != "postgresql":
        return
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM (ANALYZE) destination_members")
    except SQLAlchemyError as error:  # the sync itself is done: autovacuum will do it later
        log.warning("destination members: VACUUM failed: %s", type(error).__name__)


def set_members_basis(
    connection: Connection, destination_id: str, basis: str, mark: int | None
) -> None:
    """What the held rows are now compared under, and up to which change number (None:
    keep the number held, which a comparison of every member makes no less true)."""
    values: dict[str, Any] = {"members_basis": basis}
    if mark is not None:
        values["members_seq"] = mark
    connection.execute(
        update(destinations).where(destinations.c.id == destination_id).values(values)
    )


def record_without_waiting_for_disk(connection: Connection) -> None:
    """PostgreSQL commits this transaction without waiting for its WAL to reach the disk
    (`synchronous_commit = off`; a flush follows within milliseconds). What the platform
    took is then recorded in a fraction of the time (a 10,000-row batch's commit waited
    on an fsync), and what a database crash could lose is only the last records of a
    sync: the next one sends their rows again, which the platforms take as the same
    additions and removals (nothing is counted twice: the counters go with the rows).

    The batch's rows, unnested from their arrays, are held in memory rather than in a
    temporary file (a 10,000-row batch is ~4 MB, the default `work_mem`)."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("SET LOCAL synchronous_commit = off")
        connection.exec_driver_sql("SET LOCAL work_mem = '32MB'")


def count_members(connection: Connection, destination_id: str) -> int:
    statement = select(func.count()).where(members.c.destination_id == destination_id)
    return int(connection.scalar(statement) or 0)
