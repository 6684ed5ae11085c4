"""The `Idempotency-Key` header of a request, and answering such a request once."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Header, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from partnerlink.idempotency.service import (
    MAX_KEY_LENGTH,
    KeyedRequest,
    StoredAnswer,
    claim,
    record,
    request_digest,
)
from partnerlink.problems import ValidationFailed

REPLAYED_HEADER = "Idempotent-Replayed"
# Visible ASCII and space: a UUID or any other token a client mints fits.
_KEY = re.compile(r"[\x20-\x7e]+")


async def keyed_request(
    request: Request,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description=(
                "1 to 255 characters of your choice (a UUID): the same key with the same body "
                "within 24 h answers the first answer again, with `Idempotent-Replayed: true`, "
                "and applies nothing; with another body, 409 `idempotency_key_reused`."
            ),
        ),
    ] = None,
) -> KeyedRequest | None:
    """The request's key and digest; None without the header. 400 `invalid_field` for a key
    that is empty, longer than 255 characters or not visible ASCII."""
    if idempotency_key is None:
        return None
    if not 1 <= len(idempotency_key) <= MAX_KEY_LENGTH or not _KEY.fullmatch(idempotency_key):
        message = f"1 to {MAX_KEY_LENGTH} visible ASCII characters"
        raise ValidationFailed(
            f"Idempotency-Key: {message}",
            errors=[{"field": "Idempotency-Key", "message": message}],
        )
    body = await request.body()  # Starlette keeps it: the route's body reads the same bytes
    return KeyedRequest(idempotency_key, request_digest(request.method, request.url.path, body))


KeyedRequestDep = Annotated[KeyedRequest | None, Depends(keyed_request)]


def answered_once(
    session: Session,
    keyed: KeyedRequest | None,
    *,
    scope: str,
    apply: Callable[[], dict[str, Any]],
) -> Response:
    """`apply()`'s answer (200, JSON), or, for a key already answered, that first answer
    again without applying anything. The record is written in `session`'s transaction,
    the request's one commit."""
    if keyed is None:
        return JSONResponse(apply())
    stored = claim(session, scope=scope, request=keyed)
    if stored is not None:
        return replayed(stored)
    answer = JSONResponse(apply())
    body = bytes(answer.body).decode()
    record(session, scope=scope, request=keyed, answer=StoredAnswer(answer.status_code, body))
    return answer


def replayed(stored: StoredAnswer) -> Response:
    """The first answer again, marked as such."""
    return Response(
        stored.body,
        status_code=stored.status,
        media_type="application/json",
        headers={REPLAYED_HEADER: "true"},
    )
