"""Endpoint 5: a terminal redeems a pairing code for a durable store access token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from partnerlink.deps import SessionDep
from partnerlink.pairing.guard import AdmittedClient
from partnerlink.pairing.schemas import PAIRED_EXAMPLE, PairRequest, PairResponse
from partnerlink.pairing.service import CodeExpired, UnknownCode, redeem_pairing_code
from partnerlink.problems import RateLimited, field_problem, problem_responses

router = APIRouter(tags=["Pairing-code flow"])


@router.post(
    "/auth/integration/pair",
    summary="Redeem a pairing code",
    description=(
        "Pairing-code flow. The merchant reserves a 6-digit code for a store in the "
        "merchant app; the terminal sends it here, once, and receives a durable access "
        "token for that store (no fixed expiry; valid while the connection is active). "
        "No authorization header. A new pairing of the same store and partner revokes "
        "the previous token.\n\n"
        "Errors: 400 malformed body (missing or non-numeric `code`); 404 `unknown_code` "
        "(unknown, already redeemed or replaced); 410 `code_expired` (the 72-hour "
        "reservation ran out); 429 `rate_limited` with `Retry-After` once too many "
        "failed redemptions came from the caller's address or from everyone."
    ),
    response_model=PairResponse,
    responses={
        200: {
            "description": "The code is consumed; the store's access token.",
            "content": {"application/json": {"example": PAIRED_EXAMPLE}},
        },
        **problem_responses(
            field_problem("code", "must be a JSON number"),
            UnknownCode,
            CodeExpired,
            RateLimited,
        ),
    },
)
def redeem_code(
    body: Annotated[
        PairRequest,
        Body(
            openapi_examples={
                "code": {"summary": "A reserved code", "value": {"code": 483920}},
            }
        ),
    ],
    client: AdmittedClient,
    session: SessionDep,
) -> PairResponse:
    try:
        paired = redeem_pairing_code(session, code=body.code)
    except (UnknownCode, CodeExpired):
        client.record_failure()
        raise
    return PairResponse(
        access_token=paired.access_token, storeId=paired.store_id, posType=paired.pos_type
    )
