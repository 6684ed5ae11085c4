"""The console's "Ad platforms" page (CONTRACT.md §11): connect a profile to Meta or
Google, see each destination's state in words, sync now, give new credentials,
disconnect.

Same conventions as the rest of the console (console/): the session cookie's merchant,
a CSRF token on every form, a redirect after every change. Credentials typed here go
straight to the sealed column and are never shown again, not even back in a refused form.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from partnerlink.audiences.service import DESCRIPTIONS
from partnerlink.destinations import runs, service, verdicts
from partnerlink.destinations.ad_connections import web as ad_pages
from partnerlink.destinations.models import ACTIVE, NEEDS_ATTENTION, Destination
from partnerlink.destinations.preview import Preview, preview
from partnerlink.destinations.schemas import (
    CONSENT_FIELDS,
    CREDENTIAL_FIELDS,
    CUSTOMER_ID_FIELDS,
    destination_json,
    destination_request,
)
from partnerlink.merchant.models import Profile
from partnerlink.merchant.ownership import owned_profile
from partnerlink.merchant.pages import (
    ConsoleForm,
    ConsoleRoute,
    ConsoleUser,
    SignedIn,
    console_page,
)
from partnerlink.problems import ValidationFailed
from partnerlink.web.routing import PageSessionDep

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)

PAGE = "destinations/ad_platforms.html"
DONE = {
    "connected": "Connected. The first sync starts within a minute.",
    "sync": "Sync asked for: it starts within seconds.",
    "credentials": "New credentials saved. The next sync uses them.",
    "disconnected": "Disconnected: syncing stopped and its credentials are deleted.",
}
NAMES = {"meta": "Meta", "google": "Google"}
# Form field → request field, and secrets (never echoed back into a refused form).
TARGET_FORM = ("audienceId", "datasetId", "customerId", "userListId", "conversionActionId")
SECRET_FORM = ("accessToken", "clientSecret", "refreshToken")


def _path(profile_id: str) -> str:
    return f"/merchant/profiles/{profile_id}/ad-platforms"


def state_in_words(destination: Destination) -> str:
    platform = NAMES.get(destination.platform, destination.platform)
    error = (destination.last_error or {}).get("message")
    if destination.status == NEEDS_ATTENTION:
        return f"Needs your attention: {error or platform + ' refused the last sync.'}"
    if error and (destination.last_error or {}).get("code") == "sync_failed":
        return str(error)  # our own failure, not the platform's: its words say it failed
    if error:
        return f"{platform} could not be reached on the last try; PartnerLink tries again. {error}"
    if destination.status == ACTIVE and destination.last_sync_at is not None:
        stamp = destination.last_sync_at.strftime("%Y-%m-%d %H:%M UTC")
        return f"Up to date: last synced {stamp}."
    return "Connected: waiting for its first sync (within a minute)."


def _rows(destinations: list[Destination]) -> list[dict[str, Any]]:
    return [
        {
            **destination_json(d),
            "name": NAMES.get(d.platform, d.platform),
            "words": state_in_words(d),
            "stale": d.alert_state == "stale",  # no sync went through lately (alerts/)
            "credentialFields": CREDENTIAL_FIELDS[d.platform],
        }
        for d in destinations
    ]


def preview_in_words(kind: str, counts: Preview) -> str:
    """The first sync's preview as the page says it (CONTRACT §15)."""
    if kind == "audience":
        if not counts.add and not counts.remove:
            return "The first sync has nobody to add yet."
        removed = f"{counts.remove:,}" if counts.remove else "none"
        person = "person" if counts.add == 1 else "people"
        return f"The first sync will add {counts.add:,} {person} and remove {removed}."
    if not counts.events:
        return "The first sync has no sales to send yet."
    return f"The first sync will send {counts.events:,} sale{'' if counts.events == 1 else 's'}."


def meta_in_words(meta: Any) -> str | None:
    """Meta's estimate of the audience's size (lastReport.meta) in words."""
    if not isinstance(meta, dict):
        return None
    lower, upper = meta.get("approximateCountLowerBound"), meta.get("approximateCountUpperBound")
    if isinstance(lower, int) and isinstance(upper, int):
        if lower == upper:
            return f"Meta estimates the audience at about {lower:,} people."
        return f"Meta estimates the audience at {lower:,}–{upper:,} people."
    if isinstance(lower, int):
        return f"Meta estimates the audience at {lower:,} people or more."
    return "Meta has not estimated the audience's size yet."


def google_in_words(google: Any) -> str | None:
    """Google's verdicts (lastReport.google) in words: verdicts.google_words."""
    if not isinstance(google, dict):
        return None
    return verdicts.google_words(google) or None


def _with_history(
    session: Session,
    signing_key: bytes,
    destinations: list[Destination],
    rows: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Each row with its last runs, the platforms' match results in words, and before
    its first sync, the preview of what that sync will send."""
    latest = runs.latest_runs(session, [d.id for d in destinations])
    for destination, row in zip(destinations, rows, strict=True):
        row["runs"] = [runs.run_words(run, destination.kind) for run in latest[destination.id]]
        report = row.get("lastReport") or {}
        row["matchWords"] = [
            said
            for said in (google_in_words(report.get("google")), meta_in_words(report.get("meta")))
            if said
        ]
        row["preview"] = None
        if destination.last_sync_at is None:
            counts = preview(session, destination, signing_key=signing_key)
            row["preview"] = preview_in_words(destination.kind, counts)
    return rows


def _context(
    session: Session, merchant_id: str, profile_id: str, signing_key: bytes
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant_id, profile_id=profile_id)
    destinations = service.of_profile(session, profile.id)
    return {
        "profile": profile,
        "destinations": _with_history(session, signing_key, destinations, _rows(destinations)),
        "segments": DESCRIPTIONS,
        "form": {},
        "errors": {},
    }


@router.get("/profiles/{profile_id}/ad-platforms")
def ad_platforms_page(
    request: Request, session: PageSessionDep, user: ConsoleUser, profile_id: str
) -> HTMLResponse:
    context = _context(session, user.merchant.id, profile_id, _signing_key(request))
    segment = request.query_params.get("segment")
    context.update(ad_pages.page_context(session, request.app.state.settings, profile_id, segment))
    done = DONE.get(request.query_params.get("done", ""))
    return console_page(request, user, PAGE, {**context, "notice": done})


def _signing_key(request: Request) -> bytes:
    key: bytes = request.app.state.settings.signing_key
    return key


def _request_body(form: dict[str, str]) -> dict[str, Any]:
    """The merchant API's Destination request from the page's form fields."""
    platform, kind = form.get("platform", ""), form.get("kind", "")
    body: dict[str, Any] = {"platform": platform, "kind": kind}
    if kind == "audience":
        body["segment"] = form.get("segment", "")
        if form.get("campaignId", "").strip():
            body["campaignId"] = form["campaignId"].strip()
    fields = CREDENTIAL_FIELDS.get(platform, ())
    body["credentials"] = {name: form.get(name, "") for name in fields}
    # A customer id is checked as typed (the API takes 123-456-7890); the other ids lose
    # the dashes a copy may bring.
    body["target"] = {
        name: form[name].strip() if name in CUSTOMER_ID_FIELDS else _digits_only(form[name])
        for name in (*TARGET_FORM, "loginCustomerId")
        if form.get(name, "").strip()
    }
    # Either consent field stated sends both, as the API gets them: one left "Not
    # stated", or a value that is neither granted nor denied, is refused, not dropped.
    if platform == "google" and (form.get("adUserData") or form.get("adPersonalization")):
        body["consent"] = {name: form.get(name, "") for name in CONSENT_FIELDS}
    return body


def _digits_only(value: str) -> str:
    return value.strip().replace("-", "")


def _refused(
    request: Request,
    session: Session,
    user: SignedIn,
    profile_id: str,
    error: ValidationFailed,
    form: dict[str, str],
) -> HTMLResponse:
    session.rollback()
    context = _context(session, user.merchant.id, profile_id, _signing_key(request))
    context.update(ad_pages.page_context(session, request.app.state.settings, profile_id, None))
    echoed = {k: v for k, v in form.items() if k not in SECRET_FORM and k != "csrf_token"}
    problems = [
        f"{problem['field']} {problem['message']}".strip()
        for problem in error.errors or [{"field": "", "message": error.detail}]
    ]
    # Every problem at once, beside the form that had them.
    context.update(form=echoed, errors={form.get("platform", ""): problems})
    return console_page(request, user, PAGE, context, status_code=400)


def connect_fields(
    platform: str = Form(""),
    kind: str = Form(""),
    segment: str = Form(""),
    campaignId: str = Form(""),
    accessToken: str = Form(""),
    clientId: str = Form(""),
    clientSecret: str = Form(""),
    refreshToken: str = Form(""),
    audienceId: str = Form(""),
    datasetId: str = Form(""),
    customerId: str = Form(""),
    userListId: str = Form(""),
    conversionActionId: str = Form(""),
    loginCustomerId: str = Form(""),
    adUserData: str = Form(""),
    adPersonalization: str = Form(""),
) -> dict[str, str]:
    return {k: v for k, v in locals().items() if v}


ConnectFields = Annotated[dict[str, str], Depends(connect_fields)]


@router.post("/profiles/{profile_id}/ad-platforms")
def connect_form(
    request: Request,
    session: PageSessionDep,
    user: ConsoleForm,
    profile_id: str,
    form: ConnectFields,
) -> Response:
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    try:
        service.create(
            session,
            profile_id=profile.id,
            request=destination_request(_request_body(form)),
            signing_key=request.app.state.settings.signing_key,
        )
    except ValidationFailed as error:
        return _refused(request, session, user, profile.id, error, form)
    return RedirectResponse(f"{_path(profile.id)}?done=connected", status_code=303)


def _owned(
    session: Session, user: SignedIn, profile_id: str, destination_id: str
) -> tuple[Profile, Destination]:
    """The signed-in merchant's profile and its destination named by the path (else 404)."""
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    return profile, service.find(session, profile_id=profile.id, destination_id=destination_id)


@router.post("/profiles/{profile_id}/ad-platforms/{destination_id}/sync")
def sync_form(
    session: PageSessionDep, user: ConsoleForm, profile_id: str, destination_id: str
) -> Response:
    profile, destination = _owned(session, user, profile_id, destination_id)
    service.request_sync(session, destination)
    return RedirectResponse(f"{_path(profile.id)}?done=sync", status_code=303)


@router.post("/profiles/{profile_id}/ad-platforms/{destination_id}/credentials")
def credentials_form(
    request: Request,
    session: PageSessionDep,
    user: ConsoleForm,
    profile_id: str,
    destination_id: str,
    form: ConnectFields,
) -> Response:
    profile, destination = _owned(session, user, profile_id, destination_id)
    credentials = {name: form.get(name, "") for name in CREDENTIAL_FIELDS[destination.platform]}
    try:
        service.change(
            session,
            destination,
            {"credentials": credentials},
            signing_key=request.app.state.settings.signing_key,
        )
    except ValidationFailed as error:
        return _refused(request, session, user, profile.id, error, {"platform": "credentials"})
    return RedirectResponse(f"{_path(profile.id)}?done=credentials", status_code=303)


@router.post("/profiles/{profile_id}/ad-platforms/{destination_id}/disconnect")
def disconnect_form(
    session: PageSessionDep, user: ConsoleForm, profile_id: str, destination_id: str
) -> Response:
    profile, destination = _owned(session, user, profile_id, destination_id)
    service.disconnect(session, destination)
    return RedirectResponse(f"{_path(profile.id)}?done=disconnected", status_code=303)
