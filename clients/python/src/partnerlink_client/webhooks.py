"""Checking a webhook's signatures (CONTRACT.md §9, §13): `PartnerLink-Signature`, or
the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

SECRET_PREFIX = "whsec_"


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
    """The event, once `header` (`t=<unix>,v1=<hex>[,v1=<hex>]`) proves `body` was signed
    with `secret` (the whole `whsec_...` string) less than `tolerance_seconds` ago. Several
    `v1=` values (the new and the old secret, for 24 hours after a rotation) are each
    tried. Raises InvalidSignature otherwise."""
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
    _check_fresh(timestamp, tolerance_seconds, now)
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
    ).hexdigest()
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise InvalidSignature("signature does not match")
    event: dict[str, Any] = json.loads(body)
    return event


def verify_standard_webhook(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> dict[str, Any]:
    """The event, once the Standard Webhooks headers prove `body` was signed with `secret`
    less than `tolerance_seconds` ago: `webhook-signature` holds space-separated
    `v1,<base64 HMAC-SHA256>` values of "<webhook-id>.<webhook-timestamp>.<body>", keyed
    with the bytes the base64 after `whsec_` encodes; any may match. Header names in any
    case. Raises InvalidSignature otherwise (a secret issued before PartnerLink signed
    this form is no Standard Webhooks secret: rotate it)."""
    lower = {name.lower(): value for name, value in headers.items()}
    event_id = lower.get("webhook-id", "")
    timestamp = lower.get("webhook-timestamp", "")
    signatures = lower.get("webhook-signature", "")
    if not event_id or not timestamp.isdigit() or not signatures:
        raise InvalidSignature("missing or malformed Standard Webhooks headers")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error as error:
        raise InvalidSignature("not a Standard Webhooks secret (rotate it)") from error
    _check_fresh(timestamp, tolerance_seconds, now)
    signed = f"{event_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    candidates = [
        value
        for version, _, value in (s.partition(",") for s in signatures.split())
        if version == "v1"
    ]
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise InvalidSignature("signature does not match")
    event: dict[str, Any] = json.loads(body)
    return event


def _check_fresh(timestamp: str, tolerance_seconds: float, now: float | None) -> None:
    if abs((now if now is not None else time.time()) - int(timestamp)) > tolerance_seconds:
        raise InvalidSignature("signature timestamp outside the tolerance")
