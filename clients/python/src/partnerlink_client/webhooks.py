"""Checking a webhook's `PartnerLink-Signature` (CONTRACT.md §9)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any


class InvalidSignature(Exception):
    """The event was not signed with this secret, or is too old."""


def verify_webhook(
    secret: str,
    body: bytes,
    header: str,
    *,
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> dict[str, Any]:
    """The event, once `header` (`t=<unix>,v1=<hex>`) proves `body` was signed with `secret`
    (the whole `whsec_...` string) less than `tolerance_seconds` ago. Several `v1=` values
    (a secret being rotated) are each tried. Raises InvalidSignature otherwise."""
    timestamp: str | None = None
    candidates: list[str] = []
    for item in header.split(","):
        name, _, value = item.strip().partition("=")
        if name == "t":
            timestamp = value
        elif name == "v1":
            candidates.append(value)
    if timestamp is None or not timestamp.isdigit() or not candidates:
        raise InvalidSignature("malformed PartnerLink-Signature header")
    if abs((now if now is not None else time.time()) - int(timestamp)) > tolerance_seconds:
        raise InvalidSignature("signature timestamp outside the tolerance")
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
    ).hexdigest()
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise InvalidSignature("signature does not match")
    event: dict[str, Any] = json.loads(body)
    return event
