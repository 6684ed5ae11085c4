"""Keyset pagination: one page of a list, and the cursor of the next (CONTRACT.md §13).

A page is "the first `limit` items whose sort key comes after the cursor's", read with one
`WHERE key > cursor ORDER BY key LIMIT limit + 1`: the extra row tells whether a next page
exists without counting. The sort key must be unique (end it with an id) and never change
for an item; with a key that only grows (an integer primary key, or a creation time then an
id) an item added between two pages lands after every item already shown, so a client that
follows `nextCursor` sees each item exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeDecorator

from partnerlink.kit.cursors import CursorValue, decode_cursor, encode_cursor
from partnerlink.problems import ValidationFailed

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None  # None on the last page


def after(
    key: Sequence[InstrumentedAttribute[Any]],
    values: Sequence[CursorValue],
    *,
    descending: bool = False,
) -> Any:
    """`key > values` in the key's lexicographic order (`<` when `descending`), spelled
    with AND/OR (no row values, which older SQLite lacks): (a > x) OR (a = x AND b > y) OR ..."""
    terms: list[ColumnElement[bool]] = []
    for position, column in enumerate(key):
        equal_before = [key[i] == values[i] for i in range(position)]
        beyond = column < values[position] if descending else column > values[position]
        terms.append(and_(*equal_before, beyond))
    return or_(*terms)


def keyset_page(
    session: Session,
    statement: Select[T],
    *,
    key: Sequence[InstrumentedAttribute[Any]],
    limit: int,
    cursor: str | None,
    key_of: Callable[[T], Sequence[CursorValue]] | None = None,
    descending: bool = False,
) -> Page[T]:
    """The page of `statement`'s items (ORM objects, one per row) after `cursor`.

    `key` is the unique ascending sort key (its columns in order); `key_of` reads it from an
    item, by default the item's attributes of the same names. A cursor this list did not
    make answers 400 `invalid_field` on `cursor`. `descending`: the key's order reversed
    (newest first, with a key that only grows).
    """
    if cursor:
        try:
            values = decode_cursor(cursor, [_python_type(column) for column in key])
        except ValueError as error:
            raise ValidationFailed(
                "cursor: not a cursor of this list",
                errors=[{"field": "cursor", "message": "not a cursor of this list"}],
            ) from error
        statement = statement.where(after(key, values, descending=descending))
    order = [column.desc() for column in key] if descending else list(key)
    rows = list(session.scalars(statement.order_by(None).order_by(*order).limit(limit + 1)))
    items = rows[:limit]
    if len(rows) <= limit or not items:
        return Page(items=items, next_cursor=None)
    last = items[-1]
    last_key = key_of(last) if key_of else [getattr(last, column.key) for column in key]
    return Page(items=items, next_cursor=encode_cursor(last_key))


def _python_type(column: InstrumentedAttribute[Any]) -> type:
    """The Python type of a key column's values (a TypeDecorator such as UTCDateTime answers
    `object` itself: its underlying type says)."""
    column_type = column.type
    if isinstance(column_type, TypeDecorator):
        column_type = column_type.impl_instance
    kind: type = column_type.python_type
    return datetime if issubclass(kind, datetime) else kind
