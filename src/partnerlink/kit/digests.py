"""SHA-256 and HMAC-SHA256, the one way each is computed.

Formats built on them (a webhook's `PartnerLink-Signature`, a token's digest) stay
with their owners; only the primitive lives here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac


def sha256_hex(text: str) -> str:
    """Lower-case hex SHA-256 of the text's UTF-8 bytes (ad platforms' identifier hash,
    stored token digests). A lone surrogate, which no stored text holds, is hashed as
    its code point rather than raising, so that a presented secret cannot crash a check."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def unpadded_base64url(raw: bytes) -> str:
    """URL-safe base64 without `=` padding: fits a URL, a header or a form field as is."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
