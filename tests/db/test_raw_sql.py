"""db/raw.py on the configured database: batched statements and the batch's lock wait."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from partnerlink.db.raw import LOCK_WAIT_MS, HeldConnection, Statement, checkout, transaction

ECHO = Statement("SELECT :n * 10")


def test_first_rows_answers_each_parameter_set_in_order(app: FastAPI) -> None:
    with checkout(app.state.engine) as sql, transaction(sql):
        rows = sql.first_rows(ECHO, [{"n": n} for n in range(5)])
    assert [row[0] for row in rows] == [0, 10, 20, 30, 40]


def test_later_statements_see_what_earlier_ones_wrote(app: FastAPI) -> None:
    with checkout(app.state.engine) as sql, transaction(sql):
        sql.run(Statement("CREATE TEMPORARY TABLE seen (n INTEGER)"), {})
        rows = sql.first_rows(
            Statement("INSERT INTO seen (n) SELECT COUNT(*) FROM seen WHERE :n >= 0 RETURNING n"),
            [{"n": n} for n in range(3)],
        )
    assert [row[0] for row in rows] == [0, 1, 2]


def test_a_batch_gives_up_on_locks_quickly_from_its_first_statement(app: FastAPI) -> None:
    with checkout(app.state.engine) as sql:
        with transaction(sql):
            sql.wait_briefly_for_locks()
            if sql.postgres:
                setting = sql.row(Statement("SELECT current_setting('lock_timeout')"), {})
                # Sent with the first statement (one round trip), in force from it on.
                assert setting == (f"{LOCK_WAIT_MS}ms",)
            else:  # one writer at a time: nothing to set
                assert sql.deferred == []
        if sql.postgres:
            with transaction(sql):  # SET LOCAL: the next transaction waits as configured
                assert sql.row(Statement("SELECT current_setting('lock_timeout')"), {}) == ("0",)


def test_a_closed_connection_is_seen_and_dropped_from_the_pool(app: FastAPI) -> None:
    engine = app.state.engine
    held = HeldConnection(engine)
    sql = held.sql()
    assert not sql.closed()
    sql.connection.close()  # as the driver leaves it when the server goes away
    assert sql.closed()
    held.release_if_broken()
    fresh = held.sql()
    assert fresh.connection is not sql.connection and not fresh.closed()
    assert fresh.row(ECHO, {"n": 4}) == (40,)
    held.release()


def test_binary_parameters_render_as_binary_placeholders_for_psycopg_only() -> None:
    statement = Statement("SELECT :plain, :packed, :plain_again", binary=frozenset({"packed"}))
    assert statement.postgresql == "SELECT %s, %b, %s"
    assert statement.sqlite == "SELECT :plain, :packed, :plain_again"
    assert statement.postgresql_names == ("plain", "packed", "plain_again")


def test_a_binary_text_array_keeps_every_character(app: FastAPI) -> None:
    with checkout(app.state.engine) as sql:
        if not sql.postgres:
            pytest.skip("arrays are PostgreSQL's; SQLite takes the journal row by row")
        texts = ['{"a":"\\"q\\" \\\\ \u2028"}', "Zoë 🍕", "", "x" * 10_000, 'comma, {brace} "q"']
        with transaction(sql):
            rows = sql.all_rows(
                Statement(
                    "SELECT t, n FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS u(t, n)",
                    binary=frozenset({"texts"}),
                ),
                {"texts": texts},
            )
    assert [row[0] for row in rows] == texts
    assert [row[1] for row in rows] == [1, 2, 3, 4, 5]
