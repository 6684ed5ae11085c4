"""`GET /v1/webhooks/deliveries` and `POST /v1/webhooks/deliveries/{eventId}/replay`:
partners see and replay their own webhook deliveries (CONTRACT.md §13)."""

from __future__ import annotations

from fastapi import APIRouter

from partnerlink.deps import PageDep, SessionDep
from partnerlink.partners.credentials import (
    CREDENTIALS_REFUSED,
    ClientId,
    ClientSecret,
    client_partner,
)
from partnerlink.problems import field_problem, problem_responses
from partnerlink.webhooks.queries import deliveries_page
from partnerlink.webhooks.schedule import UnknownEvent
from partnerlink.webhooks.schemas import DeliveryList, Replayed, delivery_list
from partnerlink.webhooks.service import replay_delivery

router = APIRouter(prefix="/webhooks", tags=["Partner platform"])


@router.get(
    "/deliveries",
    summary="List your webhook deliveries",
    description=(
        "Every event sent (or being sent) to your webhook URL, oldest first, with its "
        "delivery status, attempts, your receiver's last HTTP status and, while pending, "
        "the next attempt. Pages of `limit` (default 100, at most 1,000): pass `nextCursor` "
        "as `cursor` for the next page, until it is null. An event written meanwhile comes "
        "on a later page; none repeats."
    ),
    response_model=DeliveryList,
    responses=problem_responses(
        *CREDENTIALS_REFUSED, field_problem("cursor", "not a cursor of this list")
    ),
)
def list_deliveries(
    session: SessionDep, client_id: ClientId, client_secret: ClientSecret, page: PageDep
) -> DeliveryList:
    partner = client_partner(session, client_id, client_secret)
    return delivery_list(
        deliveries_page(session, partner_id=partner.id, limit=page.limit, cursor=page.cursor)
    )


@router.post(
    "/deliveries/{eventId}/replay",
    status_code=202,
    summary="Send one of your webhook events again",
    description=(
        "Makes the event due now, whatever its status: the worker sends it to your "
        "webhook URL as it is now, signed anew, after any earlier pending event of the "
        "same connection. An event of another partner answers 404 like an unknown one."
    ),
    response_model=Replayed,
    responses=problem_responses(*CREDENTIALS_REFUSED, UnknownEvent),
)
def replay(
    session: SessionDep, eventId: str, client_id: ClientId, client_secret: ClientSecret
) -> Replayed:
    partner = client_partner(session, client_id, client_secret)
    event = replay_delivery(session, partner_id=partner.id, event_id=eventId)
    return Replayed(eventId=event.event_id)
