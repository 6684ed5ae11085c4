"""Minting, hashing and comparing secrets.

Tokens are 256-bit random values with a recognisable prefix (secret scanners and
people spot them); only their SHA-256 digest is stored, so a database leak does
not leak a usable credential. High-entropy values need no slow hash.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

ACCESS_TOKEN_PREFIX = "plk_at_"
REFRESH_TOKEN_PREFIX = "plk_rt_"
INTEGRATION_TOKEN_PREFIX = "plk_it_"
CLIENT_SECRET_PREFIX = "plk_cs_"
CLIENT_ID_PREFIX = "plk_ci_"
SESSION_TOKEN_PREFIX = "plk_ms_"


def mint(prefix: str, nbytes: int = 32, *, sandbox: bool = False) -> str:
    """A new secret; a sandbox partner's carry `test_` after the prefix (`plk_at_test_...`)."""
    return prefix + ("test_" if sandbox else "") + secrets.token_urlsafe(nbytes)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def matches(value: str, expected_digest: str) -> bool:
    """Constant-time check of a presented secret against a stored digest."""
    return hmac.compare_digest(digest(value), expected_digest)


def sign(key: bytes, message: str) -> str:
    mac = hmac.new(key, message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def verify_signature(key: bytes, message: str, signature: str) -> bool:
    return hmac.compare_digest(sign(key, message), signature)
