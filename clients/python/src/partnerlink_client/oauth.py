"""OAuth 2.0 with PKCE (CONTRACT §13), as Stripe's and Square's SDKs offer it: build the
authorize URL with a fresh verifier and `state`, check the callback, exchange the code,
refresh, revoke.

    started = pl.oauth.authorize_url("https://pos.example.com/oauth/callback")
    # keep started.state and started.code_verifier (the user's session); send the
    # merchant to started.url; on the callback:
    code = pl.oauth.code_from_callback(callback_url, started.state)
    tokens = pl.oauth.exchange_code(code, started.code_verifier, started.redirect_uri)

The token calls authenticate with HTTP Basic (`client_secret_basic`) and answer `Tokens`,
kept by the client like the consent flow's; refused ones raise the client's errors with
RFC 6749's `error` as `code` (`invalid_grant`, `invalid_client`, ...).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from partnerlink_client.calls import Call, Tokens

SCOPE = "store"  # the one scope there is (the metadata's scopes_supported)


@dataclass(frozen=True)
class Authorization:
    """Where to send the merchant, and what to keep until the callback comes back."""

    url: str
    state: str
    code_verifier: str
    redirect_uri: str


class AuthorizationFailed(Exception):
    """The callback carried no code for us: the merchant declined (`access_denied`), the
    request was refused, or `state` is not the one sent (a forged or stale callback)."""

    def __init__(self, error: str, description: str = "") -> None:
        self.error = error
        self.description = description
        super().__init__(f"{error}: {description}".rstrip(": "))


def new_code_verifier() -> str:
    """RFC 7636 §4.1: 64 characters of the unreserved set, 384 random bits."""
    return secrets.token_urlsafe(48)


def code_challenge(verifier: str) -> str:
    """RFC 7636 §4.2's S256: BASE64URL(SHA-256(verifier)) without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization(
    authorize_endpoint: str, client_id: str, redirect_uri: str, state: str | None = None
) -> Authorization:
    """An authorization request with a fresh PKCE verifier and (unless given) `state`."""
    verifier = new_code_verifier()
    state = state or secrets.token_urlsafe(24)
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": SCOPE,
            "state": state,
            "code_challenge": code_challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    return Authorization(f"{authorize_endpoint}?{query}", state, verifier, redirect_uri)


def code_from_callback(callback_url: str, state: str) -> str:
    """The code of the redirect back to you, once its `state` is the one you sent."""
    params = {key: values[0] for key, values in parse_qs(urlsplit(callback_url).query).items()}
    if not secrets.compare_digest(params.get("state", ""), state):
        raise AuthorizationFailed("state_mismatch", "the callback's state is not the one sent")
    if "error" in params or not params.get("code"):
        raise AuthorizationFailed(
            params.get("error", "invalid_request"), params.get("error_description", "")
        )
    return params["code"]


def _tokens(body: dict[str, Any]) -> Tokens:
    expires = datetime.now(UTC) + timedelta(seconds=int(body["expires_in"]))
    return Tokens(
        body["access_token"],
        body.get("refresh_token"),
        expires.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        store_id=body.get("storeId"),
    )


def exchange_code(code: str, code_verifier: str, redirect_uri: str) -> Call:
    # Sent once, never retried: a code presented twice revokes what it bought (RFC 6749
    # §4.1.2), so a retry after a lost answer would undo the first exchange.
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": code_verifier,
        "redirect_uri": redirect_uri,
    }
    return Call("POST", "/v1/oauth/token", "basic", form=form, tokens=_tokens, retry=False)


def refresh(refresh_token: str) -> Call:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    return Call("POST", "/v1/oauth/token", "basic", form=form, tokens=_tokens)


def revoke(token: str, token_type_hint: str | None = None) -> Call:
    """RFC 7009: the token's connection is revoked; an unknown or dead token is no error."""
    form = {"token": token} | ({"token_type_hint": token_type_hint} if token_type_hint else {})
    return Call("POST", "/v1/oauth/revoke", "basic", form=form, read=lambda _body: None)


def basic_credentials(client_id: str, client_secret: str) -> str:
    """RFC 6749 §2.3.1: each part form-encoded, then `id:secret` in base64."""
    pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


class OAuth:
    """`client.oauth`: the helpers, bound to a client's credentials and tokens. On the
    async client the three calls are awaited; the other two never touch the network."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def authorize_url(
        self, redirect_uri: str, *, state: str | None = None, connect_url: str | None = None
    ) -> Authorization:
        """`redirect_uri` must be one registered for you (`partners update --redirect-uri`);
        `connect_url` is the consent screen's address when it has a host of its own."""
        state_ = self._client._state
        connect = (connect_url or state_.base_url + "/connect").rstrip("/")
        return authorization(
            f"{connect}/oauth/authorize", state_.client_id or "", redirect_uri, state
        )

    @staticmethod
    def code_from_callback(callback_url: str, state: str) -> str:
        return code_from_callback(callback_url, state)

    def exchange_code(self, code: str, code_verifier: str, redirect_uri: str) -> Any:
        return self._client._run(exchange_code(code, code_verifier, redirect_uri))

    def refresh(self, refresh_token: str | None = None) -> Any:
        return self._client._run(refresh(refresh_token or self._client._state.refresh_token or ""))

    def revoke(self, token: str | None = None, token_type_hint: str | None = None) -> Any:
        """Revokes `token` (by default the access token kept), and so its connection."""
        token = token or self._client._state.access_token or ""
        return self._client._run(revoke(token, token_type_hint))
