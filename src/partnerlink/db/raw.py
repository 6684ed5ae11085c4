"""Hand-written SQL on the driver's own connection, for the hottest paths.

POST /v1/orders runs five or six statements per request. Through SQLAlchemy
each one paid for an execution context, cache-key work and type processing,
which together cost more CPU than the database's own work (measured with
bench/orders_profile.py). Here a statement is plain SQL written once with
`:name` parameters and rendered once per driver (sqlite3 takes `:name`,
psycopg positional `%s`); values go to the driver as they are, converted by the
few helpers below exactly as the models' column types would have stored them.

`Sql` works on a connection checked out of the engine's pool (`transaction`)
or on the connection a Session already uses (`Sql.of_session`), so the same
statements serve the hot path and the ORM's unit of work alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session

from partnerlink.db.base import stored_utc

# How long a batch of orders waits for a row another transaction holds before it gives up and
# runs again (orders/intake/pipeline.py). Mostly the wait is two batches crossing on the same orders,
# which only one giving up ends; a plain wait for another batch's commit lasts a few ms.
# Figures: bench/README.md ("Settings and their figures").
LOCK_WAIT_MS = 20
# lock_not_available, deadlock_detected, serialization_failure
_LOCK_CONFLICTS = frozenset({"55P03", "40P01", "40001"})
NAMED_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Statement:
    """One SQL statement with `:name` parameters, rendered for each driver once.

    For psycopg every occurrence becomes its own positional parameter: a name
    used twice as one parameter makes PostgreSQL deduce one type for two
    places (an untyped string compared with varchar here and inserted as text
    there), which it refuses as ambiguous.

    `binary` names parameters psycopg sends in PostgreSQL's binary form (`%b`):
    for a list, an array whose elements travel length-prefixed, which PostgreSQL
    reads without parsing or unescaping anything (measured on the orders' journal:
    less of PostgreSQL's CPU an order than the same rows as one JSON text;
    bench/README.md).

    `planned_each_time`: never prepared, so PostgreSQL plans it for the values it is
    given each time. psycopg prepares a statement once it has run five times on a
    connection, and PostgreSQL may then keep one generic plan for every later run. A
    generic plan cannot see a parameter's value: a large array compared with `= ANY`
    outside an index is then searched element by element for each row, where the
    planned statement hashes it once (the touches' match to customers: seconds instead of
    milliseconds; bench/README.md, "A defect found on the way").
    """

    __slots__ = ("planned_each_time", "postgresql", "postgresql_names", "sqlite")

    def __init__(
        self,
        text: str,
        *,
        binary: frozenset[str] = frozenset(),
        planned_each_time: bool = False,
    ) -> None:
        if "%" in text:
            raise ValueError("write no % in raw SQL: psycopg reads it as a placeholder")
        self.planned_each_time = planned_each_time
        self.sqlite = text
        self.postgresql = NAMED_PARAMETER.sub(
            lambda name: "%b" if name.group(1) in binary else "%s", text
        )
        self.postgresql_names = tuple(NAMED_PARAMETER.findall(text))


class Sql:
    """Runs Statements on one driver connection, inside the caller's transaction."""

    __slots__ = ("_json", "connection", "deferred", "errors", "postgres", "remembered")

    def __init__(self, connection: Any, dialect_name: str, dbapi: Any) -> None:
        self.connection = connection  # sqlite3.Connection or psycopg.Connection
        # Facts read in the current transaction that its later work may reuse (see
        # `transaction`); emptied when a transaction begins and ends.
        self.remembered: dict[Any, Any] = {}
        # PostgreSQL commands with no result to read (SET LOCAL ...), sent in the same round
        # trip as the next statement (psycopg's pipeline mode), with psycopg's own BEGIN.
        self.deferred: list[str] = []
        self.postgres = dialect_name == "postgresql"
        self.errors = dbapi  # the driver module: .IntegrityError, .OperationalError
        if self.postgres:
            from psycopg.types.json import Json

            self._json: Any = Json
        else:
            self._json = json.dumps

    @classmethod
    def of_session(cls, session: Session) -> Sql:
        """The connection (and open transaction) a Session is using."""
        return cls.of_connection(session.connection())

    @classmethod
    def of_connection(cls, connection: Connection) -> Sql:
        """The driver connection (and open transaction) under a SQLAlchemy Connection."""
        return cls(
            connection.connection.driver_connection,
            connection.dialect.name,
            connection.dialect.loaded_dbapi,
        )

    def _execute(self, statement: Statement, params: Mapping[str, Any]) -> Any:
        if self.postgres:
            values = [params[name] for name in statement.postgresql_names]
            with self._with_deferred():
                return self.connection.execute(
                    statement.postgresql,
                    values,
                    prepare=False if statement.planned_each_time else None,
                )
        return self.connection.execute(statement.sqlite, params)

    @contextmanager
    def _with_deferred(self) -> Iterator[None]:
        """The deferred commands, if any, then what runs inside, in one round trip."""
        if not self.deferred:
            yield
            return
        with self.connection.pipeline():
            for command in self.deferred:
                self.connection.execute(command)
            self.deferred.clear()
            yield

    def row(self, statement: Statement, params: Mapping[str, Any]) -> Any:
        """The first row (a tuple) or None."""
        return self._execute(statement, params).fetchone()

    def first_rows(self, statement: Statement, many: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Runs the statement once per parameter set, in order; the first row of each (or None).

        Each run sees what the earlier ones did, as separate statements would. On
        PostgreSQL they travel together (psycopg's executemany, pipelined and
        prepared once): less client CPU per statement than one at a time or as
        separate pipelined executes (measured: bench/README.md).
        """
        if not many:
            return []
        if not self.postgres:
            return [self.connection.execute(statement.sqlite, params).fetchone() for params in many]
        if len(many) == 1:
            # One set: a plain execute, less client CPU than executemany's pipeline
            # (measured: bench/README.md) for the same single round trip.
            return [self._execute(statement, many[0]).fetchone()]
        names = statement.postgresql_names
        cursor = self.connection.cursor()
        values = [[params[n] for n in names] for params in many]
        with self._with_deferred():
            cursor.executemany(statement.postgresql, values, returning=True)
        rows = [cursor.fetchone()]
        while cursor.nextset():
            rows.append(cursor.fetchone())
        return rows

    def all_rows(self, statement: Statement, params: Mapping[str, Any]) -> list[Any]:
        """Every row (tuples) of one statement."""
        return list(self._execute(statement, params).fetchall())

    def run_many(self, statement: Statement, many: Sequence[Mapping[str, Any]]) -> None:
        """Runs a statement that returns no rows once per parameter set, together."""
        if not many:
            return
        if not self.postgres:
            self.connection.executemany(statement.sqlite, many)
            return
        names = statement.postgresql_names
        with self._with_deferred():
            self.connection.cursor().executemany(
                statement.postgresql, [[params[n] for n in names] for params in many]
            )

    def run(self, statement: Statement, params: Mapping[str, Any]) -> int:
        """Runs a statement that returns no rows; answers the number of rows it touched."""
        count: int = self._execute(statement, params).rowcount
        return count

    def time(self, value: datetime | None) -> Any:
        """A UTCDateTime column's stored form: naive UTC text on SQLite, timestamptz else."""
        stored = stored_utc(value, naive=not self.postgres)
        if stored is None or self.postgres:
            return stored
        # SQLAlchemy's SQLite DATETIME format, so ORM reads and text comparisons agree.
        return stored.isoformat(" ", "microseconds")

    def json(self, value: Any) -> Any:
        """A JSON column's stored form (SQL NULL for None)."""
        return None if value is None else self._json(value)

    def closed(self) -> bool:
        """Whether the driver has closed the connection (server gone, fatal error, close())."""
        if self.postgres:
            return bool(self.connection.closed)
        try:
            self.connection.in_transaction  # noqa: B018 - sqlite3 refuses it once closed
        except self.errors.ProgrammingError:
            return True
        return False

    def forget_transaction(self) -> None:
        """Drops what belonged to one transaction: remembered facts, and deferred commands
        never sent (nothing ran that they would have applied to)."""
        self.remembered.clear()
        self.deferred.clear()

    def wait_briefly_for_locks(self) -> None:
        """For the rest of this transaction, give up on a row lock after a few milliseconds.

        A transaction that holds many rows must not wait on another that may wait
        on it (PostgreSQL finds such deadlocks only after a second); it fails fast
        with a lock conflict instead. SQLite has one writer at a time: no effect.
        """
        if self.postgres:
            # Sent with the transaction's first statement: no round trip of its own.
            self.deferred.append(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")

    def is_lock_conflict(self, error: BaseException) -> bool:
        """A lock wait given up, a deadlock victim, or a serialization failure."""
        return self.postgres and getattr(error, "sqlstate", None) in _LOCK_CONFLICTS

    def json_text(self, text: str) -> Any:
        """A JSON column's stored form of text that is already JSON (no second encoding)."""
        return self._json(text, _as_is) if self.postgres else text

    @contextmanager
    def savepoint(self, name: str) -> Iterator[None]:
        """A nested transaction: an error inside undoes only what ran inside."""
        self.connection.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.connection.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self.connection.execute(f"RELEASE SAVEPOINT {name}")
            raise
        self.connection.execute(f"RELEASE SAVEPOINT {name}")


def _as_is(text: str) -> str:
    return text


def as_sql(db: Session | Sql) -> Sql:
    """Lets a function take either a Session (ORM callers, tests) or a Sql (hot paths)."""
    return db if isinstance(db, Sql) else Sql.of_session(db)


class HeldConnection:
    """A pooled connection taken on first use and kept until `release`, for units of work
    that follow each other closely (the order pipeline's batches): each checkout costs
    the pool's pre-ping, a round trip to PostgreSQL."""

    __slots__ = ("_pooled", "_sql", "engine")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._pooled: Any = None
        self._sql: Sql | None = None

    def sql(self) -> Sql:
        if self._sql is None:
            self._pooled = self.engine.raw_connection()
            dialect = self.engine.dialect
            self._sql = Sql(self._pooled.driver_connection, dialect.name, dialect.loaded_dbapi)
        return self._sql

    def release(self) -> None:
        """Back to the pool (which rolls back anything left open); a connection the driver
        has closed (server gone, fatal error) is dropped, and the next use takes another."""
        pooled, sql = self._pooled, self._sql
        self._pooled = self._sql = None
        if pooled is None or sql is None:
            return
        if sql.closed():
            pooled.invalidate()
        pooled.close()

    def release_if_broken(self) -> None:
        if self._sql is not None and self._sql.closed():
            self.release()


@contextmanager
def checkout(engine: Engine) -> Iterator[Sql]:
    """A pooled connection for several transactions in a row (see `transaction`)."""
    held = HeldConnection(engine)
    try:
        yield held.sql()
    finally:
        held.release()


@contextmanager
def transaction(sql: Sql) -> Iterator[Sql]:
    """One transaction: committed when the block ends, rolled back when it raises.

    SQLite's starts with BEGIN IMMEDIATE, as every write transaction of the
    engine does (see engine.py): the write lock is taken up front, so two
    processes never deadlock upgrading a read lock.

    `sql.remembered` lives exactly as long as the transaction. Whatever work in
    it remembers was read after the transaction began; every request it serves
    arrived before it began (the order pipeline forms a batch, then opens its
    transaction), so reusing those facts answers each request as of a moment
    after its arrival.
    """
    connection = sql.connection
    sql.forget_transaction()
    if not sql.postgres:
        connection.execute("BEGIN IMMEDIATE")
    try:
        yield sql
    except BaseException:
        sql.forget_transaction()
        connection.rollback() if sql.postgres else _sqlite_rollback(connection)
        raise
    sql.forget_transaction()
    if sql.postgres:
        connection.commit()
    else:
        connection.execute("COMMIT")


def _sqlite_rollback(connection: Any) -> None:
    if connection.in_transaction:
        connection.execute("ROLLBACK")
