"""Google's OAuth 2.0 refresh-token grant: an access token per credentials, reused.

`POST {token_url}` with the form `grant_type=refresh_token`, `client_id`,
`client_secret`, `refresh_token` answers `{"access_token", "expires_in", "token_type"}`;
the token is kept, process-wide, until a minute before it expires (CONTRACT §11).
`invalid_grant` (a revoked or expired refresh token) and `invalid_client` are the
merchant's to fix: `credentials` errors whose message holds neither secret.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

import httpx

from partnerlink.destinations.platform import (
    PlatformError,
    busy_platform,
    garbage_answer,
    json_object,
    known_code,
    platform_said,
    transport_error,
)
from partnerlink.kit.digests import sha256_hex

TOKEN_MARGIN_SECONDS = 60.0
DEFAULT_LIFETIME_SECONDS = 3600.0
_SIGN_IN = "Google's sign-in service"

TokenKey = tuple[str, str, str]

# RFC 6749 §5.2's error codes, and Google's descriptions known to hold no credential: the
# only words of the token endpoint a merchant is shown (platform.platform_said).
OAUTH_ERRORS = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
    }
)
KNOWN_DESCRIPTIONS = tuple(
    re.compile(pattern)
    for pattern in (
        r"Token has been expired or revoked\.",
        r"Bad Request",
        r"Unauthorized",
        r"The OAuth client was not found\.",
        r"Invalid grant_type",
        r"Account has been deleted",
    )
)


@dataclass(frozen=True)
class GoogleCredentials:
    client_id: str
    client_secret: str
    refresh_token: str


class TokenCache:
    """Access tokens by (token URL, client id, refresh token's digest), until they expire."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[TokenKey, tuple[str, float]] = {}

    def get(self, key: TokenKey) -> str | None:
        with self._lock:
            entry = self._tokens.get(key)
        if entry and entry[1] > time.monotonic():
            return entry[0]
        return None

    def put(self, key: TokenKey, token: str, lifetime: float) -> None:
        with self._lock:
            self._tokens[key] = (token, time.monotonic() + lifetime)

    def drop(self, key: TokenKey) -> None:
        with self._lock:
            self._tokens.pop(key, None)


TOKENS = TokenCache()


def token_key(token_url: str, credentials: GoogleCredentials) -> TokenKey:
    return (token_url, credentials.client_id, sha256_hex(credentials.refresh_token))


def access_token(
    client: httpx.Client, token_url: str, credentials: GoogleCredentials, tokens: TokenCache
) -> str:
    """The cached access token of these credentials, or a new one from the token URL."""
    key = token_key(token_url, credentials)
    cached = tokens.get(key)
    if cached:
        return cached
    form = {
        "grant_type": "refresh_token",
        "client_id": credentials.client_id,
        "client_secret": credentials.client_secret,
        "refresh_token": credentials.refresh_token,
    }
    try:
        response = client.post(token_url, data=form)
    except httpx.HTTPError as error:
        raise transport_error(_SIGN_IN, error) from None
    answer = json_object(response)
    if answer is None:
        raise garbage_answer(_SIGN_IN, response)
    token = answer.get("access_token")
    if response.status_code == 200 and isinstance(token, str) and token:
        lifetime = _seconds(answer.get("expires_in"))
        tokens.put(key, token, max(lifetime - TOKEN_MARGIN_SECONDS, 0.0))
        return token
    raise _token_error(response, answer)


def _token_error(response: httpx.Response, answer: dict[str, object]) -> PlatformError:
    status = response.status_code
    code = known_code(answer.get("error"), OAUTH_ERRORS)
    said = platform_said(
        f"{_SIGN_IN} answered HTTP {status}" + (f" {code}" if code else ""),
        (answer.get("error_description"),),
        KNOWN_DESCRIPTIONS,
    )
    if status == 429 or status >= 500:
        return busy_platform(said, response)
    if code in ("invalid_grant", "invalid_client", "unauthorized_client") or status in (401, 403):
        return PlatformError(
            "credentials",
            f"{said}. The refresh token or OAuth client is no longer valid (revoked, "
            "expired or for another client): authorize again and save the new "
            "credentials on this destination.",
            status=status,
        )
    return PlatformError("invalid", said, status=status)


def _seconds(value: object) -> float:
    if isinstance(value, bool):
        return DEFAULT_LIFETIME_SECONDS
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return float(value)
    return DEFAULT_LIFETIME_SECONDS
