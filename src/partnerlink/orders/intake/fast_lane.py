"""POST /v1/orders straight on ASGI: the hottest route without the framework's per-request work.

FastAPI's handling of a request (routing, a Request object, dependency
solving, decoding the JSON, then validating the dict) costs more CPU than the
order's own database work, and well over twice this lane's (measured in process
with no database: bench/README.md; bench/orders.py measures the whole server).
So an order that is well-formed in every way the route checks before it runs is
taken here:

- POST to exactly /v1/orders, with no query string (so not the legacy
  `?access_token=`);
- an `Authorization: Bearer` token of the access-token form;
- a JSON body (content type application/json) that `OrderIn` accepts,
  validated by pydantic straight from the bytes.

It goes to the same pipeline as the route's (orders/intake/wiring.py), and its answer is
the route's own bytes. Everything else goes on to the FastAPI route with its
body replayed untouched: a missing or malformed token, a body the model
refuses, another content type, a client gone mid-body. So every refusal is
the route's own, word for word; no request is refused here that the route
would have accepted, and what both accept is the same order (JSON read by
pydantic accepts less than Python's `json` module does, never more: what it
refuses, the route judges).

It sits inside the other middleware (metrics, security headers, the partner
quota, body size limit: see app.py), which see its requests as the route's.
"""

from __future__ import annotations

from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from partnerlink.deps import bearer_credentials
from partnerlink.middleware import ROUTE_TEMPLATE
from partnerlink.orders.intake.wiring import order_pipeline
from partnerlink.orders.schemas import ACCEPTED, OrderIn
from partnerlink.orders.service import OrderPost
from partnerlink.problems import DomainError, problem_from
from partnerlink.security.secrets import ACCESS_TOKEN_PREFIX

PATH = "/v1/orders"
# A tuple: shared by every answer, so no middleware may add to it in place.
_ACCEPTED_HEADERS = (
    (b"content-length", str(len(ACCEPTED)).encode()),
    (b"content-type", b"application/json"),
)


class OrdersFastLane:
    """ASGI middleware: takes well-formed orders itself, hands everything else on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] != PATH
            or scope["method"] != "POST"
            or scope["query_string"]
        ):
            await self.app(scope, receive, send)
            return
        token, is_json = _bearer_token_and_json(scope["headers"])
        messages, body = await _read_body(receive)
        order = _valid_order(body) if token and is_json and body is not None else None
        if order is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        scope[ROUTE_TEMPLATE] = PATH
        try:
            await order_pipeline(scope["app"]).run(OrderPost(token=token, order=order))
        except DomainError as refused:  # an unknown or revoked token; a busy database
            await problem_from(refused)(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": _ACCEPTED_HEADERS})
        await send({"type": "http.response.body", "body": ACCEPTED})


def _bearer_token_and_json(headers: list[tuple[bytes, bytes]]) -> tuple[str, bool]:
    """The bearer token if it has the access-token form ("" otherwise), and whether the body
    is declared JSON; read as the route reads them (the first of a repeated header)."""
    authorization = content_type = None
    for name, value in headers:
        if name == b"authorization" and authorization is None:
            authorization = value
        elif name == b"content-type" and content_type is None:
            content_type = value
    token = bearer_credentials(authorization.decode("latin-1")) if authorization else ""
    if not token.startswith(ACCESS_TOKEN_PREFIX):
        token = ""
    is_json = content_type is not None and (
        content_type.split(b";", 1)[0].strip().lower() == b"application/json"
    )
    return token, is_json


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """Every message received, and the whole body (None when the client went away first).

    The body size limit (middleware.BodySizeLimit) counts as it goes and stops an
    oversized body here, as it stops the route's.
    """
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        if not message.get("more_body", False):
            break
    if len(messages) == 1:
        return messages, messages[0].get("body", b"")
    return messages, b"".join(message.get("body", b"") for message in messages)


def _valid_order(body: bytes) -> OrderIn | None:
    try:
        return OrderIn.model_validate_json(body)
    except ValidationError:  # the route says what is wrong, in its own words
        return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` for the route: the messages already read, then the connection's own."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
