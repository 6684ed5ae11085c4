"""What the partner quota (tokens/quota.py) adds to a request, in CPU, inside one process.

    .venv/bin/python bench/quota_cost.py [--requests 200000]

Drives the quota middleware around an ASGI app that answers at once (the fast lane's
answer: status, two headers, body), with a bearer access token already resolved, as
every order after a connection's first is; against the same app without it. Reports
process CPU per request (other load on the machine does not count), interleaved A, B,
A, B; the figure to compare is a whole order's server CPU (bench/orders.py: ~430-550 us).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from partnerlink.security.secrets import digest
from partnerlink.settings import Settings
from partnerlink.tokens.quota import NamedBy, PartnerQuotaLimit

TOKEN = "plk_at_" + "x" * 43
HEADERS = ((b"content-length", b"16"), (b"content-type", b"application/json"))


async def answer(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": b'{"statusCode":200}'})


async def drive(app: Any, requests: int) -> float:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/orders",
        "query_string": b"",
        "headers": [
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"content-type", b"application/json"),
        ],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}"}

    async def send(message: dict[str, Any]) -> None:
        return None

    started = time.process_time()
    for _ in range(requests):
        await app(dict(scope), receive, send)
    return (time.process_time() - started) / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200_000)
    args = parser.parse_args()
    limited = PartnerQuotaLimit(answer, settings=Settings(secret_key="bench" * 8))
    limited.counter.count("partner", 60_000)  # warm
    # Read "now" for the whole run: never read again (a live token's TTL).
    limited.token_partners[digest(TOKEN)] = NamedBy("partner", None, time.monotonic() + 10**6)
    limited.quotas["partner"] = (10**9, time.monotonic() + 10**6)  # never over in the run
    bare: list[float] = []
    with_quota: list[float] = []
    for _ in range(3):
        bare.append(asyncio.run(drive(answer, args.requests)))
        with_quota.append(asyncio.run(drive(limited, args.requests)))
    base, added = min(bare), min(with_quota) - min(bare)
    print(f"bare app: {base:.2f} us/request; with the quota: {min(with_quota):.2f} us/request")
    print(f"the quota adds {added:.2f} us a request (runs: bare {bare}, quota {with_quota})")


if __name__ == "__main__":
    main()
