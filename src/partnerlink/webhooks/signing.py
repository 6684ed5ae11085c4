"""The webhook signing secret and the `PartnerLink-Signature` header (CONTRACT.md §9).

A partner's secret is never stored: the database keeps only a random nonce, and
the secret is `whsec_` + HMAC-SHA256(the service's signing key, the nonce),
derived when it is shown or used. A dump of the database alone cannot sign an
event. Rotating draws a new nonce. (Changing PARTNERLINK_SECRET_KEY changes every
partner's secret too: rotate and hand them out again.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
_CONTEXT = b"webhook-signing-secret:"


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def webhook_secret(signing_key: bytes, nonce: str) -> str:
    mac = hmac.new(signing_key, _CONTEXT + nonce.encode(), hashlib.sha256).digest()
    return SECRET_PREFIX + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def signature_header(secret: str, body: bytes, timestamp: int) -> str:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, keyed with the
    whole secret string (`whsec_` included) as UTF-8."""
    signed = f"{timestamp}.".encode() + body
    v1 = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={v1}"
