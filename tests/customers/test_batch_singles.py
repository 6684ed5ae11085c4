"""Records no other record of their batch shares a key with (reader._singles) are created
without being indexed (merge.plan_batch), and on PostgreSQL their COPY rows come
rendered by the reader (reader._copy_lines): the plan, and what is stored, must be the
same as without either."""

from __future__ import annotations

import random

import pytest
from sqlalchemy.orm import Session

from partnerlink.customers.ingestion import batch_queries
from partnerlink.customers.ingestion.merge import NormalizedRecord, StoredRow, plan_batch
from partnerlink.customers.ingestion.reader import _copy_lines, _singles
from partnerlink.db.base import utcnow
from tests.conftest import ON_POSTGRES
from tests.factories import create_merchant_account, create_profile

EMAILS = [f"p{n}@example.com" for n in range(8)]
PHONES = [f"+1415555{n:04d}" for n in range(8)]


def record(email: str | None, phone: str | None, name: str | None = None) -> NormalizedRecord:
    return (email, phone, name, None, None, None, None)


def test_a_record_is_single_when_no_other_record_holds_its_email_or_phone() -> None:
    records = [
        record("a@x.com", "+14155550001"),
        record("b@x.com", "+14155550002"),
        record("c@x.com", "+14155550002"),  # shares b's phone
        record(None, "+14155550003"),
        record("d@x.com", None),
        record("d@x.com", "+14155550004"),  # shares the email before
    ]
    assert _singles(records) == [True, False, False, True, False, False]


def test_copy_lines_render_single_records_and_leave_what_copy_would_escape() -> None:
    records = [
        record("a@x.com", None, "Ann"),
        record("b@x.com", None, "back\\slash"),
        record("c@x.com", None, "tab\there"),
        record("e@x.com", "+14155550001"),
        record("e@x.com", "+14155550002"),
    ]
    lines = _copy_lines(records, _singles(records))
    assert lines == ["a@x.com\t\\N\tAnn\t\\N\t\\N\t\\N\t\\N", None, None, None, None]


def random_batch(rng: random.Random) -> tuple[list[NormalizedRecord], list[StoredRow]]:
    def key(pool: list[str]) -> str | None:
        return rng.choice(pool) if rng.random() < 0.7 else None

    records: list[NormalizedRecord] = []
    while len(records) < rng.randrange(1, 30):
        email, phone = key(EMAILS), key(PHONES)
        if email or phone:
            records.append(record(email, phone, rng.choice(["Ann", "Bo", None])))
    stored: list[StoredRow] = []
    for customer_id in range(1, rng.randrange(0, 6)):
        email = rng.choice(EMAILS) if rng.random() < 0.6 else None
        if email in {row[1] for row in stored}:
            continue
        phone = rng.choice(PHONES)
        stored.append((customer_id, email, phone, "Old", None, "Rome", None, None))
    return records, stored


@pytest.mark.parametrize("seed", range(300))
def test_the_plan_is_the_same_with_and_without_singles(seed: int) -> None:
    records, stored = random_batch(random.Random(seed))
    singles = _singles(records)
    plain = plan_batch(records, stored)
    fast = plan_batch(records, stored, singles, _copy_lines(records, singles))
    assert (fast.created, fast.updated, fast.unchanged) == (
        plain.created,
        plain.updated,
        plain.unchanged,
    )
    assert [list(e.values) for e in fast.inserts] == [list(e.values) for e in plain.inserts]
    assert [(e.id, list(e.values)) for e in fast.updates] == [
        (e.id, list(e.values)) for e in plain.updates
    ]
    for entity in fast.inserts:  # a rendered row is the entity's values
        if entity.copy_line is not None:
            rendered = [None if v == "\\N" else v for v in entity.copy_line.split("\t")]
            assert rendered == list(entity.values)


@pytest.mark.skipif(not ON_POSTGRES, reason="rows rendered for COPY are PostgreSQL's")
@pytest.mark.parametrize("city", ["Plain", "back\\slash", "\\N", "two\nlines", "tab\there"])
def test_rendered_rows_beside_rows_copy_must_escape_are_stored_as_given(
    session: Session, city: str
) -> None:
    profile_id = create_profile(session, create_merchant_account(session)).id
    plain = ("b@example.com", "+14155550002", None, "Lee", "Oslo", "NO", "0150")
    rendered = _copy_lines([plain], [True])[0]
    assert rendered is not None
    odd = ("a@example.com", None, "Ann", None, city, None, None)
    with session.begin_nested():
        batch_queries.insert_customers(
            session, profile_id=profile_id, values=[odd, rendered], now=utcnow()
        )
    stored = batch_queries.load_customers(
        session, profile_id=profile_id, column="email", keys=["a@example.com", "b@example.com"]
    )
    assert sorted(tuple(row[1:]) for row in stored) == [odd, plain]
