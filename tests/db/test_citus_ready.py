"""The migrated schema is ready to be sharded by profile with Citus (issue 28).

The plan is partnerlink.db.distribution.PLAN (docs/deployment.md mirrors it). Read from
the catalog of the database the suite migrated to the head:

- every table is in the plan, and every table in the plan exists;
- a distributed table has a NOT NULL `profile_id`, and every unique index on it (its
  primary key, unique constraints, partial or expression unique indexes) has `profile_id`
  among its key columns;
- a foreign key between distributed tables pairs `profile_id` with `profile_id`;
- no foreign key goes from a reference or local table to a distributed one, nor from a
  distributed or reference table to a local one (Citus refuses them).

On SQLite only what SQLite's catalog tells is checked: the tables and the `profile_id`
columns; keys are PostgreSQL's (migration 0025 leaves SQLite's as they were).
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Connection

from partnerlink.db.distribution import DISTRIBUTION_COLUMN, PLAN

_UNIQUE_INDEXES = text(
    """
    SELECT t.relname, i.relname,
           EXISTS (SELECT 1 FROM unnest(x.indkey) AS k(attnum)
                   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                   WHERE a.attname = :column)
    FROM pg_index x
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE x.indisunique AND n.nspname = current_schema()
    ORDER BY 1, 2
    """
)

# For each foreign key: its table, the referenced table, and whether the distribution
# column of the one is paired with the distribution column of the other.
_FOREIGN_KEYS = text(
    """
    SELECT c.conname, src.relname, dst.relname,
           EXISTS (SELECT 1 FROM unnest(c.conkey, c.confkey) AS k(mine, theirs)
                   JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.mine
                   JOIN pg_attribute b ON b.attrelid = c.confrelid AND b.attnum = k.theirs
                   WHERE a.attname = :column AND b.attname = :column)
    FROM pg_constraint c
    JOIN pg_class src ON src.oid = c.conrelid
    JOIN pg_class dst ON dst.oid = c.confrelid
    JOIN pg_namespace n ON n.oid = c.connamespace
    WHERE c.contype = 'f' AND n.nspname = current_schema()
    ORDER BY 1
    """
)


def _table_shortfalls(tables: set[str], columns: dict[str, dict[str, bool]]) -> list[str]:
    """Tables missing from the plan or the schema; distributed tables whose
    `profile_id` is missing or nullable. `columns`: table → column → nullable."""
    found = [f"{name}: not in the distribution plan" for name in sorted(tables - set(PLAN))]
    found += [f"{name}: planned but not in the schema" for name in sorted(set(PLAN) - tables)]
    for name, placement in PLAN.items():
        if placement != "distributed" or name not in tables:
            continue
        nullable = columns[name].get(DISTRIBUTION_COLUMN)
        if nullable is None:
            found.append(f"{name}: no {DISTRIBUTION_COLUMN}")
        elif nullable:
            found.append(f"{name}: {DISTRIBUTION_COLUMN} may be NULL")
    return found


def _foreign_key_shortfall(name: str, source: str, target: str, paired: bool) -> str | None:
    mine, theirs = PLAN.get(source), PLAN.get(target)
    if mine == "distributed" and theirs == "distributed":
        return None if paired else f"{name}: {source} → {target} without {DISTRIBUTION_COLUMN}"
    if theirs == "distributed":
        return f"{name}: {mine} table {source} → distributed {target}"
    if theirs == "local" and mine != "local":
        return f"{name}: {mine} table {source} → local {target}"
    return None


def postgres_shortfalls(conn: Connection) -> list[str]:
    """Everything standing between the schema and the plan, one line each."""
    inspector = inspect(conn)
    tables = set(inspector.get_table_names())
    columns = {
        name: {c["name"]: bool(c["nullable"]) for c in inspector.get_columns(name)}
        for name in tables
    }
    found = _table_shortfalls(tables, columns)
    for table, index, has_column in conn.execute(_UNIQUE_INDEXES, {"column": DISTRIBUTION_COLUMN}):
        if PLAN.get(table) == "distributed" and not has_column:
            found.append(f"{index}: unique on {table} without {DISTRIBUTION_COLUMN}")
    for name, source, target, paired in conn.execute(
        _FOREIGN_KEYS, {"column": DISTRIBUTION_COLUMN}
    ):
        shortfall = _foreign_key_shortfall(name, source, target, paired)
        if shortfall:
            found.append(shortfall)
    return found


def test_the_migrated_schema_follows_the_distribution_plan(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                found = postgres_shortfalls(conn)
            else:
                inspector = inspect(conn)
                tables = set(inspector.get_table_names())
                columns = {
                    name: {c["name"]: False for c in inspector.get_columns(name)} for name in tables
                }
                found = _table_shortfalls(tables, columns)
    finally:
        engine.dispose()
    print(f"{len(found)} shortfalls", *found, sep="\n")
    assert found == []


def test_a_foreign_key_is_judged_by_where_both_its_tables_go() -> None:
    """The rules themselves, on made-up keys (the schema test only sees the ones we have)."""
    assert _foreign_key_shortfall("fk", "orders", "stores", paired=True) is None
    assert _foreign_key_shortfall("fk", "orders", "stores", paired=False)
    assert _foreign_key_shortfall("fk", "orders", "profiles", paired=False) is None
    assert _foreign_key_shortfall("fk", "pairing_codes", "stores", paired=False)
    assert _foreign_key_shortfall("fk", "sms_stops", "stores", paired=False)
    assert _foreign_key_shortfall("fk", "orders", "sms_stops", paired=False)
    assert _foreign_key_shortfall("fk", "profiles", "sms_stops", paired=False)
    assert _foreign_key_shortfall("fk", "merchant_sessions", "merchants", paired=False) is None
    assert _foreign_key_shortfall("fk", "webhook_events", "sms_stops", paired=False) is None


def test_the_deployment_guide_gives_the_same_plan() -> None:
    """docs/deployment.md's table names each table once, placed as PLAN places it."""
    guide = (Path(__file__).parents[2] / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = guide.split("## Distribution plan (Citus)", 1)[1].split("\n## ", 1)[0]
    documented: dict[str, str] = {}
    for names, placement in re.findall(r"^\| (`[^|]+`) \| (\w+) \|", section, re.MULTILINE):
        for name in re.findall(r"`(\w+)`", names):
            assert name not in documented, name
            documented[name] = placement
    assert documented == PLAN
    for name, placement in PLAN.items():
        call = {"distributed": "create_distributed_table", "reference": "create_reference_table"}
        if placement in call:
            assert f"{call[placement]}('{name}'" in section, name
