"""Who owns which table (ARCHITECTURE.md, "Who owns which table"): only its owner's
statements touch a table.

Read from the source with `ast`, like tests/test_architecture.py: a table's owner is the
package whose models.py declares it; no module of another package names it in SQL text
(`FROM`, `JOIN`, `INTO`, `UPDATE`) or in a hand-declared `table("name", ...)` clause, nor
writes it through the ORM: makes its model (`Store(...)`), sets a mapped attribute of one
(`store.pos_type = ...`, `+=`, `setattr`), or passes its model, table or an instance to
`insert`, `update`, `delete` (tests/table_writes.py says how model instances are told from
their types). Reading another package's model through an ORM `select` is allowed
(ARCHITECTURE.md says why). Alembic's migrations are exempt. The planted violations at the
end show that each kind of touch is seen.
"""

from __future__ import annotations

import ast
import re
import textwrap
from functools import cache

import pytest

import partnerlink.models  # noqa: F401  (registers every domain's tables)
from partnerlink.db.base import Base
from tests.table_writes import Index, Models, Module, module_name, orm_writes
from tests.test_architecture import PACKAGE, _unit

# Keep in step with ARCHITECTURE.md's table.
OWNERS: dict[str, str] = {
    "audience_opt_outs": "audiences",
    "audience_sizes": "audiences",
    "audience_suppressions": "audiences",
    "integration_tokens": "connect",
    "ad_connections": "destinations",
    "ad_connection_states": "destinations",
    "destinations": "destinations",
    "destination_alerts": "destinations",
    "destination_members": "destinations",
    "destination_conversions": "destinations",
    "destination_request_checks": "destinations",
    "destination_runs": "destinations",
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


def _declared_tables() -> dict[str, str]:
    """Each `__tablename__` and the package whose models.py declares it."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("models.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__tablename__" for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
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


@cache
def _index() -> Index:
    """Every module of the package, read once, to tell model instances by their types."""
    return Index.of_package(PACKAGE, Models.of(Base.registry))


def _statement_modules() -> list[Module]:
    """Every module but Alembic's migrations, which build and move every table by design."""
    return [
        module for module in _index().modules.values() if not module.where.startswith("migrations/")
    ]


@cache
def _touches(index: Index, module: str) -> frozenset[tuple[str, str, int]]:
    """(table, how, line) of every table this module's statements touch; how is "SQL text",
    "table() clause", "model made", "attribute set" or "ORM write" (a model, its table or an
    instance given to insert, update or delete)."""
    tree = index.modules[module].tree
    skip = _docstrings(tree)
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
    for write in orm_writes(index, module):
        found.add((index.models.tables[write.model], write.how, write.line))
    return frozenset(found)


def _past_their_owner(index: Index, module: str, where: str) -> list[str]:
    """This module's touches of another package's tables, the known exceptions aside;
    `where` is its path under src/partnerlink."""
    unit = where.split("/")[0].removesuffix(".py")
    return [
        f"{where}:{line} {how} touches {table} ({OWNERS.get(table)}'s)"
        for table, how, line in sorted(_touches(index, module), key=lambda t: (t[2], t[0], t[1]))
        if OWNERS.get(table) != unit and (where, table, how) not in KNOWN_EXCEPTIONS
    ]


def test_every_table_has_exactly_one_owner_the_package_of_its_models() -> None:
    tables = set(Base.metadata.tables)
    assert set(OWNERS) == tables, f"OWNERS and the models differ: {set(OWNERS) ^ tables}"
    assert _declared_tables() == OWNERS


def test_only_the_owners_statements_touch_a_table() -> None:
    broken = [
        violation
        for module in _statement_modules()
        for violation in _past_their_owner(_index(), module.name, module.where)
    ]
    assert not broken, "tables touched past their owner:\n" + "\n".join(broken)


def test_the_known_exceptions_are_still_needed() -> None:
    seen = {
        (module.where, table, how)
        for module in _statement_modules()
        for table, how, _ in _touches(_index(), module.name)
    }
    assert seen >= KNOWN_EXCEPTIONS, f"no longer needed: {KNOWN_EXCEPTIONS - seen}"


# Planted violations: each snippet, put in a package that does not own the table, must be
# reported; the same lines in the owner, and mere reads, must not. Every snippet starts
# with these imports.
_PLANTED_HEADER = """
from dataclasses import dataclass
from typing import Any

from sqlalchemy import column, delete, insert, select, table, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from partnerlink.merchant.ownership import owned_store
from partnerlink.pairing.models import PairingCode
from partnerlink.partners.models import Partner
from partnerlink.sandbox.service import test_store_with_code
from partnerlink.settings import Settings
from partnerlink.stores import service as stores
from partnerlink.stores.models import Store
from partnerlink.stores.models import Store as Shop
"""

PLANTED: dict[str, tuple[str, str]] = {
    "a model made": (
        "model made",
        """
        def make(session: Session, profile_id: str) -> None:
            session.add(Store(profile_id=profile_id, name="x"))
        """,
    ),
    "a model made under another name": (
        "model made",
        """
        def make(profile_id: str) -> Any:
            return Shop(profile_id=profile_id, name="x")
        """,
    ),
    "a parameter's attribute set": (
        "attribute set",
        """
        def rename(store: Store) -> None:
            store.name = "x"
        """,
    ),
    "an optional parameter's, annotated in a string": (
        "attribute set",
        """
        def rename(store: "Store | None") -> None:
            if store is not None:
                store.pos_type = "x"
        """,
    ),
    "an attribute augmented": (
        "attribute set",
        """
        def rename(stores_: list[Store]) -> None:
            stores_[0].name += "!"
        """,
    ),
    "session.get's result": (
        "attribute set",
        """
        def switch(session: Session, store_id: str) -> None:
            store = session.get(Store, store_id)
            assert store is not None
            store.green_invoices = True
        """,
    ),
    "session.scalar(select(...))'s result": (
        "attribute set",
        """
        def rename(session: Session) -> None:
            store = session.scalar(select(Store).where(Store.manual).limit(1))
            if store:
                store.name = "x"
        """,
    ),
    "a loop over session.scalars(select(...))": (
        "attribute set",
        """
        def unmark(session: Session) -> None:
            for store in session.scalars(select(Store).where(Store.manual)).all():
                store.manual = False
        """,
    ),
    "a result of another package's function (return annotation)": (
        "attribute set",
        """
        def switch(session: Session, merchant_id: str, store_id: str) -> None:
            owned = owned_store(session, merchant_id=merchant_id, store_id=store_id)
            found = owned
            found.pos_type = "x"
        """,
    ),
    "setattr through a module alias's function": (
        "attribute set",
        """
        def switch(session: Session, store_id: str) -> None:
            setattr(stores.load_store(session, store_id=store_id), "pos_type", "x")
        """,
    ),
    "setattr with a name known only when it runs": (
        "attribute set",
        """
        def apply(store: Store, values: dict[str, Any]) -> None:
            for key, value in values.items():
                setattr(store, key, value)
        """,
    ),
    "a tuple's item from a function's return annotation": (
        "attribute set",
        """
        def rename(session: Session, settings: Settings, partner: Partner) -> None:
            store, _code = test_store_with_code(session, settings, partner=partner)
            store.name = "x"
        """,
    ),
    "a row's entity": (
        "attribute set",
        """
        def rename(session: Session) -> None:
            query = select(PairingCode, Store).join(Store, Store.id == PairingCode.store_id)
            row = session.execute(query).first()
            if row is not None:
                row.Store.name = "x"
        """,
    ),
    "a dataclass field": (
        "attribute set",
        """
        @dataclass
        class Held:
            store: Store

        def rename(held: Held) -> None:
            held.store.name = "x"
        """,
    ),
    "update(Model)": (
        "ORM write",
        """
        def rename(session: Session) -> None:
            session.execute(update(Store).values(name="x"))
        """,
    ),
    "a dialect's insert": (
        "ORM write",
        """
        def make(session: Session) -> None:
            session.execute(postgresql.insert(Store).values(name="x").on_conflict_do_nothing())
        """,
    ),
    "a model's table bound to a name": (
        "ORM write",
        """
        stores_table = Store.__table__

        def clear(session: Session) -> None:
            session.execute(stores_table.delete())
        """,
    ),
    "session.delete(instance)": (
        "ORM write",
        """
        def drop(session: Session, store: Store) -> None:
            session.delete(store)
        """,
    ),
    "SQL text": (
        "SQL text",
        """
        def rename(session: Session) -> None:
            session.execute(text("UPDATE stores SET name = 'x'"))
        """,
    ),
    "a table() clause": (
        "table() clause",
        """
        def clear(session: Session) -> None:
            session.execute(delete(table("stores", column("id"))))
        """,
    ),
}

# Lines that touch the stores table without writing it past its owner.
NOT_VIOLATIONS = """
@dataclass
class Report:
    name: str
    pos_type: str

def read(session: Session, store: Store, report: Report) -> str:
    report.name = store.name  # a dataclass of our own, with a model's attribute names
    report.pos_type = session.scalars(select(Store.pos_type)).one() or ""
    found = session.scalar(select(Store).where(Store.id == store.id))
    return found.name if found else ""
"""


def _planted(where: str, snippet: str) -> list[str]:
    index = _index().with_module(
        module_name(PACKAGE / where, PACKAGE), _PLANTED_HEADER + textwrap.dedent(snippet)
    )
    return _past_their_owner(index, module_name(PACKAGE / where, PACKAGE), where)


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_planted_touch_past_the_owner_is_reported(case: str) -> None:
    how, snippet = PLANTED[case]
    reported = _planted("merchant/planted.py", snippet)
    assert reported, f"not seen: {case}"
    assert all(f" {how} touches stores (stores's)" in line for line in reported), reported


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_the_same_touch_by_the_owner_is_not_reported(case: str) -> None:
    assert _planted("stores/planted.py", PLANTED[case][1]) == []


def test_reads_and_our_own_objects_are_not_reported() -> None:
    assert _planted("merchant/planted.py", NOT_VIOLATIONS) == []
