"""Many parameter sets in one PostgreSQL statement; on SQLite, one statement a set.

`Sql.first_rows` runs a statement once per parameter set, pipelined: one round trip, but
PostgreSQL still binds and starts an executor for each set, and psycopg spends its Python
on each (bench/README.md). Where the sets do not depend on one another (look-ups read before any
write, or inserts of distinct keys), one statement that reads them all as rows costs
neither: the worker's apply of journaled orders went from ~1,250 statements a batch of
500 to about ten (bench/orders_journal.py).

A statement is written once, with `:name` parameters, and rendered here with each name
read from the set's row (`r.name`). The rows travel in one of three forms (`RowSet`):
one JSON text (`json_to_recordset`, any column type; orjson writes it in one call, where
psycopg's own text arrays escape every element in Python), one array a column in
PostgreSQL's binary form (`unnest`, in order: long texts are stored as they come, without
being lexed), or one text a column that the server splits (numbers at commas, texts at
line ends: the least work on both sides, for rows whose texts hold no line break).
`BulkWrite` is a write of many rows in that form on PostgreSQL, and on SQLite (or for
rows the form cannot carry) the same write of one row, run for each (executemany).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from psycopg.types.json import Json

from partnerlink.db.raw import NAMED_PARAMETER, Sql, Statement

# The type a column of the rows is read as. A "json" column's value is JSON text already
# (what the orders keep of a body), set into the array as it is: neither escaped into a
# string here nor parsed twice by PostgreSQL.
JSON_TEXT = "json"
# How a RowSet's rows travel (see the module's doc).
JSON_ROWS, ARRAYS, SPLIT = "json rows", "arrays", "split texts"
_TEXT_TYPES = frozenset({"text", JSON_TEXT})


def from_rows(text: str, names: Iterable[str] | None = None) -> str:
    """`text` (with `:name` parameters) reading each name (of `names`, if given; others stay
    parameters) from the row `r` instead."""
    only = None if names is None else frozenset(names)
    return NAMED_PARAMETER.sub(
        lambda match: (
            match.group(0)
            if only is not None and match.group(1) not in only
            else f"r.{match.group(1)}"
        ),
        text,
    )


class RowSet:
    """The parameter sets of one statement: the types PostgreSQL reads them as, its FROM
    item (`source`, the rows `r`) and its parameters (`parameter`), from the one mapping,
    so that where the statement is written and where it runs cannot disagree. `form` is
    how the rows travel: JSON_ROWS (the `:rows` parameter), ARRAYS (`:rows_<name>`, a row's
    place `r.n_`) or SPLIT (`:rows_<name>`; a number column may hold None, a text none)."""

    __slots__ = ("_embedded", "binary", "form", "source", "types")

    def __init__(self, types: Mapping[str, str], *, form: str = JSON_ROWS) -> None:
        self.types = dict(types)
        self.form = form
        self.binary: frozenset[str] = frozenset()
        names = ", ".join(self.types)
        if form == ARRAYS:
            arrays = ", ".join(f"CAST(:rows_{n} AS {k}[])" for n, k in self.types.items())
            self.source = f"unnest({arrays}) WITH ORDINALITY AS r({names}, n_)"
            self.binary = frozenset(f"rows_{name}" for name in self.types)
        elif form == SPLIT:
            texts = ", ".join(_split(name, kind) for name, kind in self.types.items())
            self.source = f"unnest({texts}) AS r({names})"
        else:
            columns = ", ".join(f"{name} {kind}" for name, kind in self.types.items())
            self.source = f"json_to_recordset(CAST(:rows AS json)) AS r({columns})"
        self._embedded = [name for name, kind in self.types.items() if kind == JSON_TEXT]

    def fits(self, many: Sequence[Mapping[str, Any]]) -> bool:
        """Whether these rows can travel in this form (SPLIT: no text holds a line break
        or is None, and a lone row's is not empty, which would split into no element)."""
        if self.form != SPLIT:
            return True
        texts = [name for name, kind in self.types.items() if kind in _TEXT_TYPES]
        return all(
            (value := params[name]) is not None and "\n" not in value
            for params in many
            for name in texts
        ) and (len(many) > 1 or all(many[0][name] for name in texts))

    def parameter(self, many: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The parameter sets as this form's parameters (JSON_ROWS: see `json_rows`)."""
        if self.form == ARRAYS:
            return {f"rows_{name}": [params[name] for params in many] for name in self.types}
        if self.form == SPLIT:
            return {
                f"rows_{name}": ("\n" if kind in _TEXT_TYPES else ",").join(
                    "" if (value := params[name]) is None else str(value) for params in many
                )
                for name, kind in self.types.items()
            }
        return self.json_rows(many)

    def json_rows(self, many: Sequence[Mapping[str, Any]]) -> dict[str, str]:
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


def _split(name: str, kind: str) -> str:
    if kind in _TEXT_TYPES:
        return f"string_to_array(:rows_{name}, E'\\n')"
    # An empty element (None) is NULL.
    return f"CAST(string_to_array(:rows_{name}, ',', '') AS {kind}[])"


class BulkWrite:
    """One write of many rows, for both databases: on PostgreSQL one statement reading
    them from `rows.source` (`postgres`, with `r.<name>`), on SQLite, or for rows `rows`'s
    form cannot carry, the same write of one row (`one`, with `:<name>`) run for each,
    together (executemany). Parameters other than the rows' columns are given once, shared.
    """

    __slots__ = ("one", "postgres", "rows")

    def __init__(self, rows: RowSet, *, postgres: str, one: str) -> None:
        self.rows = rows
        self.postgres = Statement(postgres, binary=rows.binary)
        self.one = Statement(one)

    @classmethod
    def insert(
        cls, rows: RowSet, into: str, values: str, *, then: str = "", in_order: bool = False
    ) -> BulkWrite:
        """`INSERT INTO {into}` of `values` (`:name` of the rows' columns and of shared
        parameters), followed by `then` (an ON CONFLICT clause, say). `in_order` (ARRAYS):
        the rows are inserted in the order given, as identity columns then number them."""
        if in_order and rows.form != ARRAYS:
            raise ValueError("only rows sent as arrays keep their order")
        order = " ORDER BY r.n_" if in_order else ""
        selected = from_rows(values, rows.types)
        return cls(
            rows,
            postgres=f"INSERT INTO {into} SELECT {selected} FROM {rows.source}{order}{then}",
            one=f"INSERT INTO {into} VALUES ({values}){then}",
        )

    def run(
        self,
        sql: Sql,
        many: Sequence[Mapping[str, Any]],
        shared: Mapping[str, Any] | None = None,
    ) -> None:
        if not many:
            return
        given = shared or {}
        if sql.postgres and self.rows.fits(many):
            sql.run(self.postgres, {**given, **self.rows.parameter(many)})
        else:
            sql.run_many(self.one, [{**given, **params} for params in many])


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
