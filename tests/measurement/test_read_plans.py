"""The merchant's reads over a whole profile (results, lift, lift plan, audiences) are
planned for their own values on PostgreSQL, however often they run (db/plans.py).

psycopg prepares a statement after its fifth run on a connection, and PostgreSQL may then
run it by one generic plan made for no value in particular: at 1,000,000 orders the
results call went from ~0.6 s to 4-5 s from its eleventh run on a connection
(bench/README.md). Times are not asserted here; the plans PostgreSQL used are."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from partnerlink.db.engine import make_engine
from partnerlink.db.plans import plan_for_given_values
from partnerlink.measurement import results as results_service
from tests.conftest import ON_POSTGRES
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, post

RUNS = 12  # past psycopg's 5 runs before it prepares, and PostgreSQL's 5 custom plans


def _orders(client: TestClient, shop: ConnectedStoreFixture) -> str:
    for n, email in enumerate(["ada@example.com", "bob@example.com", None]):
        body = order_body(f"o{n}", createdAt=f"2024-05-0{n + 6}T10:00:00Z", customerEmail=email)
        assert post(client, shop.auth, body).status_code == 200
    return shop.profile.id


def _generic_plans(session: Session) -> dict[str, int]:
    """The connection's prepared statements that PostgreSQL ran by a generic plan."""
    rows = session.execute(
        text("SELECT statement, generic_plans FROM pg_prepared_statements WHERE generic_plans > 0")
    )
    return {statement: count for statement, count in rows}


def _results_many_times(session: Session, profile_id: str) -> None:
    for _ in range(RUNS):
        answer = results_service.results(
            session, profile_id=profile_id, start=date(2024, 5, 1), end=date(2024, 5, 31)
        )
        assert sum(kind["orders"] for kind in answer["classes"].values()) == 3


@pytest.mark.skipif(not ON_POSTGRES, reason="prepared statements' plans: PostgreSQL")
def test_results_read_again_and_again_keep_plans_made_for_their_values(
    app: FastAPI, client: TestClient, shop: ConnectedStoreFixture
) -> None:
    profile_id = _orders(client, shop)
    # As read before db/plans.py: one generic plan for the later runs (what this guards
    # against; asserted, so that the test shows it would see it).
    with _own_connection(app) as session:
        _results_many_times(session, profile_id)
        assert any("orders.conversion" in statement for statement in _generic_plans(session))
    with _own_connection(app) as session:
        plan_for_given_values(session)
        _results_many_times(session, profile_id)
        assert _generic_plans(session) == {}


@contextmanager
def _own_connection(app: FastAPI) -> Iterator[Session]:
    """A session on a connection of its own: prepared statements belong to a connection."""
    engine = make_engine(app.state.settings.database_url, pool_size=1)
    try:
        with Session(engine) as session:
            yield session
            session.rollback()
    finally:
        engine.dispose()


def test_the_read_session_of_a_request_plans_for_its_values(
    app: FastAPI, client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    """Each request's read session sets this before its first read (on SQLite, nothing:
    it plans each statement for its values anyway)."""
    profile_id = _orders(client, shop)
    seen: list[str] = []

    def statement(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        seen.append(sql)

    event.listen(app.state.engine, "before_cursor_execute", statement)
    try:
        answer = client.get(
            f"/merchant/api/profiles/{profile_id}/results?from=2024-05-01&to=2024-05-31",
            headers=owner,
        )
    finally:
        event.remove(app.state.engine, "before_cursor_execute", statement)
    assert answer.status_code == 200
    assert sum(kind["orders"] for kind in answer.json()["classes"].values()) == 3
    setting = [n for n, sql in enumerate(seen) if "plan_cache_mode" in sql]
    aggregate = [n for n, sql in enumerate(seen) if "GROUP BY" in sql]
    if ON_POSTGRES:
        assert setting and aggregate and setting[0] < aggregate[0]
        assert "SET LOCAL plan_cache_mode = force_custom_plan" in seen[setting[0]]
    else:
        assert setting == [] and aggregate
