"""Endpoints 9 and 10 of SPEC.md: send an order; read one back (behind the receipt gates)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from partnerlink.db.engine import committed_session
from partnerlink.deps import SessionDep
from partnerlink.idempotency.deps import KeyedRequestDep
from partnerlink.idempotency.service import IdempotencyKeyReused, KeyedRequest
from partnerlink.orders.batch import apply_batch, apply_batch_once
from partnerlink.orders.deps import SETTLED_ORDERS
from partnerlink.orders.intake.barrier import settle_journal
from partnerlink.orders.intake.wiring import order_pipeline
from partnerlink.orders.schemas import (
    ACCEPTED,
    OrderAccepted,
    OrderBatchIn,
    OrderBatchOut,
    OrderIn,
    batch_json,
    order_json,
)
from partnerlink.orders.service import (
    OrderPost,
    ReceiptsDisabled,
    read_order,
)
from partnerlink.problems import (
    InvalidToken,
    NotFound,
    PayloadTooLarge,
    Unavailable,
    field_problem,
    problem_responses,
)
from partnerlink.security.secrets import ACCESS_TOKEN_PREFIX
from partnerlink.tokens.deps import (
    BEARER_DOCS,
    CurrentStore,
    LegacyAccessToken,
    presented_access_token,
)
from partnerlink.tokens.service import authenticate_access_token

router = APIRouter(tags=["Orders"])


async def presented_token(request: Request) -> str:
    """The caller's access token, refused (403) before the body is validated when absent or
    malformed.

    Checked against the database in the same unit of work that stores the order. The
    hottest route documents its bearer scheme and the legacy `?access_token=` through
    `BEARER_DOCS`, not through dependencies of their own: each dependency FastAPI solves
    costs CPU on every request (measured: bench/README.md, "Figures behind code comments").
    """
    token = presented_access_token(request)
    if not token.startswith(ACCESS_TOKEN_PREFIX):
        raise InvalidToken()
    return token


@router.post(
    "/orders",
    summary="9. Send an order",
    responses={
        200: {"model": OrderAccepted, "description": "Stored (or acknowledged when stale)."},
        **problem_responses(
            field_problem("orderCurrency", "required"),
            field_problem("orderPrice", "must be a string"),
            InvalidToken,
            Unavailable,
        ),
    },
    openapi_extra=BEARER_DOCS,
)
async def post_order(
    order: OrderIn,
    request: Request,
    token: Annotated[str, Depends(presented_token)],
) -> Response:
    """Creates or updates your order `orderId` of the connected store.

    Orders are keyed by store, partner and `orderId`: another partner connected to the
    same store may use the same id for an order of its own, which this never touches.

    Re-sending the same `orderId` updates the order, so retries are safe; a
    re-send whose `updatedAt` is older than the stored one's is acknowledged and
    not applied. Money is a string of minor units (`"2400"` is 24.00 USD); a
    number where a string is expected answers 400. When the store has e-receipts
    on, the order is `CLOSED` (any letter case) and carries a customer phone that
    parses, the customer gets one SMS with a link to the receipt, once per order.
    When the service cannot take the order now it answers 500 `unavailable` with
    `Retry-After`: nothing was stored; retry with exponential backoff.
    """
    # Well-formed orders sent with a bearer token never reach this function: the orders'
    # fast lane (fast_lane.py) takes them to the same pipeline, without FastAPI's
    # per-request work. Here come the rest: refusals, the legacy ?access_token=, and what
    # only Python's json module reads. Authentication and storage happen in one
    # transaction on a database thread (see accept_orders); orders queue in the event loop
    # and share thread hops (see pipeline.py).
    await order_pipeline(request.app).run(OrderPost(token=token, order=order))
    return Response(ACCEPTED, media_type="application/json")


@router.post(
    "/orders/batch",
    summary="Send up to 1,000 orders at once",
    responses={
        200: {
            "description": "One result per order, in the request's order.",
            "model": OrderBatchOut,
            "content": {
                "application/json": {
                    "example": {
                        "statusCode": 200,
                        "results": [
                            {"orderId": "A-1001", "status": 200},
                            {
                                "orderId": "A-1002",
                                "status": 400,
                                "errors": [{"field": "orderCurrency", "message": "required"}],
                            },
                        ],
                    }
                }
            },
        },
        **problem_responses(
            field_problem("orders", "List should have at least 1 item after validation, not 0"),
            InvalidToken,
            IdempotencyKeyReused,
            PayloadTooLarge,
            Unavailable,
        ),
    },
    openapi_extra=BEARER_DOCS,
)
async def post_order_batch(
    batch: OrderBatchIn,
    request: Request,
    token: Annotated[str, Depends(authenticated_token)],
    keyed: KeyedRequestDep,
) -> Response:
    """Each order is validated and stored exactly as `POST /v1/orders` would: same
    fields and rules, same customer matching, same e-receipt (one SMS per closed order
    with a phone when the store has e-receipts on). An invalid order gets `status` 400
    with its `errors` and is not stored; the others are. Re-sending an `orderId`
    updates it, so a whole batch may be retried.

    The body counts against `PARTNERLINK_MAX_BODY_BYTES` (default 1 MiB) like every
    request: a larger body answers 413 `payload_too_large` and stores nothing. 1,000
    orders of ~1 KB each exceed it: send smaller batches, or raise the setting.

    With an `Idempotency-Key` header, the batch is applied in one transaction together with
    the key's record: sent again with the same key and body within 24 h, it answers the
    first answer again (`Idempotent-Replayed: true`) and applies nothing.
    """
    if keyed is not None:
        return await run_in_threadpool(_apply_once, request.app, token, batch.orders, keyed)
    results = await apply_batch(order_pipeline(request.app), token=token, orders=batch.orders)
    return JSONResponse(batch_json(results))


def _apply_once(app: FastAPI, token: str, orders: list[Any], keyed: KeyedRequest) -> Response:
    """The keyed batch in the request's one unit of work (db.engine.committed_session, the
    commit helper of deps.get_session): this route takes no SessionDep, since the shared
    pipeline of unkeyed batches needs SQLite's one connection while the route waits."""
    with committed_session(app.state.sessionmaker) as session:
        # Applied in arrival order: after the orders journaled before it (the read barrier).
        settle_journal(session, app.state.settings)
        return apply_batch_once(
            session, app.state.settings, token=token, orders=orders, keyed=keyed
        )


async def authenticated_token(request: Request) -> str:
    """The caller's access token, checked against the database before the batch is read
    (403 even when no order of the batch is valid), in a short session of its own: the
    pipeline then needs the connection (SQLite has one)."""
    token = await presented_token(request)
    await run_in_threadpool(_authenticate, request.app, token)
    return token


def _authenticate(app: FastAPI, token: str) -> None:
    with app.state.sessionmaker() as session:
        authenticate_access_token(session, token)


@router.get(
    "/orders",
    summary="10. Read an order (backs the receipt page)",
    dependencies=[SETTLED_ORDERS],  # an order acknowledged before this read is found
    responses={
        200: {"description": "The order, in the field names of its request."},
        **problem_responses(
            field_problem("orderId", "required"), InvalidToken, ReceiptsDisabled, NotFound
        ),
    },
)
def get_order(
    current: CurrentStore,
    session: SessionDep,
    order_id: Annotated[str, Query(alias="orderId", max_length=200)],
    _legacy_token: LegacyAccessToken = None,
) -> dict[str, Any]:
    """Answers a closed order with a customer phone, when the store has e-receipts on.

    Only your own orders: another partner connected to the same store has its own order
    ids, and its orders are unknown here (404).

    403 `receipts_disabled` when e-receipts are off; 404 when the order is
    unknown, not `CLOSED`, or has no customer phone number.
    """
    order, store = read_order(
        session, store_id=current.store_id, partner_id=current.partner_id, order_id=order_id
    )
    return order_json(order, store)
