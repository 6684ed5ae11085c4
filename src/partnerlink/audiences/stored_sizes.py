"""The audiences list's stored counts, for profiles too large to count on every request.

Counting a profile's segments exactly takes seconds at a million customers
(docs/audiences.md). A profile whose exact count took at least
`LARGE_AFTER_SECONDS` keeps that count (`audience_sizes`) and answers it
while it is younger than `audience_sizes_max_age_seconds`; the worker counts again once a
stored count is half that age, for lists asked for within the last hour. Every other
profile is counted exactly on every request, as before. Every answer says when it was
counted (`computedAt`).

What makes a stored count wrong at once is emptied in the same transaction (`forget`):
the merchant's opt-out and its lifting, an erasure, a phone's SMS STOP and START. Each
bumps the row's generation and drops the worker's lease, so a count begun before the
change is never stored after it.

With a read replica (`PARTNERLINK_DATABASE_READ_URL`, PostgreSQL) the counts read the
hot standby and the stored rows are written on the primary. The worker's count reads
the standby once it has replayed the primary's WAL position of the count's start
(waiting 3 s at most, partnerlink.db.replica), else the primary; a list request's count
on the standby is stored only if the standby had replayed the primary's position when
the count began. So a stored count includes every change committed before its
`computedAt`, whatever the replication lag; only an answer counted on the spot (not
stored) can lag, as every other read of the standby does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from partnerlink.audiences.models import StoredSizes
from partnerlink.audiences.service import audiences, digest_key
from partnerlink.db import replica
from partnerlink.db.base import utcnow
from partnerlink.settings import Settings

table: Table = StoredSizes.__table__  # type: ignore[assignment]

# A profile whose exact count took this long is large: its count is stored (a profile of
# a few thousand customers counts in milliseconds; a million take seconds).
LARGE_AFTER_SECONDS = 0.5
# The worker refreshes only lists asked for within this long (audiences/tasks.py); a
# request older than half the freshness bound is noted again (one small write), so a list
# in use stays in use.
IN_USE_SECONDS = 3600


@dataclass(frozen=True)
class Listed:
    audiences: list[dict[str, Any]]
    computed_at: datetime


def _insert(session: Session) -> Any:
    return postgresql.insert if session.connection().dialect.name == "postgresql" else sqlite.insert


def forget(session: Session, profile_ids: Iterable[str]) -> None:
    """Empties these profiles' stored counts in the caller's transaction (their next list
    is counted exactly) and fences off any count under way."""
    ids = sorted(set(profile_ids))  # one lock order, whatever the caller's
    if not ids:
        return
    statement = _insert(session)(StoredSizes).values(
        [{"profile_id": p, "generation": 1} for p in ids]
    )
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[table.c.profile_id],
            set_={
                "audiences": None,
                "computed_at": None,
                "lease_until": None,
                "generation": table.c.generation + 1,
            },
        )
    )


def _large(took_seconds: float | None, settings: Settings) -> bool:
    return (
        settings.audience_sizes_max_age_seconds > 0
        and took_seconds is not None
        and took_seconds >= LARGE_AFTER_SECONDS
    )


def _fresh(row: Any, now: datetime, settings: Settings) -> bool:
    max_age = timedelta(seconds=settings.audience_sizes_max_age_seconds)
    return (
        row.audiences is not None
        and row.computed_at is not None
        and _large(row.took_seconds, settings)
        and now - max_age < row.computed_at <= now
    )


def _counts_everything_committed(session: Session, reads: Session) -> bool:
    """Whether a count begun now on `reads` sees every change the primary (`session`)
    committed so far: it is the primary, or a standby that has replayed the primary's
    WAL position (no wait; a database not in recovery is taken as the primary's data)."""
    if reads is session or reads.get_bind().dialect.name != "postgresql":
        return True
    position = replica.primary_position(session)
    return position is None or replica.replayed(reads, position) is not False


def count(session: Session, profile_id: str, settings: Settings) -> tuple[list[Any], float]:
    """The profile's audiences list counted exactly, and how many seconds that took."""
    started = time.perf_counter()
    counted = audiences(session, profile_id=profile_id, digest_key=digest_key(settings.signing_key))
    return counted, time.perf_counter() - started


def listed(session: Session, reads: Session, *, profile_id: str, settings: Settings) -> Listed:
    """The profile's audiences list: the stored count while it is fresh and the profile
    large, else counted now on `reads` (and stored on `session` if it took long)."""
    now = utcnow()
    row = session.execute(
        select(
            table.c.audiences,
            table.c.computed_at,
            table.c.took_seconds,
            table.c.requested_at,
            table.c.generation,
        ).where(table.c.profile_id == profile_id)
    ).first()
    half = timedelta(seconds=settings.audience_sizes_max_age_seconds / 2)
    if row is not None and _fresh(row, now, settings):
        if row.requested_at is None or row.requested_at < now - half:
            session.execute(
                update(table).where(table.c.profile_id == profile_id).values(requested_at=now)
            )
        return Listed(json.loads(row.audiences), row.computed_at)
    # A standby that lags may have not replayed a change that emptied the row (an
    # opt-out, a STOP): its count is answered (as every read of a lagging standby) but
    # never stored, so the lag does not outlive itself in the stored count.
    storable = settings.audience_sizes_max_age_seconds > 0 and _counts_everything_committed(
        session, reads
    )
    counted, took = count(reads, profile_id, settings)
    if storable and _large(took, settings):
        values = {
            "audiences": json.dumps(counted),
            "computed_at": now,
            "took_seconds": took,
            "requested_at": now,
        }
        if row is None:
            statement = _insert(session)(StoredSizes).values(
                profile_id=profile_id, generation=0, **values
            )
            # A row written meanwhile (a change's `forget`, another count) wins.
            session.execute(statement.on_conflict_do_nothing(index_elements=[table.c.profile_id]))
        else:
            session.execute(
                update(table)
                .where(table.c.profile_id == profile_id, table.c.generation == row.generation)
                .values(values)
            )
    return Listed(counted, now)
