"""The console's Results page of a profile (`/merchant/profiles/{id}/results`) and its CSV.

Drawn on the server: a weekly SVG chart of orders by class and the campaign
table with each campaign's lift; no script. Read-only pages (GET): the
console's sign-in guard applies, and there is no form to guard with CSRF.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from partnerlink.measurement import results as results_service
from partnerlink.measurement.chart import weekly_chart
from partnerlink.measurement.deps import ResultsPeriod
from partnerlink.measurement.schemas import results_csv_reply
from partnerlink.measurement.service import list_campaigns
from partnerlink.merchant.pages import ConsoleProfile, ConsoleRoute, ConsoleUser, console_page
from partnerlink.web.routing import PageSessionDep

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)


@router.get("/profiles/{profile_id}/results")
def results_page(
    request: Request,
    session: PageSessionDep,
    user: ConsoleUser,
    profile: ConsoleProfile,
    dates: ResultsPeriod,
) -> HTMLResponse:
    start, end = dates
    found = results_service.results(session, profile_id=profile.id, start=start, end=end)
    context = {
        "profile": profile,
        "results": found,
        "chart": weekly_chart(found["weeks"]),
        "lifts": _lifts(session, profile.id),
        "csv_url": f"/merchant/profiles/{profile.id}/results.csv?from={start}&to={end}",
    }
    return console_page(request, user, "measurement/results.html", context)


def _lifts(session: Session, profile_id: str) -> dict[str, dict[str, Any]]:
    """The lift of each campaign that holds customers out."""
    return {
        campaign.campaign_id: results_service.lift(session, campaign)
        for campaign in list_campaigns(session, profile_id=profile_id)
        if campaign.holdout_percent > 0
    }


@router.get("/profiles/{profile_id}/results.csv")
def results_csv(session: PageSessionDep, profile: ConsoleProfile, dates: ResultsPeriod) -> Response:
    start, end = dates
    text = results_service.results_csv(session, profile_id=profile.id, start=start, end=end)
    return results_csv_reply(text, start, end)
