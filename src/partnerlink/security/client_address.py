"""The client's address, believing X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

from starlette.requests import Request


def client_address(request: Request, trusted_proxies: frozenset[str]) -> str:
    peer = request.client.host if request.client else "unknown"
    if peer not in trusted_proxies:
        return peer
    forwarded = request.headers.get("x-forwarded-for", "")
    # Walk from the right: the first hop not run by us is the client.
    for hop in reversed([h.strip() for h in forwarded.split(",") if h.strip()]):
        if hop not in trusted_proxies:
            return hop
    return peer
