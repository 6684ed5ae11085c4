"""POST /v1/orders/batch (CONTRACT.md §9): each order validated and stored as a single POST.

Every element is validated by OrderIn, the model of POST /v1/orders, and the valid
ones go through the app's one order pipeline (orders/pipeline.py, accept_orders):
the same customer matching, the same e-receipt rule, group-committed like
concurrent single posts. An invalid element gets its own 400 result and is not
stored; the others are.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost
from partnerlink.orders.wiring import OrderPipeline
from partnerlink.problems import DomainError, InvalidToken, Unavailable
from partnerlink.validation import validation_errors


def _order_id(element: object) -> str | None:
    found = element.get("orderId") if isinstance(element, dict) else None
    return found if isinstance(found, str) else None


def _refused(order_id: str | None, errors: list[dict[str, str]]) -> dict[str, Any]:
    return {"orderId": order_id, "status": 400, "errors": errors}


async def apply_batch(
    pipeline: OrderPipeline, *, token: str, orders: list[Any]
) -> list[dict[str, Any]]:
    """One result per element, in the request's order.

    A refused token (403) or a busy database (503, retryable: re-sending an orderId
    updates it) fails the whole request, as it would fail each single post.
    """
    results: list[dict[str, Any] | None] = []
    pending: list[tuple[int, str, asyncio.Future[Any]]] = []
    for element in orders:
        try:
            order = OrderIn.model_validate(element)
        except ValidationError as error:
            results.append(_refused(_order_id(element), validation_errors(error.errors())))
            continue
        pending.append(
            (
                len(results),
                order.orderId,
                asyncio.ensure_future(pipeline.run(OrderPost(token, order))),
            )
        )
        results.append(None)
    outcomes = await asyncio.gather(*(future for *_, future in pending), return_exceptions=True)
    for (index, order_id, _), outcome in zip(pending, outcomes, strict=True):
        if isinstance(outcome, InvalidToken | Unavailable):
            raise outcome
        if isinstance(outcome, DomainError):
            errors = outcome.errors or [{"field": "body", "message": outcome.detail}]
            results[index] = _refused(order_id, errors)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            results[index] = {"orderId": order_id, "status": 200}
    return [result for result in results if result is not None]
