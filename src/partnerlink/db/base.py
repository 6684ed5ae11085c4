"""Declarative base, shared column types and helpers used by every domain's models."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, MetaData, String
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

# Stable constraint names keep Alembic migrations identical on SQLite and PostgreSQL.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


# SQLite only auto-increments INTEGER PRIMARY KEY, not BIGINT.
BigIntPK = BigInteger().with_variant(Integer, "sqlite")


def stored_utc(value: datetime | None, *, naive: bool) -> datetime | None:
    """A UTCDateTime column's value as stored: UTC, without its offset where `naive` (SQLite).

    The one rule for the ORM (`UTCDateTime`) and hand-written SQL (`db.raw.Sql.time`).
    """
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTCDateTime column")
    value = value.astimezone(UTC)
    return value.replace(tzinfo=None) if naive else value


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC; always hands back an aware datetime (SQLite drops offsets)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        return stored_utc(value, naive=dialect.name == "sqlite")

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


def IdColumn() -> Any:
    from sqlalchemy.orm import mapped_column

    return mapped_column(String(36), primary_key=True, default=new_id)


def insert_new(connection: Connection, table: Any, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: a row already there (even one a concurrent
    request inserted) is simply kept."""
    if not rows:
        return
    insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    connection.execute(insert(table).values(list(rows)).on_conflict_do_nothing())
