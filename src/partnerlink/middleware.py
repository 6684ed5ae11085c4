"""Pure ASGI middleware: body size limit, security headers, metrics.

Written against ASGI directly (not BaseHTTPMiddleware) because these run on
every request, including the orders hot path.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qsl

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from partnerlink.log_format import CURRENT_REQUEST, RequestLog, request_id_from
from partnerlink.problems import PROBLEM_MEDIA_TYPE, problem_body

REQUESTS = Counter(
    "partnerlink_http_requests_total", "HTTP requests", ["method", "route", "status"]
)
LATENCY = Histogram(
    "partnerlink_http_request_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


async def send_problem(send: Send, status: int, code: str, detail: str) -> None:
    body = json.dumps(problem_body(status, code, detail)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodySizeLimit:
    """Answers 413 for JSON bodies over the limit, without reading them whole.

    Paths in `exempt_prefixes` (the customer upload URL) enforce their own, larger limit;
    paths ending in one of `larger_suffixes` take that larger limit here.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        exempt_prefixes: tuple[str, ...],
        larger_suffixes: tuple[tuple[str, int], ...] = (),
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt_prefixes = exempt_prefixes
        self.larger_suffixes = larger_suffixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.exempt_prefixes):
            await self.app(scope, receive, send)
            return
        max_bytes = self.max_bytes
        for suffix, larger in self.larger_suffixes:
            if scope["path"].endswith(suffix):
                max_bytes = max(max_bytes, larger)
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    too_large = int(value) > max_bytes
                except ValueError:
                    too_large = False
                if too_large:
                    await send_problem(
                        send, 413, "payload_too_large", "The request body is larger than allowed."
                    )
                    return
        received = 0
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_bytes:
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not response_started:
                await send_problem(
                    send, 413, "payload_too_large", "The request body is larger than allowed."
                )


class _BodyTooLarge(Exception):
    pass


_BASE_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    # Receipt and consent links carry keys in the query: never leak them as a Referer.
    (b"referrer-policy", b"no-referrer"),
]
_DEFAULT_CSP = (b"content-security-policy", b"frame-ancestors 'none'")
_NO_STORE = (b"cache-control", b"no-store")
# The legacy `?access_token=` (README, "Versioning"): deprecated since 2026-01-01
# (RFC 9745's `@<unix seconds>`), removed after 2027-12-31 (RFC 8594's HTTP-date),
# announced on every /v1 answer to a request that authenticated with it.
LEGACY_TOKEN_HEADERS = [
    (b"deprecation", b"@1767225600"),
    (b"sunset", b"Fri, 31 Dec 2027 23:59:59 GMT"),
    (b"link", b'</docs>; rel="deprecation"; type="text/html"'),
]


# With an https public URL, browsers keep to https for a year (CONTRACT §12).
HSTS_HEADER = (b"strict-transport-security", b"max-age=31536000")


def uses_legacy_token(scope: Scope) -> bool:
    """A /v1 request whose token travels in the query, not in `Authorization: Bearer`.

    The query is read as the routes read it (Starlette decodes names), so a spelling
    like `access%5Ftoken`, which authenticates, is the legacy form too.
    """
    query: bytes = scope["query_string"]
    if not scope["path"].startswith("/v1/") or b"=" not in query:
        return False
    if b"access_token=" not in query and not any(
        name == "access_token"
        for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    ):
        return False
    for name, value in scope["headers"]:
        if name == b"authorization" and value[:7].lower() == b"bearer " and value[7:].strip():
            return False
    return True


class SecurityHeaders:
    """Adds security headers; a page that sets its own CSP (the consent screen) keeps it.

    `https` (the public URL is https) adds HSTS to every answer, errors included.
    """

    def __init__(self, app: ASGIApp, *, https: bool = False) -> None:
        self.app = app
        self.base_headers = [*_BASE_HEADERS, HSTS_HEADER] if https else _BASE_HEADERS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        sensitive = not path.startswith(("/static", "/docs", "/openapi.json"))
        legacy = uses_legacy_token(scope)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers.extend(self.base_headers)
                if b"content-security-policy" not in names:
                    headers.append(_DEFAULT_CSP)
                    headers.append((b"x-frame-options", b"DENY"))
                if sensitive and b"cache-control" not in names:
                    headers.append(_NO_STORE)
                if legacy:
                    headers.extend(LEGACY_TOKEN_HEADERS)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


class Metrics:
    """Counts requests by route template (not raw path, which would explode cardinality).

    With `request_log` (JSON logs) it also makes the request known to its log
    lines: a request id, when it started, and its route template.
    """

    def __init__(self, app: ASGIApp, request_log: bool = False) -> None:
        self.app = app
        self.request_log = request_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        if self.request_log:
            CURRENT_REQUEST.set(
                RequestLog(
                    request_id_from(scope["headers"]), started, lambda: route_template(scope)
                )
            )

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            template = route_template(scope)
            REQUESTS.labels(scope["method"], template, str(status)).inc()
            LATENCY.labels(scope["method"], template).observe(time.perf_counter() - started)


# Set by an endpoint that answers without FastAPI's router (the orders' fast lane).
ROUTE_TEMPLATE = "partnerlink.route_template"


def route_template(scope: Scope) -> str:
    """The path template of the route that answered, with its router's prefix.

    FastAPI from 0.16x keeps an included router's routes as they were declared
    (`/orders`) and puts the prefixed template on the effective route it matched,
    which it keeps in its part of the scope; earlier versions copied each route
    with the prefix into its path.
    """
    explicit = scope.get(ROUTE_TEMPLATE)
    if explicit:
        return str(explicit)
    effective = scope.get("fastapi", {}).get("effective_route_context")
    template = getattr(effective, "path_format", None) or getattr(
        scope.get("route"), "path_format", None
    )
    if not template:
        return "unmatched"
    # A mounted application's routes (the console at /merchant) are declared without
    # the mount's prefix; it is what the mount added to the root path.
    mounted = str(scope.get("root_path", ""))[len(str(scope.get("app_root_path", ""))) :]
    return f"{mounted}{template}".rstrip("/") or "/"
