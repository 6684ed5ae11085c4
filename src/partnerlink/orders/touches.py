"""The touches table's statements (orders owns it: ARCHITECTURE.md, "Who owns which table").

An order's conversion class reads the touches inside the order's own upsert
(`queries.UPSERT_ORDER`), and `reclassification.reclassify_customers` reads them again when
late data arrives; measurement, which imports orders, writes the touches a merchant
imports with `record_touches`, moves a campaign's windows with `move_window`, and
audiences erases a person's with `erase_touches`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import delete, or_
from sqlalchemy.orm import Session

from partnerlink.db import sets
from partnerlink.db.raw import Sql, Statement, as_sql
from partnerlink.orders.models import Touch

_LATEST = datetime.max.replace(tzinfo=UTC)
_TOUCH_ROWS = sets.RowSet(
    {
        "profile_id": "text",
        "campaign_id": "text",
        "email_sha256": "text",
        "phone_sha256": "text",
        "touched_at": "timestamptz",
        "imported_at": "timestamptz",
        "kind": "text",
        "counts_until": "timestamptz",
    }
)
_COLUMNS = ", ".join(_TOUCH_ROWS.types)
# A touch equal to a stored one, or to an earlier one of the same rows (same profile,
# campaign, identifier hashes and time: the unique index `uq_touches_content`), is skipped
# by `ON CONFLICT DO NOTHING`, which also settles two imports racing with the same touch.
# PostgreSQL: every row in one statement, read from one JSON parameter (db/sets.py).
_INSERT_ROWS = Statement(
    f"INSERT INTO touches ({_COLUMNS}) SELECT {sets.from_rows(', '.join(f':{c}' for c in _TOUCH_ROWS.types))}"
    f" FROM {_TOUCH_ROWS.source} ON CONFLICT DO NOTHING RETURNING id"
)
_INSERT_ONE = Statement(
    f"INSERT INTO touches ({_COLUMNS}) VALUES ({', '.join(f':{c}' for c in _TOUCH_ROWS.types)})"
    " ON CONFLICT DO NOTHING"
)
_TIMES = ("touched_at", "imported_at", "counts_until")


def record_touches(db: Session | Sql, rows: Sequence[dict[str, Any]]) -> int:
    """Inserts touches: dicts of Touch's columns (profile_id, campaign_id, email_sha256,
    phone_sha256, touched_at, imported_at, kind, counts_until); how many were new."""
    sql = as_sql(db)
    stored = [{**row, **{name: sql.time(row[name]) for name in _TIMES}} for row in rows]
    if not stored:
        return 0
    if sql.postgres:
        return len(sql.all_rows(_INSERT_ROWS, _TOUCH_ROWS.parameter(stored)))
    return sum(sql.run(_INSERT_ONE, row) for row in stored)


# The end of a touch's window moved to `:days` after it (orders/conversion.counts_until in
# SQL), at most the latest time a datetime holds. SQLite keeps times as text and its date
# functions round fractions of a second: whole seconds are moved, the fraction kept.
_MOVED_END = {
    True: "LEAST(touched_at + make_interval(days => CAST(:days AS integer)), :latest)",
    False: "COALESCE(datetime(substr(touched_at, 1, 19), '+' || :days || ' days')"
    " || substr(touched_at, 20), :latest)",
}
_MOVE_WINDOW = {
    postgres: Statement(
        f"UPDATE touches SET counts_until = {end} WHERE profile_id = :profile_id"
        " AND campaign_id = :campaign_id AND kind = :kind"
        " RETURNING email_sha256, phone_sha256, touched_at"
    )
    for postgres, end in _MOVED_END.items()
}


class MovedTouch(NamedTuple):
    email_sha256: str | None
    phone_sha256: str | None
    touched_at: datetime


def move_window(
    db: Session | Sql, *, profile_id: str, campaign_id: str, kind: str, days: int
) -> list[MovedTouch]:
    """A campaign's touches of one kind now count for `days` days; answers them (their
    identifier hashes and times), read in the same statement that moves them."""
    sql = as_sql(db)
    params = {
        "profile_id": profile_id,
        "campaign_id": campaign_id,
        "kind": kind,
        "days": days,
        "latest": sql.time(_LATEST),
    }
    if sql.postgres:
        # In UTC: times in the session's zone make each later sum ~8 us instead of ~1.
        return [
            MovedTouch(email, phone, at.astimezone(UTC))
            for email, phone, at in sql.all_rows(_MOVE_WINDOW[True], params)
        ]
    return [
        MovedTouch(email, phone, datetime.fromisoformat(at).replace(tzinfo=UTC))
        for email, phone, at in sql.all_rows(_MOVE_WINDOW[False], params)
    ]


def erase_touches(session: Session, *, profile_id: str, hashes: Collection[str]) -> None:
    """Deletes the profile's touches that carry any of these identifier hashes."""
    session.execute(
        delete(Touch).where(
            Touch.profile_id == profile_id,
            or_(Touch.email_sha256.in_(hashes), Touch.phone_sha256.in_(hashes)),
        )
    )
