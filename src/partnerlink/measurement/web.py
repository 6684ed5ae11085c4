"""The console's Results page of a profile (`/merchant/profiles/{id}/results`), its CSV,
and the form that adds a campaign, with the lift planner's sentence beside it.

Drawn on the server: a weekly SVG chart of orders by class and the campaign
table with each campaign's lift; no script. The period and plan forms are GETs
(nothing to guard); adding a campaign is a POST with the console's CSRF token,
through the same service as the merchant API's POST .../campaigns.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.deps import SettingsDep
from partnerlink.measurement import planner
from partnerlink.measurement import results as results_service
from partnerlink.measurement.chart import weekly_chart
from partnerlink.measurement.deps import ResultsPeriod
from partnerlink.measurement.schemas import CampaignIn, results_csv_reply
from partnerlink.measurement.service import CampaignExists, create_campaign, list_campaigns
from partnerlink.merchant.models import Profile
from partnerlink.merchant.pages import (
    ConsoleForm,
    ConsoleProfile,
    ConsoleRoute,
    ConsoleUser,
    SignedIn,
    console_page,
)
from partnerlink.problems import BadRequest
from partnerlink.web.routing import PageSessionDep

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)

PAGE = "measurement/results.html"
# Chosen by key after a redirect, so no text of the URL reaches the page.
DONE = {
    "campaign-added": "Campaign added. Orders it brings show here as its ad touches arrive.",
}
# What a store owner is told for each field of the campaign form, whatever the rule broken.
CAMPAIGN_MESSAGES = {
    "name": "Enter the campaign's name (up to 200 characters).",
    "campaign_id": "Use up to 64 letters, digits, dashes (-), underscores (_) or dots (.).",
    "starts_on": "Enter the day the campaign starts.",
    "ends_on": "The last day must be on or after the first.",
    "holdout_percent": "Enter a whole number from 0 to 50.",
    "click_window_days": "Enter a whole number of days from 1 to 90.",
    "view_window_days": "Enter a whole number of days from 0 to 30.",
}
_FORM_FIELD = {
    "name": "name",
    "campaignId": "campaign_id",
    "startsAt": "starts_on",
    "endsAt": "ends_on",
    "holdoutPercent": "holdout_percent",
    "clickWindowDays": "click_window_days",
    "viewWindowDays": "view_window_days",
}


@dataclass(frozen=True)
class CampaignForm:
    """A new campaign as the merchant typed it, echoed back when refused."""

    name: str = ""
    campaign_id: str = ""
    starts_on: str = ""
    ends_on: str = ""
    holdout_percent: str = "0"
    click_window_days: str = ""  # blank: the setting's default
    view_window_days: str = "1"


def campaign_form(
    name: str = Form(""),
    campaign_id: str = Form(""),
    starts_on: str = Form(""),
    ends_on: str = Form(""),
    holdout_percent: str = Form("0"),
    click_window_days: str = Form(""),
    view_window_days: str = Form("1"),
) -> CampaignForm:
    return CampaignForm(
        name, campaign_id, starts_on, ends_on, holdout_percent, click_window_days, view_window_days
    )


@dataclass
class ResultsView:
    """What the page shows besides the results: the forms as typed and their problems."""

    period: dict[str, str]
    period_problem: BadRequest | None = None
    campaign: CampaignForm | None = None
    campaign_errors: dict[str, str] | None = None
    plan: dict[str, str] | None = None  # the planner's form as typed


def _whole(typed: str, default: int, low: int, high: int) -> int | None:
    """A whole number typed in a form within [low, high] (blank: `default`); None otherwise."""
    typed = typed.strip() or str(default)
    return int(typed) if re.fullmatch(r"[0-9]{1,3}", typed) and low <= int(typed) <= high else None


def plan_sentence(session: Session, profile_id: str, holdout: str, days: str) -> str:
    """The lift planner in one sentence, as the merchant API's GET .../lift-plan answers."""
    percent = _whole(holdout, 10, *planner.HOLDOUT_PERCENT)
    length = _whole(days, 28, *planner.TEST_DAYS)
    if percent is None or length is None:
        return "Enter a holdout from 1 to 50% and a test of 7 to 90 days to see what it can tell."
    try:
        found = planner.history(session, profile_id)
    except planner.NotEnoughHistory:
        return (
            f"Once you have {planner.MIN_CUSTOMERS} customers and {planner.MIN_HISTORY_DAYS}"
            " days of orders, PartnerLink works out here how large a lift a test could show."
        )
    lift = planner.plan(found, holdout_percent=percent, days=length)["minimumDetectableLift"]
    if lift["relative"] is None:
        return (
            f"With a {percent}% holdout for {length} days, no lift could be told from chance:"
            " hold more customers out, or test for longer."
        )
    shown = math.ceil(round(lift["relative"] * 100, 6))
    return f"With a {percent}% holdout for {length} days, you can tell a lift of {shown}% or more."


@router.get("/profiles/{profile_id}/results")
def results_page(
    request: Request,
    session: PageSessionDep,
    user: ConsoleUser,
    profile: ConsoleProfile,
    settings: SettingsDep,
    start: Annotated[str, Query(alias="from")] = "",
    end: Annotated[str, Query(alias="to")] = "",
    plan_holdout: str = "10",
    plan_days: str = "28",
) -> HTMLResponse:
    view = ResultsView(
        {"from": start, "to": end}, plan={"holdout": plan_holdout, "days": plan_days}
    )
    try:
        dates = typed_period(start, end)
    except BadRequest as refused:
        # The form keeps what was typed, and the API's own words say what to change.
        view.period_problem = refused
        return _render(request, session, user, profile, settings.attribution_window_days, view)
    done = DONE.get(request.query_params.get("done", ""))
    return _render(
        request, session, user, profile, settings.attribution_window_days, view, dates, done
    )


def typed_period(start: str, end: str) -> tuple[date, date]:
    """`from` and `to` as typed in the form; refused in the merchant API's words."""
    days: list[date | None] = []
    for name, typed in (("from", start), ("to", end)):
        try:
            days.append(date.fromisoformat(typed.strip()) if typed.strip() else None)
        except ValueError:
            message = (
                f"must be a date from {results_service.FIRST_DAY} to {results_service.LAST_DAY}"
            )
            error = {"field": name, "message": message}
            raise BadRequest(f"{name} {message}", code="invalid_field", errors=[error]) from None
    return results_service.period(days[0], days[1])


def _render(
    request: Request,
    session: Session,
    user: SignedIn,
    profile: Profile,
    window_days: int,
    view: ResultsView,
    dates: tuple[date, date] | None = None,
    notice: str | None = None,
) -> HTMLResponse:
    context: dict[str, Any] = {
        "profile": profile,
        "results": None,
        "window_days": window_days,
        "period": view.period,
        "period_problem": view.period_problem,
        "period_errors": {e["field"]: e["message"] for e in view.period_problem.errors or []}
        if view.period_problem
        else {},
        "campaign": asdict(
            view.campaign
            or CampaignForm(
                starts_on=utcnow().date().isoformat(), click_window_days=str(window_days)
            )
        ),
        "campaign_errors": view.campaign_errors or {},
        "notice": notice,
        "plan": view.plan or {"holdout": "10", "days": "28"},
    }
    context["plan_sentence"] = plan_sentence(
        session, profile.id, context["plan"]["holdout"], context["plan"]["days"]
    )
    if dates is not None:
        start, end = dates
        found = results_service.results(session, profile_id=profile.id, start=start, end=end)
        context.update(
            results=found,
            chart=weekly_chart(found["weeks"]),
            lifts=_lifts(session, profile.id),
            csv_url=f"/merchant/profiles/{profile.id}/results.csv?from={start}&to={end}",
        )
    refused = view.period_problem is not None or bool(view.campaign_errors)
    return console_page(request, user, PAGE, context, status_code=400 if refused else 200)


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


@router.post("/profiles/{profile_id}/results/campaigns")
def add_campaign(
    request: Request,
    session: PageSessionDep,
    user: ConsoleForm,
    profile: ConsoleProfile,
    settings: SettingsDep,
    typed: Annotated[CampaignForm, Depends(campaign_form)],
) -> Response:
    """A campaign from the console, created as the merchant API's POST .../campaigns does."""
    try:
        fields = campaign_body(typed).campaign_fields(settings.attribution_window_days)
        create_campaign(session, profile_id=profile.id, **fields)
    except CampaignFormProblems as problems:
        errors = problems.errors
    except CampaignExists:
        errors = {"campaign_id": "You already have a campaign with this ID: choose another."}
    else:
        path = f"/merchant/profiles/{profile.id}/results?done=campaign-added"
        return RedirectResponse(path, status_code=303)
    session.rollback()
    view = ResultsView({"from": "", "to": ""}, campaign=typed, campaign_errors=errors)
    dates = results_service.period(None, None)
    return _render(request, session, user, profile, settings.attribution_window_days, view, dates)


class CampaignFormProblems(Exception):
    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(", ".join(errors))
        self.errors = errors


def campaign_body(typed: CampaignForm) -> CampaignIn:
    """The merchant API's campaign request from the form, every problem at once: days become
    midnights (UTC), the last day counts whole, and an ID left blank is made from the name."""
    errors: dict[str, str] = {}
    body: dict[str, Any] = {
        "name": typed.name,
        "campaignId": typed.campaign_id.strip() or _id_from(typed.name),
    }
    if not typed.name.strip():
        # Said once, on the name; stand-ins let the other fields' rules speak.
        errors["name"] = CAMPAIGN_MESSAGES["name"]
        body.update(name="-", campaignId=typed.campaign_id.strip() or "-")
    for field, key, days_on in (("starts_on", "startsAt", 0), ("ends_on", "endsAt", 1)):
        day = getattr(typed, field).strip()
        try:
            if day:
                body[key] = f"{date.fromisoformat(day) + timedelta(days=days_on)}T00:00:00Z"
        except (ValueError, OverflowError):
            errors[field] = CAMPAIGN_MESSAGES[field]
    for field, key, blank in (
        ("holdout_percent", "holdoutPercent", "0"),
        ("click_window_days", "clickWindowDays", None),
        ("view_window_days", "viewWindowDays", "1"),
    ):
        number = getattr(typed, field).strip() or blank
        if number is not None:
            body[key] = int(number) if re.fullmatch(r"[0-9]{1,3}", number) else -1
    try:
        checked = CampaignIn.model_validate(body)
    except ValidationError as refused:
        for error in refused.errors():
            # The one rule over two fields (no field in `loc`) is the end before the start.
            field = _FORM_FIELD[str(error["loc"][0])] if error["loc"] else "ends_on"
            errors.setdefault(field, CAMPAIGN_MESSAGES[field])
        raise CampaignFormProblems(errors) from None
    if errors:
        raise CampaignFormProblems(errors)
    return checked


def _id_from(name: str) -> str:
    """`Spring sale` → `spring-sale`: an ID the campaign rule accepts, when one can be made."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", plain).strip("-")[:64]
