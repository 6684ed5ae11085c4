"""The jobs module on the configured database (SQLite, or PostgreSQL with
PARTNERLINK_TEST_DATABASE_URL): claims, leases as fencing tokens, backoff and deadlines.

The rows are those of a table of this test's own, shaped like the domains' job tables
(receipts, webhook events, uploads): `lease_until`, and usually `attempts`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Column, Engine, Integer, MetaData, Row, String, Table, insert, select
from sqlalchemy.orm import Session, sessionmaker

from partnerlink import jobs
from partnerlink.db.base import UTCDateTime, utcnow
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.settings import Settings

metadata = MetaData()
rows_table = Table(
    "jobs_test_rows",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("status", String(20), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("lease_until", UTCDateTime),
    Column("outcome", String(50)),
)
# A table that counts no attempts (like a job whose holder needs no fencing by count).
plain_table = Table(
    "jobs_test_plain",
    metadata,
    Column("seq", Integer, primary_key=True),
    Column("lease_until", UTCDateTime),
)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = make_engine(settings.database_url, pool_size=4)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        yield engine
    finally:
        metadata.drop_all(engine)
        engine.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


def _add(sessions: sessionmaker[Session], count: int, **values: object) -> None:
    now = utcnow()
    with sessions.begin() as session:
        session.execute(
            insert(rows_table),
            [
                {"id": n, "status": "pending", "attempts": 0, "next_attempt_at": now, **values}
                for n in range(1, count + 1)
            ],
        )


def _claim(
    session: Session, *, limit: int = 10, lease_seconds: float = 60, now: datetime | None = None
) -> list[Row[Any]]:
    now = now or utcnow()
    return jobs.claim_due(
        session,
        rows_table,
        due=(rows_table.c.status == "pending") & (rows_table.c.next_attempt_at <= now),
        order_by=[rows_table.c.id],
        limit=limit,
        lease_seconds=lease_seconds,
        now=now,
        returning=[rows_table.c.id, rows_table.c.attempts],
    )


def test_a_claim_takes_due_rows_in_order_up_to_the_limit_and_counts_the_attempt(
    sessions: sessionmaker[Session],
) -> None:
    _add(sessions, 5)
    with sessions.begin() as session:
        claimed = _claim(session, limit=3)
    assert sorted(row.id for row in claimed) == [1, 2, 3]
    assert {row.attempts for row in claimed} == {1}
    assert all(row.lease_until > utcnow() for row in claimed)


def test_rows_not_yet_due_or_leased_are_not_claimed(sessions: sessionmaker[Session]) -> None:
    _add(sessions, 3)
    with sessions.begin() as session:
        assert len(_claim(session)) == 3
    with sessions.begin() as session:
        assert _claim(session) == []  # all three leased
    later = utcnow() + timedelta(seconds=61)
    with sessions.begin() as session:  # the leases ran out: claimed again, a second attempt
        again = _claim(session, now=later)
    assert sorted((row.id, row.attempts) for row in again) == [(1, 2), (2, 2), (3, 2)]


def test_two_workers_take_different_rows(sessions: sessionmaker[Session], engine: Engine) -> None:
    _add(sessions, 4)
    if engine.dialect.name == "postgresql":
        # The first worker's claim is not committed yet: SKIP LOCKED passes its rows by
        # instead of waiting for them.
        with sessions.begin() as first, sessions.begin() as second:
            mine = {row.id for row in _claim(first, limit=2)}
            theirs = {row.id for row in _claim(second, limit=2)}
    else:  # SQLite has one writer at a time: the second claim comes after the first
        with sessions.begin() as first:
            mine = {row.id for row in _claim(first, limit=2)}
        with sessions.begin() as second:
            theirs = {row.id for row in _claim(second, limit=2)}
    assert mine == {1, 2}
    assert theirs == {3, 4}


def test_a_result_is_recorded_only_while_the_lease_is_held(
    sessions: sessionmaker[Session],
) -> None:
    _add(sessions, 1)
    with sessions.begin() as session:
        (slow,) = _claim(session, lease_seconds=1)
    # The slow worker's lease runs out; another claims the row and records first.
    later = slow.lease_until + timedelta(seconds=1)
    with sessions.begin() as session:
        (fast,) = _claim(session, now=later)
    assert fast.attempts == 2
    with sessions.begin() as session:
        late = jobs.record_if_leased(
            session,
            rows_table,
            row_id=slow.id,
            lease_until=slow.lease_until,
            values={"status": "done", "outcome": "slow"},
        )
        on_time = jobs.record_if_leased(
            session,
            rows_table,
            row_id=fast.id,
            lease_until=fast.lease_until,
            values={"status": "done", "outcome": "fast"},
        )
    assert (late, on_time) == (False, True)
    with sessions() as session:
        row = session.execute(select(rows_table)).one()
    assert (row.status, row.outcome, row.lease_until) == ("done", "fast", None)


def test_a_renewed_lease_is_the_one_held_and_a_lost_one_is_not_renewed(
    sessions: sessionmaker[Session],
) -> None:
    _add(sessions, 1)
    with sessions.begin() as session:
        (row,) = _claim(session, lease_seconds=30)
    with sessions.begin() as session:
        renewed = jobs.renew_lease(
            session,
            rows_table,
            row_id=row.id,
            lease_until=row.lease_until,
            lease_seconds=300,
            now=utcnow(),
        )
    assert renewed > row.lease_until
    with sessions.begin() as session:  # the old lease is no longer the one held
        with pytest.raises(jobs.LeaseLost):
            jobs.renew_lease(
                session,
                rows_table,
                row_id=row.id,
                lease_until=row.lease_until,
                lease_seconds=300,
                now=utcnow(),
            )
        assert jobs.record_if_leased(
            session, rows_table, row_id=row.id, lease_until=renewed, values={"status": "done"}
        )


def test_a_renewal_rolled_back_leaves_the_old_lease_held(sessions: sessionmaker[Session]) -> None:
    _add(sessions, 1)
    with sessions.begin() as session:
        (row,) = _claim(session)
    session = sessions()
    with session.begin():
        assert jobs.renew_lease(
            session,
            rows_table,
            row_id=row.id,
            lease_until=row.lease_until,
            lease_seconds=300,
            now=utcnow(),
        )
        session.rollback()
    session.close()
    with sessions.begin() as session:
        assert jobs.record_if_leased(
            session, rows_table, row_id=row.id, lease_until=row.lease_until, values={}
        )


def test_a_claim_may_set_other_columns_and_a_table_need_not_count_attempts(
    sessions: sessionmaker[Session],
) -> None:
    _add(sessions, 1, status="received")
    now = utcnow()
    with sessions.begin() as session:
        (row,) = jobs.claim_due(
            session,
            rows_table,
            due=rows_table.c.status == "received",
            order_by=[rows_table.c.id],
            limit=1,
            lease_seconds=60,
            now=now,
            returning=[rows_table.c.id, rows_table.c.status],
            values={"status": "processing"},
        )
        session.execute(insert(plain_table), [{"seq": 7}])
        (plain,) = jobs.claim_due(
            session,
            plain_table,
            due=plain_table.c.seq > 0,
            order_by=[plain_table.c.seq],
            limit=5,
            lease_seconds=60,
            now=now,
            returning=[plain_table.c.seq],
        )
    assert row.status == "processing"
    assert (plain.seq, plain.lease_until) == (7, now + timedelta(seconds=60))


def test_backoff_doubles_from_its_base_with_jitter_up_to_its_cap() -> None:
    for attempts, base in [(1, 5.0), (2, 10.0), (3, 20.0), (4, 40.0)]:
        delay = jobs.backoff_seconds(attempts, base=5, cap=3600)
        assert base <= delay <= base * 1.25
    assert 3600 <= jobs.backoff_seconds(40, base=5, cap=3600) <= 3600 * 1.25
    assert 3600 <= jobs.backoff_seconds(10**6, base=5, cap=3600) <= 3600 * 1.25  # no overflow
    assert 5 <= jobs.backoff_seconds(0, base=5, cap=3600) <= 6.25


def test_backoff_is_never_sooner_than_the_other_side_asked() -> None:
    assert jobs.backoff_seconds(1, base=5, cap=3600, retry_after=90) == 90
    assert jobs.backoff_seconds(1, base=5, cap=3600, retry_after=0) >= 5


def test_a_job_gives_up_at_its_deadline() -> None:
    start = utcnow()
    hours_72 = 72 * 3600
    assert not jobs.gave_up(start, start + timedelta(hours=71, minutes=59), hours_72)
    assert jobs.gave_up(start, start + timedelta(hours=72), hours_72)
