"""Matching's look-ups reach their row through the index of the key they look up.

Migration 0007: with look-up indexes led by profile_id, PostgreSQL without
statistics (a new database, until autovacuum's first ANALYZE) found customers
by email through the phone index, reading every customer of the profile per
look-up.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from partnerlink.customers.matching import LookUp
from partnerlink.customers.queries import LOOK_UPS
from partnerlink.db.raw import Statement
from tests.factories import ConnectedStoreFixture

# The indexes not led by a look-up key: the audience export reads a profile's customers
# in id order, a chunk at a time (audiences/models.py), and a touch is stored once by its
# whole content (uq_touches_content, CONTRACT §13: a rule of uniqueness, never a look-up),
# and an audience sync reads a profile's customers changed after a number
# (ix_customers_profile_change, migration 0030).
# The plan tests below show the look-ups still take the key-led indexes with them present.
PROFILE_SCAN_INDEXES = {
    "ix_customers_profile_id_id",
    "uq_touches_content",
    "ix_customers_profile_change",
}


def test_every_lookup_index_leads_with_the_key(app: FastAPI) -> None:
    inspector = inspect(app.state.engine)
    for table in ("customers", "touches"):
        for index in inspector.get_indexes(table):
            if index["name"] in PROFILE_SCAN_INDEXES:
                continue
            keys = ("email", "phone_number", "email_sha256", "phone_sha256")
            assert index["column_names"][0] in keys, (table, index)


def _plan(session: Session, statement: Statement, params: dict[str, Any]) -> str:
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        # The plan a pooled connection keeps for a prepared statement, with no statistics.
        session.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        session.execute(text("DELETE FROM pg_statistic WHERE starelid = 'customers'::regclass"))
        count = len(statement.postgresql_names)
        numbered = statement.postgresql.replace("%s", "{}").format(
            *(f"${n}" for n in range(1, count + 1))
        )
        session.execute(text(f"PREPARE lookup ({', '.join(['text'] * count)}) AS {numbered}"))
        values = ", ".join(f"'{params[name]}'" for name in statement.postgresql_names)
        try:
            rows = session.execute(text(f"EXPLAIN EXECUTE lookup ({values})")).scalars()
            return "\n".join(rows)
        finally:
            session.execute(text("DEALLOCATE lookup"))
    driver = connection.connection.driver_connection
    assert driver is not None
    return "\n".join(
        row[3] for row in driver.execute(f"EXPLAIN QUERY PLAN {statement.sqlite}", params)
    )


def test_each_lookup_is_an_index_search_on_its_key(
    session: Session, connected: ConnectedStoreFixture
) -> None:
    profile_id = connected.profile.id
    session.execute(
        text(
            "INSERT INTO customers (profile_id, email, phone_number, created_at, updated_at)"
            " VALUES (:profile_id, :email, :phone, :now, :now)"
        ),
        [
            {
                "profile_id": profile_id,
                "email": f"guest{n}@example.com" if n % 5 else None,
                "phone": f"+1415{2000000 + n}",
                "now": "2024-05-01 12:00:00",
            }
            for n in range(2000)
        ],
    )
    by_email = _plan(
        session,
        LOOK_UPS[LookUp.BY_EMAIL],
        {"profile_id": profile_id, "email": "guest7@example.com"},
    )
    assert "email" in by_email and "phone" not in by_email, by_email
    for statement in (LOOK_UPS[LookUp.BY_PHONE], LOOK_UPS[LookUp.PHONE_ONLY]):
        plan = _plan(session, statement, {"profile_id": profile_id, "phone_number": "+14152000005"})
        assert "phone" in plan, plan
        assert "Seq Scan" not in plan and "SCAN customers" not in plan, plan
