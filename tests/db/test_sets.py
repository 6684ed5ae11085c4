"""db/sets.py: many parameter sets in one PostgreSQL statement, read back exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Json

from partnerlink.db import sets
from partnerlink.db.raw import Sql, Statement, checkout, transaction

ROWS = sets.RowSet(
    {
        "n": "bigint",
        "name": "text",
        "at": "timestamptz",
        "details": sets.JSON_TEXT,
    }
)
# Each set read back from the rows, the JSON column as the text PostgreSQL keeps.
READ_BACK = Statement(
    f"SELECT {sets.from_rows(':n, :name, :at, CAST(:details AS text)')} FROM {ROWS.source}"
)
AWKWARD = ["", 'quote " and \\ backslash', "new\nline\ttab", "Zoë 🍕", "\u2028", "%s"]


def _parameter(
    n: int, name: str | None, at: datetime | None, details: str | None
) -> dict[str, Any]:
    return {
        "n": n,
        "name": name,
        "at": at,
        "details": None if details is None else Json(details, dumps=lambda text: text),
    }


def test_the_rows_parameter_is_one_json_array_with_json_texts_set_in_as_they_are() -> None:
    at = datetime(2024, 5, 1, 12, 30, 0, 123456, tzinfo=UTC)
    details = '{"b": 1,  "a": [true, null, "x"]}'  # spacing and key order as given
    text = ROWS.parameter([_parameter(1, 'say "hi"', at, details)])["rows"]
    assert json.loads(text) == [
        {
            "n": 1,
            "name": 'say "hi"',
            "at": "2024-05-01T12:30:00.123456+00:00",
            "details": {"b": 1, "a": [True, None, "x"]},
        }
    ]
    assert details in text  # not escaped into a string
    nothing = ROWS.parameter([_parameter(2, None, None, None)])["rows"]
    assert json.loads(nothing) == [{"n": 2, "name": None, "at": None, "details": None}]


def test_a_set_of_json_columns_only_is_still_json() -> None:
    only_json = sets.RowSet({"a": sets.JSON_TEXT, "b": sets.JSON_TEXT})
    text = only_json.parameter(
        [{"a": Json("[1, 2]", dumps=lambda text: text), "b": None}, {"a": None, "b": None}]
    )["rows"]
    assert json.loads(text) == [{"a": [1, 2], "b": None}, {"a": None, "b": None}]


def test_a_value_that_is_not_json_text_is_refused() -> None:
    with pytest.raises(TypeError):
        ROWS.parameter([{"n": 1, "name": "x", "at": None, "details": {"a": 1}}])


@pytest.fixture
def postgres_sql(app: FastAPI) -> Iterator[Sql]:
    if app.state.engine.dialect.name != "postgresql":
        pytest.skip("json_to_recordset is PostgreSQL's; SQLite runs statements one by one")
    with checkout(app.state.engine) as sql:
        yield sql


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.lists(
        st.one_of(st.none(), st.sampled_from(AWKWARD), st.text(max_size=30)), min_size=1, max_size=8
    ),
    offset_minutes=st.integers(-14 * 60, 14 * 60),
    micro=st.integers(0, 999_999),
)
def test_postgresql_reads_back_every_value_as_sent(
    postgres_sql: Sql, names: list[str | None], offset_minutes: int, micro: int
) -> None:
    names = [None if name is None else name.replace("\x00", "") for name in names]
    zone = timezone(timedelta(minutes=offset_minutes))
    at = datetime(2024, 2, 29, 23, 59, 59, micro, tzinfo=zone)
    many = [
        _parameter(index, name, at if index % 2 else None, json.dumps({"name": name, "i": index}))
        for index, name in enumerate(names)
    ]
    with transaction(postgres_sql):
        rows = postgres_sql.all_rows(READ_BACK, ROWS.parameter(many))
    assert [(n, name, when, json.loads(details)) for n, name, when, details in rows] == [
        (index, name, at if index % 2 else None, {"name": name, "i": index})
        for index, name in enumerate(names)
    ]


def test_a_look_up_at_once_answers_each_set_in_order_and_none_where_nothing_matched(
    postgres_sql: Sql,
) -> None:
    look_up = sets.LookUpAtOnce(
        "SELECT v.word FROM (VALUES ('a', 1), ('b', 2), ('b', 3)) AS v(word, n)"
        " WHERE v.word = :word ORDER BY v.n DESC LIMIT 1",
        {"word": "text"},
    )
    with transaction(postgres_sql):
        found = look_up.first_rows(postgres_sql, [{"word": w} for w in ["b", "z", "a", "b"]])
    assert found == [("b",), None, ("a",), ("b",)]


def test_split_texts_carry_only_rows_whose_texts_split_back_as_they_were() -> None:
    split = sets.RowSet({"n": "bigint", "name": "text"}, form=sets.SPLIT)
    assert split.fits([{"n": 1, "name": "a"}, {"n": None, "name": ""}])
    assert split.parameter([{"n": 1, "name": "a"}, {"n": None, "name": ""}]) == {
        "rows_n": "1,",
        "rows_name": "a\n",
    }
    assert not split.fits([{"n": 1, "name": "two\nlines"}])
    assert not split.fits([{"n": 1, "name": None}, {"n": 2, "name": "b"}])
    assert not split.fits([{"n": 1, "name": ""}])  # splits into no element at all


@pytest.fixture
def any_sql(app: FastAPI) -> Iterator[Sql]:
    with checkout(app.state.engine) as sql:
        yield sql


@pytest.mark.parametrize("form", [sets.ARRAYS, sets.SPLIT, sets.JSON_ROWS])
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(st.sampled_from(AWKWARD), min_size=1, max_size=6))
def test_a_bulk_write_stores_every_row_as_given_on_either_database(
    any_sql: Sql, form: str, names: list[str]
) -> None:
    """On PostgreSQL one statement (or, for rows the form cannot carry, one a row); on
    SQLite one a row: the same rows either way, with the shared parameters."""
    write = sets.BulkWrite.insert(
        sets.RowSet({"n": "bigint", "name": "text"}, form=form),
        "bulk_rows (n, name, k)",
        ":n, :name, :k",
    )
    with transaction(any_sql):
        any_sql.run(Statement("CREATE TEMP TABLE bulk_rows (n bigint, name text, k bigint)"), {})
        write.run(any_sql, [{"n": n, "name": name} for n, name in enumerate(names)], {"k": 7})
        stored = any_sql.all_rows(Statement("SELECT n, name, k FROM bulk_rows ORDER BY n"), {})
        any_sql.run(Statement("DROP TABLE bulk_rows"), {})
    assert [tuple(row) for row in stored] == [(n, name, 7) for n, name in enumerate(names)]


def test_rows_sent_as_arrays_keep_their_places(postgres_sql: Sql) -> None:
    rows = sets.RowSet({"name": "text"}, form=sets.ARRAYS)
    read = Statement(f"SELECT r.n_, r.name FROM {rows.source}", binary=rows.binary)
    names = ["c", "a", "b", *AWKWARD]
    with transaction(postgres_sql):
        found = postgres_sql.all_rows(read, rows.parameter([{"name": n} for n in names]))
    assert [tuple(row) for row in found] == list(enumerate(names, start=1))
