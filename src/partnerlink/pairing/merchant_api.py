"""Merchant API: reserve a pairing code for one of the merchant's stores."""

from __future__ import annotations

from fastapi import APIRouter

from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.pairing.schemas import ReservationRequest, ReservationResponse
from partnerlink.pairing.service import NoCodeFree, reserve_pairing_code
from partnerlink.problems import problem_responses

router = APIRouter(tags=["Pairing codes"])


@router.post(
    "/stores/{storeId}/pairing-codes",
    response_model=ReservationResponse,
    summary="Reserve a pairing code for a store and a POS",
    responses=problem_responses(NoCodeFree),
)
def reserve_code(
    storeId: str,
    body: ReservationRequest,
    merchant: CurrentMerchant,
    session: SessionDep,
    settings: SettingsDep,
) -> ReservationResponse:
    reserved = reserve_pairing_code(
        session,
        settings=settings,
        merchant_id=merchant.id,
        store_id=storeId,
        pos_type=body.posType,
    )
    return ReservationResponse(
        code=reserved.code, expiresAt=reserved.expires_at, posType=reserved.pos_type
    )
