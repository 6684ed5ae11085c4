"""Signed, expiring form tokens: state that travels in a hidden field instead of a cookie.

The consent screen runs inside a partner's IFrame, where browsers block
third-party cookies; so everything the screen must remember between two forms
(which integration token, which client, which merchant signed in) rides in a
token signed with the service key. A token is bound to one purpose, so a token
minted for one form is refused by another.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any

from partnerlink.security.secrets import sign, verify_signature

_VERSION = "v1"
# Far above any real token; refuses absurd input before any work is done.
MAX_TOKEN_LENGTH = 4096


class InvalidFormToken(Exception):
    """The token was not minted by us for this purpose, or was altered."""


class ExpiredFormToken(InvalidFormToken):
    """A genuine token whose time is up."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _message(purpose: str, body: str) -> str:
    return f"form-token:{_VERSION}:{purpose}:{body}"


def issue_form_token(
    key: bytes, *, purpose: str, ttl_seconds: int, claims: dict[str, Any], now: float | None = None
) -> str:
    """Mints a token carrying `claims` for `purpose`, valid for `ttl_seconds`."""
    expires = int((now if now is not None else time.time()) + ttl_seconds)
    payload = json.dumps({**claims, "exp": expires}, separators=(",", ":"), sort_keys=True)
    body = _b64(payload.encode())
    return f"{_VERSION}.{body}.{sign(key, _message(purpose, body))}"


def read_form_token(
    key: bytes, token: str, *, purpose: str, now: float | None = None
) -> dict[str, Any]:
    """The claims of a genuine, unexpired token for `purpose`; raises otherwise."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise InvalidFormToken("missing or oversized form token")
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != _VERSION:
        raise InvalidFormToken("malformed form token")
    _, body, signature = parts
    # The signature is checked before the body is parsed: we never parse attacker JSON.
    if not signature.isascii() or not verify_signature(key, _message(purpose, body), signature):
        raise InvalidFormToken("bad signature")
    try:
        claims = json.loads(_unb64(body))
    except (binascii.Error, ValueError) as error:
        raise InvalidFormToken("unreadable form token") from error
    if not isinstance(claims, dict) or not isinstance(claims.get("exp"), int):
        raise InvalidFormToken("unreadable form token")
    if claims["exp"] < (now if now is not None else time.time()):
        raise ExpiredFormToken("form token expired")
    return claims
