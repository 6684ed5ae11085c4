"""Measurement's reads over a whole profile (results, lift, lift plan) are planned for
their own values on PostgreSQL, however often they run (db/plans.py).

psycopg prepares a statement after its fifth run on a connection, and PostgreSQL may then
run it by one generic plan made for no value in particular: at 1,000,000 orders the
results call went from ~0.6 s to 4-5 s from its eleventh run on a connection
(bench/README.md). Times are not asserted here; the plans PostgreSQL used are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from partnerlink.db.engine import make_engine
from partnerlink.measurement import queries
from partnerlink.measurement import results as results_service
from tests.conftest import ON_POSTGRES
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, post
from tests.web.conftest import sign_in_console

RUNS = 12  # past psycopg's 5 runs before it prepares, and PostgreSQL's 5 custom plans
MAY = (date(2024, 5, 1), date(2024, 5, 31))


def _orders(client: TestClient, shop: ConnectedStoreFixture) -> str:
    for n, email in enumerate(["ada@example.com", "bob@example.com", None]):
        body = order_body(f"o{n}", createdAt=f"2024-05-0{n + 6}T10:00:00Z", customerEmail=email)
        assert post(client, shop.auth, body).status_code == 200
    return shop.profile.id


def _generic_plans(session: Session) -> list[str]:
    """The connection's prepared queries that PostgreSQL ran by a generic plan (a prepared
    SET counts its runs as generic: it has no plan to choose)."""
    found = session.execute(
        text(
            "SELECT statement FROM pg_prepared_statements"
            " WHERE generic_plans > 0 AND statement NOT LIKE 'SET %'"
        )
    )
    return list(found.scalars())


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


@pytest.mark.skipif(not ON_POSTGRES, reason="prepared statements' plans: PostgreSQL")
def test_results_read_again_and_again_keep_plans_made_for_their_values(
    app: FastAPI, client: TestClient, shop: ConnectedStoreFixture
) -> None:
    profile_id = _orders(client, shop)
    low, high = (datetime.combine(day, datetime.min.time(), UTC) for day in MAY)
    # The results' daily aggregate run as it was before db/plans.py: a generic plan from
    # the sixth prepared run on (asserted, so that the test shows it would see one).
    with _own_connection(app) as session:
        for _ in range(RUNS):
            session.execute(queries.orders_by_day(session, profile_id, low, high, False)).all()
        assert any("GROUP BY" in statement for statement in _generic_plans(session))
    with _own_connection(app) as session:
        for _ in range(RUNS):
            answer = results_service.results(
                session, profile_id=profile_id, start=MAY[0], end=MAY[1]
            )
            assert sum(kind["orders"] for kind in answer["classes"].values()) == 3
        assert _generic_plans(session) == []


def _statements(app: FastAPI, request: Callable[[], Any]) -> list[str]:
    seen: list[str] = []

    def statement(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        seen.append(sql)

    event.listen(app.state.engine, "before_cursor_execute", statement)
    try:
        answer = request()
    finally:
        event.remove(app.state.engine, "before_cursor_execute", statement)
    assert answer.status_code == 200, answer.text
    return seen


def test_the_api_and_the_console_plan_results_for_their_values(
    app: FastAPI, client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    """Both set it before their first read over the profile (on SQLite nothing is set: it
    plans each statement for its values anyway)."""
    profile_id = _orders(client, shop)
    period = {"from": MAY[0].isoformat(), "to": MAY[1].isoformat()}
    api = f"/merchant/api/profiles/{profile_id}/results"
    by_api = _statements(app, lambda: client.get(api, params=period, headers=owner))
    sign_in_console(client)
    page = f"/merchant/profiles/{profile_id}/results"
    by_console = _statements(app, lambda: client.get(page, params=period))
    for seen in (by_api, by_console):
        setting = [n for n, sql in enumerate(seen) if "plan_cache_mode" in sql]
        aggregate = [n for n, sql in enumerate(seen) if "GROUP BY" in sql]
        assert aggregate
        if ON_POSTGRES:
            assert setting and setting[0] < aggregate[0]
            assert "SET LOCAL plan_cache_mode = force_custom_plan" in seen[setting[0]]
        else:
            assert setting == []
