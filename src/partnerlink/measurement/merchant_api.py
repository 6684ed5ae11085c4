"""Merchant JSON API of measurement (CONTRACT.md §7 and §16): campaigns and their windows,
touches, results, lift, and the lift planner.

Every route is the signed-in merchant's own profile only; another's answers 404.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from partnerlink.deps import PageDep, ReadSessionDep, SessionDep, SettingsDep
from partnerlink.idempotency.deps import KeyedRequestDep, answered_once
from partnerlink.measurement import planner, service
from partnerlink.measurement import results as results_service
from partnerlink.measurement.deps import ResultsPeriod
from partnerlink.measurement.schemas import (
    CampaignIn,
    CampaignWindowsIn,
    TouchesIn,
    campaign_json,
    results_csv_reply,
    touch_batch_json,
)
from partnerlink.merchant.deps import OwnedProfile
from partnerlink.problems import BadRequest

router = APIRouter(tags=["Measurement"])


def key_scope(merchant_id: str, profile_id: str) -> str:
    """Whose idempotency keys: the merchant's, in this profile (CONTRACT.md §13)."""
    return f"profile:{merchant_id}:{profile_id}"


@router.post("/profiles/{profileId}/campaigns")
def post_campaign(
    profile: OwnedProfile,
    body: CampaignIn,
    session: SessionDep,
    settings: SettingsDep,
    keyed: KeyedRequestDep,
) -> Response:
    """`clickWindowDays` (1-90) defaults to PARTNERLINK_ATTRIBUTION_WINDOW_DAYS,
    `viewWindowDays` (0-30) to 1."""

    def create() -> dict[str, Any]:
        fields = body.campaign_fields(settings.attribution_window_days)
        campaign = service.create_campaign(session, profile_id=profile.id, **fields)
        return {"campaign": campaign_json(campaign)}

    scope = key_scope(profile.merchant_id, profile.id)
    return answered_once(session, keyed, scope=scope, apply=create)


@router.get("/profiles/{profileId}/campaigns")
def get_campaigns(profile: OwnedProfile, session: SessionDep, page: PageDep) -> dict[str, Any]:
    """Oldest first, in pages of `limit`; `nextCursor` (null on the last page) is the next
    page's `cursor`."""
    campaigns = service.campaign_page(
        session, profile_id=profile.id, limit=page.limit, cursor=page.cursor
    )
    return {
        "campaigns": [campaign_json(c) for c in campaigns.items],
        "nextCursor": campaigns.next_cursor,
    }


@router.post("/profiles/{profileId}/touches")
def post_touches(
    profile: OwnedProfile,
    body: TouchesIn,
    session: SessionDep,
    settings: SettingsDep,
    keyed: KeyedRequestDep,
) -> Response:
    """At most 10,000 touches; a bad touch is rejected alone, with its index. A touch equal
    to a stored one (campaign, identifiers, touchedAt) is counted in `duplicates`, not
    stored again."""
    return answered_once(
        session,
        keyed,
        scope=key_scope(profile.merchant_id, profile.id),
        apply=lambda: touch_batch_json(
            service.import_touch_batch(
                session,
                profile_id=profile.id,
                records=body.touches,
                default_click_days=settings.attribution_window_days,
            )
        ),
    )


@router.patch("/profiles/{profileId}/campaigns/{campaignId}")
def patch_campaign(
    profile: OwnedProfile, campaignId: str, body: CampaignWindowsIn, session: SessionDep
) -> dict[str, Any]:
    """New attribution windows: the orders they affect are classified again in the same
    transaction; `reclassified` counts those that changed."""
    if body.clickWindowDays is None and body.viewWindowDays is None:
        raise BadRequest(
            "clickWindowDays or viewWindowDays is required",
            code="missing_field",
            errors=[
                {"field": "clickWindowDays", "message": "required"},
                {"field": "viewWindowDays", "message": "required"},
            ],
        )
    campaign = results_service.campaign_of(session, profile_id=profile.id, campaign_id=campaignId)
    reclassified = service.change_windows(
        session, campaign, click_days=body.clickWindowDays, view_days=body.viewWindowDays
    )
    return {"campaign": campaign_json(campaign), "reclassified": reclassified}


@router.get("/profiles/{profileId}/lift-plan")
def get_lift_plan(
    profile: OwnedProfile,
    reads: ReadSessionDep,
    holdoutPercent: Annotated[
        int, Query(ge=planner.HOLDOUT_PERCENT[0], le=planner.HOLDOUT_PERCENT[1])
    ] = 10,
    days: Annotated[int, Query(ge=planner.TEST_DAYS[0], le=planner.TEST_DAYS[1])] = 28,
) -> dict[str, Any]:
    """What a test holding out `holdoutPercent` of the customers for `days` days can tell,
    from the profile's history (400 `not_enough_history` below 100 customers or 28 days of
    orders)."""
    return planner.plan(
        planner.history(reads, profile.id), holdout_percent=holdoutPercent, days=days
    )


@router.get("/profiles/{profileId}/results", response_model=None)
def get_results(
    profile: OwnedProfile,
    session: SessionDep,
    reads: ReadSessionDep,
    dates: ResultsPeriod,
    format: Literal["json", "csv"] = "json",
) -> dict[str, Any] | Response:
    start, end = dates
    if format == "csv":
        text = results_service.results_csv(reads, profile_id=profile.id, start=start, end=end)
        return results_csv_reply(text, start, end)
    return results_service.results(reads, profile_id=profile.id, start=start, end=end)


@router.get("/profiles/{profileId}/campaigns/{campaignId}/lift")
def get_lift(
    profile: OwnedProfile, campaignId: str, session: SessionDep, reads: ReadSessionDep
) -> dict[str, Any]:
    campaign = results_service.campaign_of(session, profile_id=profile.id, campaign_id=campaignId)
    return results_service.lift(reads, campaign)
