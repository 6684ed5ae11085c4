"""A batch's writes (COPY on PostgreSQL, INSERT on SQLite): the rule inside one batch, and
a concurrent writer that creates a batch's customer between its look-up and its write."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import pytest
from sqlalchemy.orm import Session

from partnerlink.customers.ingestion import batch_queries
from partnerlink.customers.service import resolve_customer
from partnerlink.db.base import utcnow
from tests.conftest import ON_POSTGRES
from tests.customers.conftest import Uploader, counts
from tests.factories import create_merchant_account, create_profile


def test_phone_only_record_then_the_same_phone_with_an_email_in_one_batch(
    uploader: Uploader,
) -> None:
    status = uploader.ingest(
        [
            {"phoneNumber": "+14155552671", "firstName": "Di"},
            {"email": "di@example.com", "phoneNumber": "(415) 555-2671", "city": "SF"},
            {"phoneNumber": "415-555-2671", "lastName": "Lu"},
        ]
    )
    # The phone-only customer takes the email; the third record matches it by phone.
    assert counts(status) == (3, 1, 0, 2, 0)
    assert uploader.customers() == [("di@example.com", "+14155552671", "Di", "Lu", "SF", None)]
    assert counts(uploader.ingest([{"phoneNumber": "+14155552671"}])) == (1, 0, 0, 1, 0)


def test_email_customer_then_a_phone_only_record_in_one_batch(uploader: Uploader) -> None:
    status = uploader.ingest(
        [
            {"email": "a@example.com", "phoneNumber": "+14155552671"},
            {"email": "b@example.com", "phoneNumber": "+14155552671"},
            {"phoneNumber": "+14155552671", "city": "SF"},  # the oldest with that phone
        ]
    )
    assert counts(status) == (3, 2, 0, 1, 0)
    assert uploader.customers() == [
        ("a@example.com", "+14155552671", None, None, "SF", None),
        ("b@example.com", "+14155552671", None, None, None, None),
    ]


def test_customer_created_by_another_writer_after_the_look_up_is_merged_not_duplicated(
    uploader: Uploader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An order creates the batch's customer after the batch looked it up: the batch's
    write collides (COPY's unique violation on PostgreSQL, the INSERT's skipped row on
    SQLite), is rolled back, and the retried batch creates its new customers one by one.

    On PostgreSQL the order commits from its own session, so the retried batch merges
    into its customer; SQLite has one writer at a time, so there the order's row is
    written in the batch's own transaction and rolled back with it."""
    load_customers = batch_queries.load_customers
    created: list[str] = []

    def load_then_an_order_creates(session: Session, **kwargs: Any) -> Any:
        found = load_customers(session, **kwargs)
        if created or kwargs["column"] != "phone_number":
            return found
        sessions = uploader.app.state.sessionmaker
        with sessions() if ON_POSTGRES else nullcontext(session) as writer:
            resolve_customer(
                writer,
                profile_id=uploader.connected.profile.id,
                default_region="US",
                email="new@example.com",
                phone_number=None,
            )
            if ON_POSTGRES:
                writer.commit()
        created.append("new@example.com")
        return found

    monkeypatch.setattr(batch_queries, "load_customers", load_then_an_order_creates)
    status = uploader.ingest(
        [
            {"email": "new@example.com", "firstName": "Nu"},
            {"email": "other@example.com", "phoneNumber": "+14155552671"},
        ]
    )
    assert created == ["new@example.com"]
    assert status["status"] == "done"
    # On PostgreSQL the order's customer took the record's name: updated, not created.
    assert counts(status) == ((2, 1, 1, 0, 0) if ON_POSTGRES else (2, 2, 0, 0, 0))
    assert uploader.customers() == [
        ("new@example.com", None, "Nu", None, None, None),
        ("other@example.com", "+14155552671", None, None, None, None),
    ]


def test_a_batch_looks_up_every_key_it_is_given(session: Session) -> None:
    """The look-up of a batch's stored customers (one text of keys on PostgreSQL, split
    by the server; an array for a key that holds the separator)."""
    profile_id = create_profile(session, create_merchant_account(session)).id
    stamp = utcnow()
    with session.begin_nested():
        batch_queries.insert_customers(
            session,
            profile_id=profile_id,
            values=[
                ("a@example.com", "+14155550001", "Ann", None, None, None, None),
                (None, "+14155550002", None, None, None, None, None),
                ("odd\x1f@example.com", None, None, None, None, None, None),
            ],
            now=stamp,
        )

    def found(column: str, keys: list[str]) -> list[Any]:
        rows = batch_queries.load_customers(
            session, profile_id=profile_id, column=column, keys=keys
        )
        return sorted((row[1:3] for row in rows), key=repr)

    assert found("email", ["a@example.com", "b@example.com"]) == [("a@example.com", "+14155550001")]
    assert found("phone_number", ["+14155550001", "+14155550002", "+1"]) == [
        ("a@example.com", "+14155550001"),
        (None, "+14155550002"),
    ]
    assert found("email", ["odd\x1f@example.com", "a@example.com"]) == [
        ("a@example.com", "+14155550001"),
        ("odd\x1f@example.com", None),
    ]


@pytest.mark.parametrize(
    "city",
    ["Plain", "back\\slash", "\\N", "two\nlines", "tab\there", "cr\rhere"],
)
def test_a_batch_stores_text_as_given_whatever_copy_would_escape(
    session: Session, city: str
) -> None:
    """New customers go through COPY's text format on PostgreSQL: a value holding what that
    format escapes (or "\\N", its NULL) is stored as given, beside rows that need nothing."""
    profile_id = create_profile(session, create_merchant_account(session)).id
    rows = [
        ("a@example.com", None, "Ann", None, city, None, None),
        ("b@example.com", "+14155550002", None, "Lee", "Oslo", "NO", "0150"),
    ]
    with session.begin_nested():
        batch_queries.insert_customers(session, profile_id=profile_id, values=rows, now=utcnow())
    stored = batch_queries.load_customers(
        session, profile_id=profile_id, column="email", keys=["a@example.com", "b@example.com"]
    )
    assert sorted(tuple(row[1:]) for row in stored) == rows
