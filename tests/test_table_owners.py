"""Who owns which table (ARCHITECTURE.md, "Who owns which table"): only its owner's
statements touch a table.

Read from the source with `ast`, like tests/test_architecture.py: a table's owner is the
package whose models.py declares it; no module of another package names it in SQL text
(`FROM`, `JOIN`, `INTO`, `UPDATE`) or in a hand-declared `table("name", ...)` clause, nor
passes another package's model class to `insert`, `update` or `delete`. Reading another
package's model through an ORM `select` is allowed (ARCHITECTURE.md says why). Alembic's
migrations are exempt.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import partnerlink.models  # noqa: F401  (registers every domain's tables)
from partnerlink.db.base import Base
from tests.test_architecture import PACKAGE, _sources, _unit

# Keep in step with ARCHITECTURE.md's table.
OWNERS: dict[str, str] = {
    "audience_opt_outs": "audiences",
    "audience_sizes": "audiences",
    "audience_suppressions": "audiences",
    "integration_tokens": "connect",
    "ad_connections": "destinations",
    "ad_connection_states": "destinations",
    "destinations": "destinations",
    "destination_members": "destinations",
    "destination_conversions": "destinations",
    "oauth_authorizations": "connect",
    "customers": "customers",
    "customer_deletions": "customers",
    "uploads": "customers",
    "campaigns": "measurement",
    "idempotency_keys": "idempotency",
    "merchants": "merchant",
    "merchant_sessions": "merchant",
    "profiles": "merchant",
    "orders": "orders",
    "order_journal": "orders",
    "touches": "orders",
    "pairing_codes": "pairing",
    "partners": "partners",
    "partner_quotas": "partners",
    "receipts": "receipts",
    "sms_stops": "receipts",
    "stores": "stores",
    "connections": "tokens",
    "tokens": "tokens",
    "webhook_events": "webhooks",
}

# Touches by a package that does not own the table, each written in ARCHITECTURE.md with
# its reason; (module, table, how). The list may only shrink.
KNOWN_EXCEPTIONS: frozenset[tuple[str, str, str]] = frozenset(
    {
        # The token look-up reads the store with the token in one statement (orders' hot path).
        ("tokens/service.py", "stores", "SQL text"),
        # Erasure (CONTRACT §8) deletes and scrubs a person's rows in every domain.
        ("audiences/choices.py", "customers", "ORM write"),
        ("audiences/choices.py", "orders", "ORM write"),
        ("audiences/choices.py", "receipts", "ORM write"),
        ("audiences/legacy_digests.py", "sms_stops", "ORM write"),
    }
)

_SQL_TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)\b")
_WRITES = ("insert", "update", "delete")


def _declared_tables() -> dict[str, str]:
    """Each `__tablename__` and the package whose models.py declares it."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("models.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__tablename__" for t in node.targets)
                and isinstance(node.value, ast.Constant)
            ):
                found[node.value.value] = _unit(path)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _model_owners() -> dict[str, str]:
    """Model class name -> its table (class names are unique in the registry)."""
    return {mapper.class_.__name__: mapper.local_table.name for mapper in Base.registry.mappers}


def _statement_sources() -> list[Path]:
    """Every module but Alembic's migrations, which build and move every table by design."""
    migrations = PACKAGE / "migrations"
    return [path for path in _sources() if migrations not in path.parents]


def _touches(path: Path, models: dict[str, str]) -> set[tuple[str, str, int]]:
    """(table, how, line) of every table this module's statements touch; how is "SQL text",
    "table() clause" or "ORM write" (a model class passed to insert, update or delete)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    imported_models: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(".models"):
            for alias in node.names:
                if alias.name in models:
                    imported_models[alias.asname or alias.name] = alias.name
    found: set[tuple[str, str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for name in _SQL_TABLE.findall(node.value):
                if name in OWNERS:
                    found.add((name, "SQL text", node.lineno))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            first = node.args[0]
            if node.func.id == "table" and isinstance(first, ast.Constant):
                found.add((str(first.value), "table() clause", node.lineno))
            if node.func.id.endswith(_WRITES) and isinstance(first, ast.Name):
                model = imported_models.get(first.id)
                if model is not None:
                    found.add((models[model], "ORM write", node.lineno))
    return found


def test_every_table_has_exactly_one_owner_the_package_of_its_models() -> None:
    tables = set(Base.metadata.tables)
    assert set(OWNERS) == tables, f"OWNERS and the models differ: {set(OWNERS) ^ tables}"
    assert _declared_tables() == OWNERS


def test_only_the_owners_statements_touch_a_table() -> None:
    models = _model_owners()
    broken: list[str] = []
    for path in _statement_sources():
        module = str(path.relative_to(PACKAGE))
        for table, how, line in sorted(_touches(path, models)):
            if OWNERS.get(table) != _unit(path) and (module, table, how) not in KNOWN_EXCEPTIONS:
                broken.append(f"{module}:{line} {how} touches {table} ({OWNERS.get(table)}'s)")
    assert not broken, "tables touched past their owner:\n" + "\n".join(broken)


def test_the_known_exceptions_are_still_needed() -> None:
    models = _model_owners()
    seen = {
        (str(path.relative_to(PACKAGE)), table, how)
        for path in _statement_sources()
        for table, how, _ in _touches(path, models)
    }
    assert seen >= KNOWN_EXCEPTIONS, f"no longer needed: {KNOWN_EXCEPTIONS - seen}"
