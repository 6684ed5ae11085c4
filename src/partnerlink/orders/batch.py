"""POST /v1/orders/batch (CONTRACT.md §9): each order validated and stored as a single POST.

Every element is validated by OrderIn, the model of POST /v1/orders, and the valid
ones go through the app's one order pipeline (orders/intake/pipeline.py, accept_orders):
the same customer matching, the same e-receipt rule, group-committed like
concurrent single posts. An invalid element gets its own 400 result and is not
stored; the others are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session

from partnerlink.db.raw import Sql
from partnerlink.idempotency.deps import replayed
from partnerlink.idempotency.service import KeyedRequest, StoredAnswer, claim, record
from partnerlink.orders.intake.wiring import OrderPipeline
from partnerlink.orders.schemas import OrderIn, batch_json, batch_result
from partnerlink.orders.service import OrderPost, accept_orders
from partnerlink.problems import DomainError, InvalidToken, Unavailable
from partnerlink.settings import Settings
from partnerlink.tokens.service import ConnectedStore, authenticate_access_token
from partnerlink.validation import validation_errors


def _order_id(element: object) -> str | None:
    found = element.get("orderId") if isinstance(element, dict) else None
    return found if isinstance(found, str) else None


def _validated(orders: list[Any], token: str) -> tuple[list[Any], list[tuple[int, OrderPost]]]:
    """The results of the invalid elements (None where an order is valid), and the valid
    orders with their positions."""
    results: list[dict[str, Any] | None] = []
    valid: list[tuple[int, OrderPost]] = []
    for element in orders:
        try:
            order = OrderIn.model_validate(element)
        except ValidationError as error:
            results.append(batch_result(_order_id(element), validation_errors(error.errors())))
            continue
        valid.append((len(results), OrderPost(token, order)))
        results.append(None)
    return results, valid


def _answers(
    results: list[dict[str, Any] | None],
    valid: list[tuple[int, OrderPost]],
    outcomes: Sequence[Any],
) -> list[dict[str, Any]]:
    """Fills in the valid orders' results from their outcomes (a stored order, or its error)."""
    for (index, post), outcome in zip(valid, outcomes, strict=True):
        order_id = post.order.orderId
        if isinstance(outcome, InvalidToken | Unavailable):
            raise outcome
        if isinstance(outcome, DomainError):
            errors = outcome.errors or [{"field": "body", "message": outcome.detail}]
            results[index] = batch_result(order_id, errors)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            results[index] = batch_result(order_id, None)
    return [result for result in results if result is not None]


async def apply_batch(
    pipeline: OrderPipeline, *, token: str, orders: list[Any]
) -> list[dict[str, Any]]:
    """One result per element, in the request's order.

    A refused token (403) or a busy database (503, retryable: re-sending an orderId
    updates it) fails the whole request, as it would fail each single post.
    """
    results, valid = _validated(orders, token)
    futures = [asyncio.ensure_future(pipeline.run(post)) for _, post in valid]
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    return _answers(results, valid, outcomes)


def apply_batch_once(
    session: Session, settings: Settings, *, token: str, orders: list[Any], keyed: KeyedRequest
) -> Response:
    """A batch sent with an `Idempotency-Key` (CONTRACT.md §13), in ONE transaction: the
    session's, which also holds the key's record, so the orders and the record commit
    together. Not through the shared pipeline, whose group commits mix other requests'
    orders and may split a batch's; an idempotent batch trades that throughput for its
    one commit point. Keys are the connection's (the partner's store)."""
    caller = authenticate_access_token(session, token)
    stored = claim(session, scope=_key_scope(caller), request=keyed)
    if stored is not None:
        return replayed(stored)
    results, valid = _validated(orders, token)
    outcomes = _accept_in_session(session, settings, [post for _, post in valid])
    answer = JSONResponse(batch_json(_answers(results, valid, outcomes)))
    body = bytes(answer.body).decode()
    record(
        session,
        scope=_key_scope(caller),
        request=keyed,
        answer=StoredAnswer(answer.status_code, body),
    )
    return answer


def _key_scope(caller: ConnectedStore) -> str:
    return f"connection:{caller.connection_id}"


def _accept_in_session(session: Session, settings: Settings, posts: list[OrderPost]) -> list[Any]:
    """The orders' outcomes, stored by the pipeline's handler in the session's transaction:
    all together, or, when that raises, each alone in a savepoint of its own (as the
    pipeline runs each alone), so one failing order fails only itself. A lock conflict
    (PostgreSQL) refuses the whole batch as retryable: nothing is stored."""
    sql = Sql.of_session(session)
    try:
        with session.begin_nested():
            return [value for _, value in accept_orders(sql, posts, settings=settings)]
    except sql.errors.OperationalError as error:
        raise Unavailable() from error
    except Exception:
        return [_alone(session, sql, settings, post) for post in posts]


def _alone(session: Session, sql: Sql, settings: Settings, post: OrderPost) -> Any:
    """One order in a savepoint of its own: its stored order, or its error."""
    try:
        with session.begin_nested():
            return accept_orders(sql, [post], settings=settings)[0][1]
    except sql.errors.OperationalError as error:
        raise Unavailable() from error
    except Exception as error:
        return error
