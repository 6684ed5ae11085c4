"""Ad touches imported by the operator (JSON lines), used to classify conversions.

A line is `{"profileId", "campaignId", "email"?, "phoneNumber"?, "countryCode"?,
"touchedAt"}`. Identifiers are normalized exactly as customers' are, so that a
touch matches the customer it reached; a phone without `+` is read in
`countryCode`'s region. A line without a usable email or phone is rejected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from partnerlink.customers.normalize import normalize_email, normalize_phone
from partnerlink.db.base import utcnow
from partnerlink.merchant.models import Profile
from partnerlink.orders.models import Touch
from partnerlink.orders.schemas import parse_timestamp

BATCH_SIZE = 2000
MAX_CAMPAIGN_ID = 200
KEPT_REJECTIONS = 1000  # line numbers kept for the report; the count is always exact


@dataclass
class TouchImport:
    imported: int = 0
    rejected: int = 0
    # (line number, reason) of the first KEPT_REJECTIONS rejected lines
    rejections: list[tuple[int, str]] = field(default_factory=list)

    def reject(self, line_number: int, reason: str) -> None:
        self.rejected += 1
        if len(self.rejections) < KEPT_REJECTIONS:
            self.rejections.append((line_number, reason))


class _Rejected(Exception):
    pass


def import_touches(
    session: Session,
    lines: Iterable[bytes],
    *,
    checkpoint: Callable[[], None] = lambda: None,
) -> TouchImport:
    """Imports touches line by line; `checkpoint` runs after each batch is written."""
    result = TouchImport()
    known_profiles: dict[str, bool] = {}
    batch: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            batch.append(_parse_line(session, raw, known_profiles))
        except _Rejected as rejection:
            result.reject(number, str(rejection))
            continue
        if len(batch) >= BATCH_SIZE:
            result.imported += _write(session, batch)
            checkpoint()
    result.imported += _write(session, batch)
    checkpoint()
    return result


def _write(session: Session, batch: list[dict[str, Any]]) -> int:
    if not batch:
        return 0
    session.execute(insert(Touch), batch)
    written = len(batch)
    batch.clear()
    return written


def _parse_line(session: Session, raw: bytes, known_profiles: dict[str, bool]) -> dict[str, Any]:
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Rejected("not valid JSON") from None
    if not isinstance(record, dict):
        raise _Rejected("not a JSON object")
    profile_id = record.get("profileId")
    if not isinstance(profile_id, str) or not _profile_exists(session, profile_id, known_profiles):
        raise _Rejected("unknown profileId")
    campaign_id = record.get("campaignId")
    if not isinstance(campaign_id, str) or not campaign_id.strip():
        raise _Rejected("campaignId is required")
    if len(campaign_id) > MAX_CAMPAIGN_ID or "\x00" in campaign_id:
        raise _Rejected("campaignId is invalid")
    try:
        touched_at = parse_timestamp(record.get("touchedAt")).astimezone(UTC)
    except ValueError:
        raise _Rejected("touchedAt must be an ISO-8601 timestamp") from None
    country = record.get("countryCode")
    email = normalize_email(record.get("email"))
    phone = normalize_phone(
        record.get("phoneNumber"), country if isinstance(country, str) else None
    )
    if email is None and phone is None:
        raise _Rejected("no usable email or phoneNumber")
    return {
        "profile_id": profile_id,
        "campaign_id": campaign_id.strip(),
        "email": email,
        "phone_number": phone,
        "touched_at": touched_at,
        "imported_at": utcnow(),
    }


def _profile_exists(session: Session, profile_id: str, known: dict[str, bool]) -> bool:
    if profile_id not in known:
        if len(profile_id) > 36:
            return False
        known[profile_id] = (
            session.scalar(select(Profile.id).where(Profile.id == profile_id)) is not None
        )
    return known[profile_id]
