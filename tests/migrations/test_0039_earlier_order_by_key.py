"""Migration 0039: ix_orders_profile_customer holds ordered_at in its key (the rule's
earlier-order look-up walks down to it), carrying the rest as before; and back down.
Built at 0038, read from the database's own catalog."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import Engine, text

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from tests.conftest import ON_POSTGRES
from tests.migrations import database_at

PREVIOUS = "0038"
NAME = "ix_orders_profile_customer"


def test_ordered_at_moves_into_the_key_and_back(tmp_path: Path) -> None:
    with database_at(PREVIOUS, tmp_path) as url:
        _upgraded_and_back(url)


def _upgraded_and_back(database_before: str) -> None:
    engine = make_engine(database_before)
    assert _index(engine) == (
        ["profile_id", "customer_id"],
        ["ordered_at", "order_price", "order_currency", "store_id"] if ON_POSTGRES else [],
    )
    upgrade(database_before)
    assert _index(engine) == (
        ["profile_id", "customer_id", "ordered_at"],
        ["order_price", "order_currency", "store_id"] if ON_POSTGRES else [],
    )
    if ON_POSTGRES:
        assert "ordered_at <" in _earlier_order_plan(engine)
    command.downgrade(alembic_config(database_before), PREVIOUS)
    assert _index(engine)[0] == ["profile_id", "customer_id"]
    engine.dispose()


def _index(engine: Engine) -> tuple[list[str], list[str]]:
    """(key columns, carried columns) of the index, as the database states it."""
    with engine.connect() as conn:
        if ON_POSTGRES:
            query = "SELECT indexdef FROM pg_indexes WHERE indexname = :n"
        else:
            query = "SELECT sql FROM sqlite_master WHERE name = :n"
        definition = conn.execute(text(query), {"n": NAME}).scalar_one()
    keys, _, carried = definition.partition(" INCLUDE ")

    def columns(part: str) -> list[str]:
        inside = part[part.index("(") + 1 : part.rindex(")")]
        return [column.strip().replace('"', "") for column in inside.split(",")]

    return columns(keys), columns(carried) if carried else []


def _earlier_order_plan(engine: Engine) -> str:
    """PostgreSQL's plan for the rule's earlier-order look-up (reclassification's), with
    scans of the whole table ruled out: the order's time is a condition of the index walk,
    not a filter on each of the customer's entries."""
    with engine.connect() as conn:
        conn.execute(text("SET enable_seqscan = off"))
        conn.execute(text("SET enable_bitmapscan = off"))
        rows = conn.execute(
            text(
                "EXPLAIN SELECT EXISTS (SELECT 1 FROM orders AS earlier"
                " WHERE earlier.customer_id = 1 AND earlier.profile_id = 'p'"
                " AND earlier.ordered_at < now())"
            )
        ).scalars()
        plan = "\n".join(rows)
    index_walk = [line for line in plan.splitlines() if "Index Cond" in line]
    assert NAME in plan, plan
    return "\n".join(index_walk)
