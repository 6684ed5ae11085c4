"""Minting, hashing and comparing secrets.

Tokens are 256-bit random values with a recognisable prefix (secret scanners and
people spot them); only their SHA-256 digest is stored, so a database leak does
not leak a usable credential. High-entropy values need no slow hash.
"""

from __future__ import annotations

import hmac
import secrets

from partnerlink.kit.digests import hmac_sha256, sha256_hex, unpadded_base64url

ACCESS_TOKEN_PREFIX = "plk_at_"
REFRESH_TOKEN_PREFIX = "plk_rt_"
INTEGRATION_TOKEN_PREFIX = "plk_it_"
CLIENT_SECRET_PREFIX = "plk_cs_"
CLIENT_ID_PREFIX = "plk_ci_"
SESSION_TOKEN_PREFIX = "plk_ms_"
# What never reaches a log, whatever carries it (security/redaction.py). A client id is
# no secret: it stays, so that a log line still says which partner called.
SECRET_PREFIXES = (
    ACCESS_TOKEN_PREFIX,
    REFRESH_TOKEN_PREFIX,
    INTEGRATION_TOKEN_PREFIX,
    CLIENT_SECRET_PREFIX,
    SESSION_TOKEN_PREFIX,
)


def mint(prefix: str, nbytes: int = 32, *, sandbox: bool = False) -> str:
    """A new secret; a sandbox partner's carry `test_` after the prefix (`plk_at_test_...`)."""
    return prefix + ("test_" if sandbox else "") + secrets.token_urlsafe(nbytes)


def digest(value: str) -> str:
    """What is stored of a secret: its SHA-256, in hex."""
    return sha256_hex(value)


def matches(value: str, expected_digest: str) -> bool:
    """Constant-time check of a presented secret against a stored digest."""
    return hmac.compare_digest(digest(value), expected_digest)


def sign(key: bytes, message: str) -> str:
    return unpadded_base64url(hmac_sha256(key, message.encode()))


def verify_signature(key: bytes, message: str, signature: str) -> bool:
    return hmac.compare_digest(sign(key, message), signature)
