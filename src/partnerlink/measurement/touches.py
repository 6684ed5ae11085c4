"""One ad touch as given (merchant API or a JSON line), checked and reduced to hashes.

A touch names its campaign, its time, its kind (`click`, the default, or `view`:
CONTRACT.md §16) and at least one identifier: a plain
`email` or `phoneNumber` (a phone without `+` read in `countryCode`'s region),
normalized as customers' are (CONTRACT.md §6) and then hashed, or the hashes
themselves, `emailSha256` and `phoneSha256`: lower-case hex SHA-256 of the
normalized value, as ad platforms hand them out. Only hashes are stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from partnerlink.customers.normalize import normalize_email, normalize_phone
from partnerlink.orders.conversion import CLICK, KINDS, identifier_hash
from partnerlink.orders.schemas import parse_timestamp

MAX_CAMPAIGN_ID = 64
# CONTRACT §12: a campaignId is a path segment of its lift URL, so only characters that
# need no escaping ("/" never reached the lift, whatever its encoding).
_CAMPAIGN_ID = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_CAMPAIGN_ID}}}")
CAMPAIGN_ID_RULE = "must be 1-64 letters, digits, '-', '_' or '.'"
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


class RejectedTouch(Exception):
    """A touch refused alone; its message is the reason shown with its index or line."""


@dataclass(frozen=True, slots=True)
class TouchRow:
    campaign_id: str
    touched_at: datetime
    email_sha256: str | None
    phone_sha256: str | None
    kind: str = CLICK


def parse_touch(record: object) -> TouchRow:
    """A Touch object of CONTRACT.md §7, or RejectedTouch with the reason."""
    if not isinstance(record, dict):
        raise RejectedTouch("not a JSON object")
    campaign_id = campaign_id_of(record.get("campaignId"))
    try:
        touched_at = parse_timestamp(record.get("touchedAt")).astimezone(UTC)
    except (ValueError, OverflowError):
        raise RejectedTouch("touchedAt must be an ISO-8601 timestamp") from None
    kind = CLICK if record.get("kind") is None else record["kind"]
    if kind not in KINDS:
        raise RejectedTouch("kind must be click or view")
    email_hash = _given_hash(record, "emailSha256")
    phone_hash = _given_hash(record, "phoneSha256")
    country = record.get("countryCode")
    email = normalize_email(record.get("email"))
    phone = normalize_phone(
        record.get("phoneNumber"), country if isinstance(country, str) else None
    )
    email_hash = identifier_hash(email) if email is not None else email_hash
    phone_hash = identifier_hash(phone) if phone is not None else phone_hash
    if email_hash is None and phone_hash is None:
        raise RejectedTouch("no usable email, phoneNumber, emailSha256 or phoneSha256")
    return TouchRow(campaign_id, touched_at, email_hash, phone_hash, kind)


def is_campaign_id(value: str) -> bool:
    """1–64 letters, digits, `-`, `_`, `.`; never `.` or `..`, which URLs resolve away."""
    return bool(_CAMPAIGN_ID.fullmatch(value)) and value not in (".", "..")


def campaign_id_of(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RejectedTouch("campaignId is required")
    if not is_campaign_id(value.strip()):
        raise RejectedTouch(f"campaignId {CAMPAIGN_ID_RULE}")
    return value.strip()


def _given_hash(record: dict[str, Any], field: str) -> str | None:
    value = record.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise RejectedTouch(f"{field} must be 64 hex digits (SHA-256)")
    return value.lower()


def parse_line(raw: bytes) -> tuple[str, TouchRow]:
    """A JSON line of `partnerlink touches import`: (its profileId, the touch)."""
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        raise RejectedTouch("not valid JSON") from None
    if not isinstance(record, dict):
        raise RejectedTouch("not a JSON object")
    profile_id = record.get("profileId")
    if not isinstance(profile_id, str) or not profile_id or len(profile_id) > 36:
        raise RejectedTouch("unknown profileId")
    return profile_id, parse_touch(record)
