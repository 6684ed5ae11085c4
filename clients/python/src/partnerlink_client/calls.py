"""Every /v1 endpoint as a description of one HTTP call, shared by the sync and async
clients (client.py): the method, the path, what it sends, which credential it needs and
how its answer is read."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlencode

# "basic": the client credentials as HTTP Basic (the OAuth endpoints, oauth.py).
Auth = Literal["none", "client", "bearer", "basic"]


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str | None = None
    expiration: str | None = None
    store_id: str | None = None
    ereceipt: bool | None = None


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    auth: Auth = "none"
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    form: dict[str, str] | None = None  # an application/x-www-form-urlencoded body
    url: str | None = None  # a whole URL (the pre-signed upload URL), else base + path
    read: Callable[[Any], Any] = lambda body: body
    # A call whose answer holds tokens the client keeps and answers (pairing, exchange,
    # refresh): read by this instead of `read`.
    tokens: Callable[[Any], Tokens] | None = None
    # False: sent once whatever happens (a retry could do harm: an OAuth code's exchange).
    retry: bool = True


def create_integration_token() -> Call:
    return Call("POST", "/v1/auth/integration", "client", read=lambda b: b["integrationToken"])


def integration_status(integration_token: str) -> Call:
    return Call(
        "GET",
        "/v1/auth/integration",
        "client",
        params={"integration_token": integration_token},
        read=lambda b: b["status"],
    )


def exchange_integration_token(integration_token: str) -> Call:
    def tokens(body: dict[str, Any]) -> Tokens:
        return Tokens(
            body["accessToken"],
            body["refreshToken"],
            body.get("expiration"),
            ereceipt=body.get("ereceipt"),
        )

    return Call(
        "GET",
        "/v1/auth/integration/token",
        "client",
        params={"integration_token": integration_token},
        tokens=tokens,
    )


def refresh(refresh_token: str) -> Call:
    def tokens(body: dict[str, Any]) -> Tokens:
        return Tokens(body["accessToken"], refresh_token, body.get("expiration"))

    return Call(
        "POST",
        "/v1/auth/token",
        "client",
        params={"code": refresh_token, "grant_type": "refresh_token"},
        tokens=tokens,
    )


def pair(code: int | str) -> Call:
    def tokens(body: dict[str, Any]) -> Tokens:
        return Tokens(body["access_token"], store_id=body.get("storeId"))

    return Call("POST", "/v1/auth/integration/pair", json={"code": int(code)}, tokens=tokens)


def revoke(token: str) -> Call:
    return Call("POST", "/v1/auth/revoke", "client", params={"token": token})


def token_status() -> Call:
    return Call("GET", "/v1/auth/token/status", "bearer")


def _page(path: str, limit: int | None, cursor: str | None) -> Call:
    """One page of a partner-authenticated list; the answer carries `nextCursor`."""
    page = {"limit": limit, "cursor": cursor}
    params = {name: value for name, value in page.items() if value is not None}
    return Call("GET", path, "client", params=params)


def connections(limit: int | None = None, cursor: str | None = None) -> Call:
    """One page: `{"connections": [...], "nextCursor"}` (null on the last page)."""
    return _page("/v1/connections", limit, cursor)


def webhook_deliveries(limit: int | None = None, cursor: str | None = None) -> Call:
    """One page: `{"deliveries": [...], "nextCursor"}` (null on the last page)."""
    return _page("/v1/webhooks/deliveries", limit, cursor)


def replay_webhook(event_id: str) -> Call:
    return Call(
        "POST",
        f"/v1/webhooks/deliveries/{quote(event_id, safe='')}/replay",
        "client",
        read=lambda b: b["eventId"],
    )


def put_store(profile: dict[str, Any]) -> Call:
    return Call("PUT", "/v1/stores", "bearer", json=profile, read=lambda b: b["store"])


def get_store() -> Call:
    return Call("GET", "/v1/stores", "bearer")


def upload_url() -> Call:
    return Call("GET", "/v1/customers", "bearer", read=lambda b: b["uploadUrl"])


def put_upload(url: str, records: Iterable[dict[str, Any]] | bytes) -> Call:
    body = records if isinstance(records, bytes) else json.dumps(list(records)).encode()
    return Call("PUT", "", url=url, content=body, read=lambda b: b["uploadId"])


def upload_status(upload_id: str) -> Call:
    return Call("GET", f"/v1/customers/uploads/{upload_id}", "bearer")


def send_order(order: dict[str, Any]) -> Call:
    return Call("POST", "/v1/orders", "bearer", json=order)


def send_orders(orders: list[dict[str, Any]]) -> Call:
    return Call(
        "POST", "/v1/orders/batch", "bearer", json={"orders": orders}, read=lambda b: b["results"]
    )


def get_order(order_id: str) -> Call:
    return Call("GET", "/v1/orders", "bearer", params={"orderId": order_id})


def sandbox_pairing_code() -> Call:
    return Call("POST", "/v1/sandbox/pairing-codes", "client")


def sandbox_webhook(event_type: str) -> Call:
    return Call(
        "POST",
        "/v1/sandbox/webhooks",
        "client",
        params={"type": event_type},
        read=lambda b: b["eventId"],
    )


def consent_url(connect_url: str, client_id: str, integration_token: str) -> str:
    """Where the merchant approves: open it in a browser window or an IFrame."""
    query = urlencode({"client_id": client_id, "integration_token": integration_token})
    return f"{connect_url.rstrip('/')}/?{query}"
