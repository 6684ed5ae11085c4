"""The worker's refresh of large profiles' stored audiences counts (audiences/stored_sizes.py
says which profiles keep one, and when a count is fresh)."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta

from sqlalchemy import nulls_first
from sqlalchemy.orm import Session, sessionmaker

from partnerlink import jobs
from partnerlink.audiences import stored_sizes
from partnerlink.audiences.stored_sizes import IN_USE_SECONDS, table
from partnerlink.db import replica
from partnerlink.db.base import utcnow
from partnerlink.db.engine import committed_session
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.audiences")

# A refresh counts once (seconds at a million customers); a worker that died while
# counting leaves the row to the next one after this long.
REFRESH_LEASE_SECONDS = 120

# A count of a 1M-customer profile takes seconds: it runs on a thread of its own, so the
# worker loop (receipts, webhooks) never waits for it.
_threads = jobs.JobThreads(1, name="audience-sizes")


def refresh_stored_sizes(sessions: sessionmaker[Session], settings: Settings) -> int:
    """The worker's task: claims the large profile in use whose stored count is the
    oldest past half the freshness bound (or emptied) and starts counting it again on a
    thread of its own; answers 1 if it started one."""
    max_age = settings.audience_sizes_max_age_seconds
    if max_age <= 0 or _threads.idle() <= 0:
        return 0
    now = utcnow()
    due = (
        (table.c.took_seconds >= stored_sizes.LARGE_AFTER_SECONDS)
        & (table.c.requested_at >= now - timedelta(seconds=IN_USE_SECONDS))
        & (
            table.c.audiences.is_(None)
            | table.c.computed_at.is_(None)
            | (table.c.computed_at <= now - timedelta(seconds=max_age / 2))
        )
    )
    with committed_session(sessions) as session:
        claimed = jobs.claim_due(
            session,
            table,
            due=due,
            order_by=[nulls_first(table.c.computed_at.asc())],
            limit=1,
            lease_seconds=REFRESH_LEASE_SECONDS,
            now=now,
            returning=[table.c.profile_id],
        )
    if not claimed:
        return 0
    _threads.start(
        _count_and_store, sessions, settings, claimed[0].profile_id, claimed[0].lease_until
    )
    return 1


def wait_for_refreshes(timeout: float = 60.0) -> None:
    """Until every count started so far is stored or dropped (tests, a worker stopping)."""
    _threads.wait(timeout)


def _count_and_store(
    sessions: sessionmaker[Session], settings: Settings, profile_id: str, lease_until: datetime
) -> None:
    # Taken before the primary's WAL position: the count includes every change committed
    # before `counted_at`, on the standby (once it replayed that position) or the primary.
    counted_at = utcnow()
    try:
        reads = replica.caught_up_reads(
            sessions, replica.read_sessions(settings), f"audience sizes of profile {profile_id}"
        )
        with reads() as session:
            counted, took = stored_sizes.count(session, profile_id, settings)
    except Exception:  # the lease runs out and a later round counts it again
        log.exception("audience sizes of profile %s: the count failed", profile_id)
        return
    with committed_session(sessions) as session:
        # Not stored if a change emptied the row meanwhile (it dropped the lease).
        jobs.record_if_leased(
            session,
            table,
            row_id=profile_id,
            lease_until=lease_until,
            values={
                "audiences": json.dumps(counted),
                "computed_at": counted_at,
                "took_seconds": took,
            },
        )
