"""The webhook signing secret and the `PartnerLink-Signature` header (CONTRACT.md §9).

A partner's secret is never stored: the database keeps only a random nonce, and
the secret is `whsec_` + HMAC-SHA256(the service's signing key, the nonce),
derived when it is shown or used. A dump of the database alone cannot sign an
event. Rotating draws a new nonce. (Changing PARTNERLINK_SECRET_KEY changes every
partner's secret too: rotate and hand them out again.)
"""

from __future__ import annotations

import secrets

from partnerlink.kit.digests import hmac_sha256, unpadded_base64url

SECRET_PREFIX = "whsec_"
_CONTEXT = b"webhook-signing-secret:"


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def webhook_secret(signing_key: bytes, nonce: str) -> str:
    return SECRET_PREFIX + unpadded_base64url(hmac_sha256(signing_key, _CONTEXT + nonce.encode()))


def signature_header(secret: str, body: bytes, timestamp: int) -> str:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, keyed with the
    whole secret string (`whsec_` included) as UTF-8."""
    signed = f"{timestamp}.".encode() + body
    v1 = hmac_sha256(secret.encode(), signed).hex()
    return f"t={timestamp},v1={v1}"
