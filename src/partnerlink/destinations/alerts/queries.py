"""The SQL of alerts: each destination's state as the merchant should know it, the
emails queued for a change of it, and claiming and recording them (partnerlink.jobs)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    String,
    Table,
    and_,
    case,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from partnerlink import jobs
from partnerlink.destinations.models import NEEDS_ATTENTION, Destination, DestinationAlert
from partnerlink.merchant.models import Merchant, Profile

STALE = "stale"
# Why an unsent email was dropped: news the merchant no longer needs.
SUPERSEDED = "Not sent: the destination's state changed before the mail server took it."

destinations: Table = Destination.__table__  # type: ignore[assignment]
alerts: Table = DestinationAlert.__table__  # type: ignore[assignment]
profiles: Table = Profile.__table__  # type: ignore[assignment]
merchants: Table = Merchant.__table__  # type: ignore[assignment]


def alert_state(now: datetime, stale_hours: float) -> ColumnElement[Any]:
    """What the merchant should have been told of, from the destination's own columns:
    `needs_attention` while it waits for them; `stale` when no sync went through for
    `stale_hours` (since it was made, if never) and, besides, a try failed since (its
    `attempts`, reset by a successful sync or new credentials) or the sync it waits for
    was due that long ago; else NULL.

    The second condition keeps quiet a destination the worker has simply not tried yet:
    one just given new credentials after `needs_attention`, or one synced less often
    than `stale_hours` (PARTNERLINK_AD_SYNC_SECONDS set longer); a sync in progress
    (leased) is not judged before it ends.
    """
    d = destinations.c
    stale_before = now - timedelta(hours=stale_hours)
    stale = and_(
        func.coalesce(d.last_sync_at, d.created_at) < stale_before,
        jobs.lease_is_free(destinations, now),
        or_(d.attempts > 0, d.next_attempt_at < stale_before),
    )
    return case(
        (d.status == NEEDS_ATTENTION, literal(NEEDS_ATTENTION, String)),
        (stale, literal(STALE, String)),
        else_=null(),
    )


def move_states(session: Session, *, now: datetime, stale_hours: float, limit: int) -> list[Any]:
    """Sets `alert_state` to the state of `alert_state(...)` on up to `limit` destinations
    where it differs, in one statement; answers their (id, profile_id, alert_state), the
    state now held. A destination two workers judge at once moves once: the UPDATE
    re-checks that the state still differs (PostgreSQL re-reads a row another
    transaction changed meanwhile). `updated_at` stays: the merchant changed nothing."""
    d = destinations.c
    desired = alert_state(now, stale_hours)
    differs = desired.is_distinct_from(d.alert_state)
    chosen = (
        select(d.id).where(differs).limit(limit).with_for_update(skip_locked=True)
    ).scalar_subquery()
    return list(
        session.execute(
            update(destinations)
            .where(d.id.in_(chosen), differs)
            .values(alert_state=desired, updated_at=d.updated_at)
            .returning(d.id, d.profile_id, d.alert_state)
            .execution_options(synchronize_session=False)
        ).all()
    )


def queue(session: Session, moved: Sequence[Any], *, now: datetime) -> int:
    """Drops the unsent emails of the destinations whose state moved, and queues one
    for each that entered a state to tell of; answers how many were queued."""
    a = alerts.c
    session.execute(
        update(alerts)
        .where(
            a.destination_id.in_([row.id for row in moved]),
            a.sent_at.is_(None),
            a.next_attempt_at.is_not(None),
        )
        .values(next_attempt_at=None, last_error=SUPERSEDED)
        .execution_options(synchronize_session=False)
    )
    rows = [
        {
            "destination_id": row.id,
            "profile_id": row.profile_id,
            "state": row.alert_state,
            "created_at": now,
            "next_attempt_at": now,
            "attempts": 0,
        }
        for row in moved
        if row.alert_state is not None
    ]
    if rows:
        session.execute(insert(alerts), rows)
    return len(rows)


def claim(session: Session, *, now: datetime, limit: int, lease_seconds: float) -> list[Any]:
    """Unsent emails that are due and still tell the destination's state, leased; each
    answers (id, attempts, created_at, lease_until)."""
    a, d = alerts.c, destinations.c
    told = (
        select(d.alert_state)
        .where(d.id == a.destination_id, d.profile_id == a.profile_id)
        .scalar_subquery()
    )
    return jobs.claim_due(
        session,
        alerts,
        due=and_(a.sent_at.is_(None), a.next_attempt_at <= now, a.state == told),
        order_by=[a.next_attempt_at, a.id],
        limit=limit,
        lease_seconds=lease_seconds,
        now=now,
        returning=[a.id, a.attempts, a.created_at],
    )


def letters(session: Session, alert_ids: Sequence[int]) -> dict[int, Any]:
    """What each email says, by alert id: its state, the destination, the business and
    the merchant's account email. (An alert whose destination went is missing.)"""
    a, d, p, m = alerts.c, destinations.c, profiles.c, merchants.c
    rows = session.execute(
        select(
            a.id,
            a.state,
            a.profile_id,
            d.platform,
            d.kind,
            d.segment,
            d.last_error,
            d.last_sync_at,
            p.name.label("business"),
            m.email,
        )
        .join(destinations, and_(d.id == a.destination_id, d.profile_id == a.profile_id))
        .join(profiles, p.id == a.profile_id)
        .join(merchants, m.id == p.merchant_id)
        .where(a.id.in_(alert_ids))
    ).all()
    return {row.id: row for row in rows}


def record(session: Session, *, alert_id: int, lease_until: datetime, **values: Any) -> bool:
    """Writes the outcome (`sent_at`, or the next attempt and its error) if this worker
    still holds the alert's lease; answers whether it did."""
    return jobs.record_if_leased(
        session, alerts, row_id=alert_id, lease_until=lease_until, values=values
    )
