"""Every `/v1` request that names a partner counts against its quota (CONTRACT.md §13).

A request names a partner by a live access token (`Authorization: Bearer`, or the legacy
`?access_token=` however the route reads its name) of one of its connections (a revoked or
expired one names nobody, like an unknown one), or by its client credentials
(`client_id` and `client_secret` in the query, HTTP Basic, or, on the OAuth endpoints,
the form body's `client_secret_post`) when the secret is right: a client id alone, which
is not secret, spends nobody's quota. Its answer carries
`RateLimit-Policy` and `RateLimit` in the form of draft-ietf-httpapi-ratelimit-headers-10/-11
(Sept. 2025 / May 2026; §3 "RateLimit-Policy": a structured-field List of quoted policy
names with `q` (quota) and `w` (window, seconds); §4 "RateLimit": the same name with `r`
(remaining) and `t` (seconds until the quota resets)), e.g.
`RateLimit-Policy: "default";q=60000;w=60` and `RateLimit: "default";r=59990;t=42`.
Over the quota it answers 429 `rate_limited` with `Retry-After` (= `t`), and the request
goes no further. A request that names no partner (none given, an unknown token, a wrong
secret) counts against nothing and its answer carries neither field.

An ASGI middleware around the orders' fast lane: the hot path pays a digest, two
dictionary look-ups and a counter (security/request_quota.py); who a token names and a
partner's quota are read from the database once and kept (quotas for QUOTA_TTL_SECONDS,
so `partners update --requests-per-minute` applies within that on every process; a live
token's partner for TOKEN_TTL_SECONDS, and read again at once when the route refuses the
token, so a revoked token's refused requests are given back and count for nothing).
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar
from urllib.parse import parse_qsl

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from partnerlink.deps import bearer_credentials
from partnerlink.partners.service import ClientKey, client_key, requests_per_minute
from partnerlink.problems import RateLimited, problem_from
from partnerlink.security.request_quota import WINDOW_SECONDS, RequestQuota
from partnerlink.security.secrets import ACCESS_TOKEN_PREFIX, digest, matches
from partnerlink.settings import Settings
from partnerlink.tokens.deps import query_credentials
from partnerlink.tokens.service import partner_of_live_token

log = logging.getLogger("partnerlink.tokens")
T = TypeVar("T")

POLICY = "default"
QUOTA_TTL_SECONDS = 30.0
CLIENT_TTL_SECONDS = 30.0  # a rotated secret is seen within this
MAX_CACHED = 100_000
# A live token's partner is read again after this: a token revoked in another process is
# seen within it even by requests the route never judges (refused here with 429).
TOKEN_TTL_SECONDS = 30.0
# The route's answers to a token it refuses: one that died since it was read here.
_TOKEN_REFUSED = frozenset({401, 403})


@dataclass(frozen=True, slots=True)
class NamedBy:
    """Who a token (by digest) names: a partner until `expires_at` (Unix time, None for
    never), read at `read_at` (monotonic); `partner_id` "" for nobody, which is final: an
    unknown, revoked or expired token never comes back to life."""

    partner_id: str
    expires_at: float | None
    read_at: float


_NOBODY = NamedBy("", None, 0.0)


class PartnerQuotaLimit:
    """ASGI middleware: counts, answers 429 over the quota, adds the RateLimit fields."""

    def __init__(self, app: ASGIApp, *, settings: Settings) -> None:
        self.app = app
        self.default_quota = settings.partner_requests_per_minute
        storage = settings.rate_limit_storage
        # A memory storage is one per process; apps sharing a process (tests) count apart.
        name = f"quota-{uuid.uuid4().hex[:12]}" if storage.startswith("memory") else "quota"
        self.counter = RequestQuota(name, storage)
        self.token_partners: dict[str, NamedBy] = {}  # by token digest
        self.clients: dict[str, tuple[ClientKey | None, float]] = {}
        self.quotas: dict[str, tuple[int, float]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        receive = await _form_read_ahead(scope, receive)
        named = await self._named_partner(scope)
        if named is None:
            await self.app(scope, receive, send)
            return
        partner_id, token_key = named
        quota = await self._quota(scope, partner_id)
        verdict = self.counter.count(partner_id, quota)
        fields = [
            (b"ratelimit-policy", f'"{POLICY}";q={quota};w={WINDOW_SECONDS}'.encode()),
            (b"ratelimit", f'"{POLICY}";r={verdict.remaining};t={verdict.reset_seconds}'.encode()),
        ]
        if not verdict.allowed:
            refusal = problem_from(
                RateLimited(
                    verdict.reset_seconds,
                    f"Over your quota of {quota} requests a minute; retry after the reset.",
                )
            )
            refusal.raw_headers.extend(fields)
            await refusal(scope, receive, send)
            return

        async def send_with_fields(message: Message) -> None:
            if message["type"] == "http.response.start":
                if (
                    token_key
                    and message["status"] in _TOKEN_REFUSED
                    and not await self._still_live(scope, token_key)
                ):
                    # Revoked since it was read here: it named nobody, so it counts for
                    # nothing and its answer is an unknown token's, without the fields.
                    self.counter.give_back(partner_id)
                else:
                    message = {**message, "headers": [*message.get("headers", ()), *fields]}
            await send(message)

        await self.app(scope, receive, send_with_fields)

    async def _named_partner(self, scope: Scope) -> tuple[str, str] | None:
        """The partner a request names, and the digest of the token that names it ("" when
        named by client credentials); None for nobody."""
        token, client_id, client_secret = _credentials(scope)
        if token:
            key = digest(token)
            named = self.token_partners.get(key)
            if named is None or (
                named.partner_id and time.monotonic() - named.read_at >= TOKEN_TTL_SECONDS
            ):
                named = await self._read_token(scope, key)
            if named is None or not named.partner_id:
                return None
            if named.expires_at is not None and named.expires_at <= time.time():
                return None
            return named.partner_id, key
        if client_id and client_secret:
            client = await self._client(scope, client_id)
            if (
                client is not None
                and client.active
                and matches(client_secret, client.client_secret_hash)
            ):
                return client.partner_id, ""
        return None

    async def _read_token(self, scope: Scope, key: str) -> NamedBy | None:
        """Who the token names now, kept; None when the database could not say (not kept)."""
        found = await run_in_threadpool(_read, scope, partner_of_live_token, key)
        if found is False:
            return None
        named = _NOBODY
        if found is not None:
            partner_id, expires_at = found
            expires = expires_at.timestamp() if expires_at is not None else None
            named = NamedBy(partner_id, expires, time.monotonic())
        if len(self.token_partners) >= MAX_CACHED:
            self.token_partners.clear()
        self.token_partners[key] = named
        return named

    async def _still_live(self, scope: Scope, key: str) -> bool:
        """Whether a token the route refused is still live, read again (only on a refusal,
        so a revoked token is read once per process); when the database cannot say, it is."""
        named = await self._read_token(scope, key)
        return named is None or bool(named.partner_id)

    async def _client(self, scope: Scope, client_id: str) -> ClientKey | None:
        now = time.monotonic()
        cached = self.clients.get(client_id)
        if cached is not None and now - cached[1] < CLIENT_TTL_SECONDS:
            return cached[0]
        found = await run_in_threadpool(_read, scope, client_key, client_id)
        if found is False:
            return None
        if len(self.clients) >= MAX_CACHED:
            self.clients.clear()
        self.clients[client_id] = (found, now)
        return found

    async def _quota(self, scope: Scope, partner_id: str) -> int:
        now = time.monotonic()
        cached = self.quotas.get(partner_id)
        if cached is not None and now - cached[1] < QUOTA_TTL_SECONDS:
            return cached[0]
        own = await run_in_threadpool(_read, scope, requests_per_minute, partner_id)
        if own is False:  # keep what was known, or the setting, until the database answers
            return cached[0] if cached else self.default_quota
        quota = own or self.default_quota
        if len(self.quotas) >= MAX_CACHED:
            self.quotas.clear()
        self.quotas[partner_id] = (quota, now)
        return quota


def _read(scope: Scope, query: Callable[[Session, str], T], value: str) -> T | Literal[False]:
    """`query(session, value)` in a short session of its own; False when the database
    cannot answer (the request then goes on, and its route says what is wrong)."""
    sessions: sessionmaker[Session] = scope["app"].state.sessionmaker
    try:
        with sessions() as session:
            return query(session, value)
    except SQLAlchemyError as error:
        log.warning("partner quota: could not read %s: %s", query.__name__, type(error).__name__)
        return False


def _credentials(scope: Scope) -> tuple[str, str, str]:
    """The access token, client id and client secret a request presents ("" for none)."""
    token = client_id = client_secret = ""
    for name, value in scope["headers"]:
        if name == b"authorization":
            text = value.decode("latin-1")
            token = bearer_credentials(text)
            if text[:6].lower() == "basic ":
                client_id, client_secret = _basic(text[6:].strip())
            break
    form = scope.get(_FORM_KEY)
    if form:
        client_id = client_id or form.get("client_id", "")
        client_secret = client_secret or form.get("client_secret", "")
    if scope["query_string"]:
        # As the route reads them: a byte pattern here (`access_token=`) missed the
        # percent-encoded names the route decodes, and those requests counted nowhere.
        query = query_credentials(scope)
        token = token or query.access_token
        client_id = client_id or query.client_id
        client_secret = client_secret or query.client_secret
    return (token if token.startswith(ACCESS_TOKEN_PREFIX) else ""), client_id, client_secret


# The OAuth endpoints (RFC 6749 §2.3.1) also take the client's credentials in the form.
_FORM_PATHS = frozenset({"/v1/oauth/token", "/v1/oauth/introspect", "/v1/oauth/revoke"})
_FORM_KEY = "partnerlink.quota_form"
_FORM_MAX_BYTES = 64 * 1024  # a token request is a few hundred bytes; a larger one is not read


async def _form_read_ahead(scope: Scope, receive: Receive) -> Receive:
    """On the OAuth endpoints, the form's fields, read ahead into the scope, and the body
    handed on to the route unchanged (as `receive` replays it)."""
    if scope["method"] != "POST" or scope["path"] not in _FORM_PATHS:
        return receive
    content_type = dict(scope["headers"]).get(b"content-type", b"")
    if not content_type.startswith(b"application/x-www-form-urlencoded"):
        return receive
    messages: list[Message] = []
    body = b""
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if not message.get("more_body", False) or len(body) > _FORM_MAX_BYTES:
            break
    if len(body) <= _FORM_MAX_BYTES and messages[-1]["type"] == "http.request":
        scope[_FORM_KEY] = dict(parse_qsl(body.decode("latin-1")))

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay


def _basic(encoded: str) -> tuple[str, str]:
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return "", ""
    client_id, _, secret = decoded.partition(":")
    return client_id, secret
