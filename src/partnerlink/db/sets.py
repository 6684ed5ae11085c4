"""Many parameter sets in one PostgreSQL statement, sent as one JSON array.

`Sql.first_rows` runs a statement once per parameter set, pipelined: one round trip, but
PostgreSQL still binds and starts an executor for each set, and psycopg spends its Python
on each (bench/README.md). Where the sets do not depend on one another (look-ups read before any
write, or inserts of distinct keys), one statement that reads them all from
`json_to_recordset` costs neither: the worker's apply of journaled orders went from
~1,250 statements a batch of 500 to about ten (bench/orders_journal.py).

A statement is written once, with `:name` parameters, and rendered here with each name
read from the set's row (`r.name`); the sets travel as one JSON text, which orjson writes
in one call (psycopg's own arrays escape every element in Python).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from psycopg.types.json import Json

from partnerlink.db.raw import NAMED_PARAMETER, Sql, Statement

# The type a column of the rows is read as. A "json" column's value is JSON text already
# (what the orders keep of a body), set into the array as it is: neither escaped into a
# string here nor parsed twice by PostgreSQL.
JSON_TEXT = "json"


def from_rows(text: str) -> str:
    """`text` (with `:name` parameters) reading each name from the row `r` instead."""
    return NAMED_PARAMETER.sub(lambda match: f"r.{match.group(1)}", text)


class RowSet:
    """The parameter sets of one statement: the types PostgreSQL reads them as, its FROM
    item (`source`, the rows `r`) and its `:rows` parameter (`parameter`), from the one
    mapping, so that where the statement is written and where it runs cannot disagree."""

    __slots__ = ("_embedded", "source", "types")

    def __init__(self, types: Mapping[str, str]) -> None:
        self.types = dict(types)
        columns = ", ".join(f"{name} {kind}" for name, kind in self.types.items())
        self.source = f"json_to_recordset(CAST(:rows AS json)) AS r({columns})"
        self._embedded = [name for name, kind in self.types.items() if kind == JSON_TEXT]

    def parameter(self, many: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """The parameter sets as the `:rows` parameter: one JSON array, each set an object.

        Written by orjson in one call for the whole array: times (aware datetimes, as
        Sql.time gives them on PostgreSQL) in RFC 3339 form, which PostgreSQL reads as
        timestamptz, and "json" values (Sql.json_text, Sql.json) as the JSON they hold.
        (The standard library's encoder, object by object with the times formatted in
        Python first, took a large share of the worker's CPU applying journaled orders:
        bench/README.md.)
        """
        if self._embedded:
            rows: list[Any] = []
            for params in many:
                plain = dict(params)
                for name in self._embedded:
                    plain[name] = _json_of(plain[name])
                rows.append(plain)
        else:
            rows = [params if type(params) is dict else dict(params) for params in many]
        return {"rows": orjson.dumps(rows).decode()}


def _json_of(value: Any) -> orjson.Fragment | None:
    if value is None:
        return None
    if isinstance(value, Json):
        return orjson.Fragment(value.obj if value.dumps is not None else json.dumps(value.obj))
    raise TypeError(f"{type(value).__name__} is not JSON text")


class LookUpAtOnce:
    """A read that answers at most one row for a parameter set, run for many sets at once.

    Only for reads that do not depend on one another: each set is answered as of the
    statement's start.
    """

    __slots__ = ("rows", "statement")

    def __init__(self, text: str, types: Mapping[str, str]) -> None:
        self.rows = RowSet({**types, "i_": "integer"})
        self.statement = Statement(
            f"SELECT r.i_, x.* FROM {self.rows.source} CROSS JOIN LATERAL ({from_rows(text)}) AS x"
        )

    def first_rows(self, sql: Sql, many: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Each set's row (a tuple, without the set's position) or None, in order."""
        found: list[Any] = [None] * len(many)
        numbered = [{**params, "i_": index} for index, params in enumerate(many)]
        for row in sql.all_rows(self.statement, self.rows.parameter(numbered)):
            found[row[0]] = tuple(row[1:])
        return found
