"""The webhook signing secret and the headers that sign an event (CONTRACT.md §9, §13).

A partner's secret is never stored: the database keeps only a random nonce, and
the secret is `whsec_` + HMAC-SHA256(the service's signing key, the nonce),
derived when it is shown or used. A dump of the database alone cannot sign an
event. Rotating draws a new nonce. (Changing PARTNERLINK_SECRET_KEY changes every
partner's secret too: rotate and hand them out again.)

Every event carries two signatures of the same bytes at the same second:
- `PartnerLink-Signature: t=<unix>,v1=<hex>`, keyed with the whole secret string;
- Standard Webhooks' `webhook-id`, `webhook-timestamp` and `webhook-signature:
  v1,<base64>`, keyed with the bytes the part after `whsec_` encodes.

Secrets minted since migration 0022 (nonces starting with STANDARD_NONCE_PREFIX) are
`whsec_` + standard base64, padded, of the 32 derived bytes: a Standard Webhooks
secret. Those minted before were `whsec_` + unpadded URL-safe base64, which is no
valid Standard Webhooks secret (43 characters cannot be padded base64, and `-`/`_`
are not in its alphabet; its libraries would key with other bytes, or refuse it).
Partners hold them, so they keep deriving and signing `PartnerLink-Signature`
exactly as before, but sign no `webhook-signature`: one rotation gives the partner
a secret that signs both, with the old one still signing for ROTATION_OVERLAP.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta

from partnerlink.kit.digests import hmac_sha256, unpadded_base64url

SECRET_PREFIX = "whsec_"
STANDARD_NONCE_PREFIX = "sw1."  # the secret derived from it is a Standard Webhooks secret
ROTATION_OVERLAP = timedelta(hours=24)  # a replaced secret keeps signing this long
STANDARD_KEY_BYTES = range(24, 65)  # CONTRACT §13: 24 to 64 bytes
_CONTEXT = b"webhook-signing-secret:"


def new_nonce() -> str:
    return STANDARD_NONCE_PREFIX + secrets.token_urlsafe(24)


def webhook_secret(signing_key: bytes, nonce: str) -> str:
    derived = hmac_sha256(signing_key, _CONTEXT + nonce.encode())
    if nonce.startswith(STANDARD_NONCE_PREFIX):
        return SECRET_PREFIX + base64.b64encode(derived).decode()
    return SECRET_PREFIX + unpadded_base64url(derived)  # minted before migration 0022


def signing_secrets(
    signing_key: bytes,
    *,
    nonce: str | None,
    previous_nonce: str | None,
    previous_until: datetime | None,
    now: datetime,
) -> tuple[str, ...]:
    """The secrets an event sent now is signed with: the partner's own first, then the
    one it replaced while that still signs (ROTATION_OVERLAP after the rotation)."""
    current = webhook_secret(signing_key, nonce or "")
    if previous_nonce and previous_until is not None and now < previous_until:
        return (current, webhook_secret(signing_key, previous_nonce))
    return (current,)


def standard_key(secret: str) -> bytes | None:
    """The key Standard Webhooks signs with: the bytes the part after `whsec_` encodes,
    when it is standard base64 with its padding, of 24 to 64 bytes; None otherwise (a
    secret minted before migration 0022)."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    canonical = base64.b64encode(key).decode() == encoded
    return key if canonical and len(key) in STANDARD_KEY_BYTES else None


def partnerlink_signature(secrets: Sequence[str], body: bytes, timestamp: int) -> str:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>` for each secret
    (newest first), keyed with the whole secret string (`whsec_` included) as UTF-8."""
    signed = f"{timestamp}.".encode() + body
    return ",".join(
        [f"t={timestamp}", *(f"v1={hmac_sha256(s.encode(), signed).hex()}" for s in secrets)]
    )


def standard_signature(
    secrets: Sequence[str], event_id: str, body: bytes, timestamp: int
) -> str | None:
    """`v1,<base64 HMAC-SHA256(key, "<id>.<t>.<raw body>")>` for each Standard Webhooks
    secret among `secrets`, space-separated; None when there is none."""
    signed = f"{event_id}.{timestamp}.".encode() + body
    keys = [key for key in map(standard_key, secrets) if key is not None]
    if not keys:
        return None
    return " ".join(f"v1,{base64.b64encode(hmac_sha256(key, signed)).decode()}" for key in keys)


def signature_headers(
    secrets: Sequence[str], event_id: str, body: bytes, timestamp: int
) -> list[tuple[bytes, bytes]]:
    """Every header that signs one attempt to send an event."""
    headers = [
        (b"PartnerLink-Signature", partnerlink_signature(secrets, body, timestamp).encode()),
        (b"webhook-id", event_id.encode()),
        (b"webhook-timestamp", str(timestamp).encode()),
    ]
    standard = standard_signature(secrets, event_id, body, timestamp)
    if standard is not None:
        headers.append((b"webhook-signature", standard.encode()))
    return headers
