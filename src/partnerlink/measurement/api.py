"""Merchant JSON API of measurement (CONTRACT.md §7): campaigns, touches, results, lift.

Every route is the signed-in merchant's own profile only; another's answers 404.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from partnerlink.deps import PageDep, SessionDep, SettingsDep
from partnerlink.idempotency.deps import KeyedRequestDep, answered_once
from partnerlink.measurement import results as results_service
from partnerlink.measurement import service
from partnerlink.measurement.schemas import CampaignIn, TouchesIn
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.ownership import owned_profile

router = APIRouter(tags=["Measurement"])

CSV_MEDIA_TYPE = "text/csv; charset=utf-8"


def key_scope(merchant_id: str, profile_id: str) -> str:
    """Whose idempotency keys: the merchant's, in this profile (CONTRACT.md §13)."""
    return f"profile:{merchant_id}:{profile_id}"


@router.post("/profiles/{profileId}/campaigns")
def post_campaign(
    profileId: str,
    body: CampaignIn,
    merchant: CurrentMerchant,
    session: SessionDep,
    keyed: KeyedRequestDep,
) -> Response:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)

    def create() -> dict[str, Any]:
        campaign = service.create_campaign(
            session,
            profile_id=profile.id,
            campaign_id=body.campaignId,
            name=body.name,
            starts_at=body.startsAt,
            ends_at=body.endsAt,
            holdout_percent=body.holdoutPercent,
        )
        return {"campaign": service.campaign_json(campaign)}

    return answered_once(session, keyed, scope=key_scope(merchant.id, profile.id), apply=create)


@router.get("/profiles/{profileId}/campaigns")
def get_campaigns(
    profileId: str, merchant: CurrentMerchant, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    """Oldest first, in pages of `limit`; `nextCursor` (null on the last page) is the next
    page's `cursor`."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    campaigns = service.campaign_page(
        session, profile_id=profile.id, limit=page.limit, cursor=page.cursor
    )
    return {
        "campaigns": [service.campaign_json(c) for c in campaigns.items],
        "nextCursor": campaigns.next_cursor,
    }


@router.post("/profiles/{profileId}/touches")
def post_touches(
    profileId: str,
    body: TouchesIn,
    merchant: CurrentMerchant,
    session: SessionDep,
    settings: SettingsDep,
    keyed: KeyedRequestDep,
) -> Response:
    """At most 10,000 touches; a bad touch is rejected alone, with its index. A touch equal
    to a stored one (campaign, identifiers, touchedAt) is counted in `duplicates`, not
    stored again."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    return answered_once(
        session,
        keyed,
        scope=key_scope(merchant.id, profile.id),
        apply=lambda: service.import_touch_batch(
            session,
            profile_id=profile.id,
            records=body.touches,
            window_days=settings.attribution_window_days,
        ),
    )


@router.get("/profiles/{profileId}/results", response_model=None)
def get_results(
    profileId: str,
    merchant: CurrentMerchant,
    session: SessionDep,
    start: Annotated[date | None, Query(alias="from")] = None,
    end: Annotated[date | None, Query(alias="to")] = None,
    format: Literal["json", "csv"] = "json",
) -> dict[str, Any] | Response:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    start, end = results_service.period(start, end)
    if format == "csv":
        text = results_service.results_csv(session, profile_id=profile.id, start=start, end=end)
        return Response(
            text,
            media_type=CSV_MEDIA_TYPE,
            headers={"Content-Disposition": f'attachment; filename="results-{start}-{end}.csv"'},
        )
    return results_service.results(session, profile_id=profile.id, start=start, end=end)


@router.get("/profiles/{profileId}/campaigns/{campaignId}/lift")
def get_lift(
    profileId: str, campaignId: str, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    campaign = results_service.campaign_of(session, profile_id=profile.id, campaign_id=campaignId)
    return results_service.lift(session, campaign)
