"""Exact sums of integer columns on both databases: money in minor units, whatever the
number of orders summed.

PostgreSQL sums a bigint as a numeric, exact at any size. SQLite's SUM of integers
stops with "integer overflow" past 2**63 - 1, so there a sum is taken as two that
cannot overflow: of each value's millions and of its remainder. SQLite's integer
division truncates toward zero and its `%` keeps the dividend's sign, so
value = (value / M) * M + value % M holds for refunds too. The remainders' sum is
carried into the millions so that it lies in [0, M): then the parts compared one
after the other order two sums as the sums themselves, and a ranking by spend sorts
by them in SQL.

`exact_sum` gives the parts as labelled columns, `parts` finds them in a subquery, and
`total` turns the values read back into the sum, a Python int.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, func, literal, literal_column, tuple_, type_coerce
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql.elements import Label

_MILLION = 1_000_000
_LOW = "_low"


def exact_sum(
    dialect: str, value: ColumnElement[Any] | QueryableAttribute[Any], name: str
) -> list[Label[Any]]:
    """SUM(value) as the columns `name` (and, on SQLite, `name` + "_low")."""
    if dialect == "postgresql":
        return [func.sum(value).label(name)]
    million = literal_column(str(_MILLION), BigInteger)
    integer = type_coerce(value, BigInteger)  # so that `//` is SQLite's integer division
    remainders = func.sum(integer % million, type_=BigInteger)
    remainder = (remainders % million + million) % million
    carried = func.sum(integer // million, type_=BigInteger) + (remainders - remainder) // million
    return [carried.label(name), remainder.label(name + _LOW)]


def parts(columns: Any, name: str) -> list[ColumnElement[Any]]:
    """The columns of the sum `name` among a subquery's `columns` (`subquery.c`)."""
    return [columns[key] for key in (name, name + _LOW) if key in columns]


def total(values: Sequence[Any]) -> int:
    """The sum, from the values of its parts as read (NULL, a sum of no rows, is 0)."""
    whole = 0
    for value in values:
        whole = whole * _MILLION + int(value or 0)
    return whole


def above(columns: Sequence[ColumnElement[Any]], values: Sequence[Any]) -> ColumnElement[bool]:
    """The sum whose parts are `columns` is greater than the one of parts `values`."""
    return tuple_(*columns) > tuple_(*(literal(v) for v in values))


def equal(columns: Sequence[ColumnElement[Any]], values: Sequence[Any]) -> ColumnElement[bool]:
    return tuple_(*columns) == tuple_(*(literal(v) for v in values))
