"""Which customers a touch's hashes name (customers/identifier_hashes.py), on both
databases: PostgreSQL compares the hashes it keeps (migration 0038), SQLite hashes in
process. Expected hashes come from hashlib here, not from the code under test."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.customers.identifier_hashes import customers_hashing_to
from partnerlink.customers.models import Customer
from partnerlink.db.raw import as_sql
from tests.conftest import ON_POSTGRES
from tests.factories import create_merchant_account, create_profile


def sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _customers(session: Session) -> tuple[str, str, dict[str, int]]:
    merchant = create_merchant_account(session)
    mine, other = create_profile(session, merchant), create_profile(session, merchant)
    rows = {
        "email": Customer(profile_id=mine.id, email="ana@example.com"),
        "phone": Customer(profile_id=mine.id, phone_number="+14155550100"),
        "both": Customer(profile_id=mine.id, email="zoë@exämple.de", phone_number="+33612345678"),
        "unnamed": Customer(profile_id=mine.id, email="nobody@example.com"),
    }
    session.add_all([*rows.values(), Customer(profile_id=other.id, email="ana@example.com")])
    session.flush()
    return mine.id, other.id, {name: row.id for name, row in rows.items()}


def test_customers_are_found_by_the_hash_of_their_email_or_phone(session: Session) -> None:
    mine, _, ids = _customers(session)
    keys = {sha("ana@example.com"), sha("+14155550100"), sha("+33612345678"), sha("x@y.z")}

    found = customers_hashing_to(as_sql(session), profile_id=mine, keys=keys)

    assert found == {
        ids["email"]: (sha("ana@example.com"), None),
        ids["phone"]: (None, sha("+14155550100")),
        ids["both"]: (sha("zoë@exämple.de"), sha("+33612345678")),
    }


def test_another_profiles_customer_is_not_found(session: Session) -> None:
    _, other, _ = _customers(session)
    found = customers_hashing_to(
        as_sql(session), profile_id=other, keys={sha("+14155550100"), sha("zoë@exämple.de")}
    )
    assert found == {}
    assert customers_hashing_to(as_sql(session), profile_id=other, keys=set()) == {}


def test_postgresql_keeps_hashes_that_follow_every_write(session: Session) -> None:
    """Written by plain SQL (as COPY and the matching statements write), changed and
    cleared: the kept hashes are always those of the current identifiers."""
    if not ON_POSTGRES:
        assert "email_sha256" not in _columns(session)  # SQLite hashes in process
        return
    mine, _, ids = _customers(session)
    session.execute(
        text("UPDATE customers SET email = 'new@example.com', phone_number = NULL WHERE id = :i"),
        {"i": ids["both"]},
    )
    stored = session.execute(
        text(
            "SELECT id, encode(email_sha256, 'hex'), encode(phone_sha256, 'hex') FROM customers"
            " WHERE profile_id = :p"
        ),
        {"p": mine},
    ).all()
    assert dict((row[0], (row[1], row[2])) for row in stored) == {
        ids["email"]: (sha("ana@example.com"), None),
        ids["phone"]: (None, sha("+14155550100")),
        ids["both"]: (sha("new@example.com"), None),
        ids["unnamed"]: (sha("nobody@example.com"), None),
    }
    found = customers_hashing_to(as_sql(session), profile_id=mine, keys={sha("zoë@exämple.de")})
    assert found == {}


@pytest.mark.skipif(not ON_POSTGRES, reason="prepared statements and their plans: PostgreSQL")
def test_postgresql_plans_the_match_for_its_hashes_every_time(session: Session) -> None:
    """psycopg prepares a statement after its fifth run on a connection, and PostgreSQL may
    then run it by one generic plan, blind to the array of wanted hashes: a search of the
    whole array for each customer (measured at 11.6 s for 10,000 hashes and 200,000
    customers instead of ~60 ms; bench/README.md). The match is never prepared."""
    mine, _, ids = _customers(session)
    sql = as_sql(session)
    for _ in range(12):
        found = customers_hashing_to(sql, profile_id=mine, keys={sha("ana@example.com")})
        assert list(found) == [ids["email"]]
    prepared = session.execute(text("SELECT statement FROM pg_prepared_statements")).scalars()
    assert [statement for statement in prepared if "email_sha256 = ANY" in statement] == []


def _columns(session: Session) -> set[str]:
    return {row[1] for row in session.execute(text("PRAGMA table_info(customers)"))}
