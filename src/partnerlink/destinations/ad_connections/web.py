"""The console's sign-in steps on the "Ad platforms" page (CONTRACT §14): "Connect with
Meta" / "Connect with Google" (shown only when the operator registered the app), then the
pick step of a connection: an ad account, an audience (or "Create a new audience") or a
dataset; for Google the customer id, an optional manager id, a list (or a new one) or the
conversion action id. Every form carries the CSRF token; every problem of a form is
shown at once, in a store owner's words.
"""

from __future__ import annotations

from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from partnerlink.audiences.service import DESCRIPTIONS
from partnerlink.destinations import service as destinations
from partnerlink.destinations.ad_connections import lists, picks, schemas, service, sign_in
from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.destinations.platform import platform_client
from partnerlink.destinations.schemas import destination_request
from partnerlink.merchant.ownership import owned_profile
from partnerlink.merchant.pages import (
    ConsoleError,
    ConsoleForm,
    ConsoleRoute,
    ConsoleUser,
    console_page,
)
from partnerlink.problems import DomainError, ValidationFailed
from partnerlink.web.routing import PageSessionDep
from partnerlink.web.security import csrf_token_valid

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)

PAGE = "destinations/ad_connection_pick.html"


def _path(profile_id: str) -> str:
    return f"/merchant/profiles/{profile_id}/ad-platforms"


def _connection(
    session: Session, merchant_id: str, profile_id: str, connection_id: str
) -> AdConnection:
    profile = owned_profile(session, merchant_id=merchant_id, profile_id=profile_id)
    return service.find(session, profile_id=profile.id, connection_id=connection_id)


@router.get("/profiles/{profile_id}/ad-platforms/sign-in/{platform}")
def sign_in_link(
    request: Request,
    session: PageSessionDep,
    user: ConsoleUser,
    profile_id: str,
    platform: str,
    csrf_token: str = "",
    segment: str = "",
    connection: str = "",
) -> Response:
    """To the platform's sign-in; it comes back to the callback, then to the pick step.

    A link, not a form: the console's `form-action 'self'` would stop a form's redirect to
    the platform. The link carries the page's CSRF token, so no other site can start a
    sign-in in the merchant's session."""
    settings = request.app.state.settings
    if not csrf_token_valid(settings, user.session_token, csrf_token):
        raise ConsoleError(
            403,
            "This link has expired",
            "For your safety nothing was started. Reload the page and try again.",
        )
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    if platform not in service.NAMES or not service.configured(settings, platform):
        return RedirectResponse(_path(profile.id), status_code=303)
    replacing = None
    if connection:
        replacing = service.find(session, profile_id=profile.id, connection_id=connection).id
    url = sign_in.start(
        session,
        settings,
        platform=platform,
        profile_id=profile.id,
        merchant_id=user.merchant.id,
        session_token=user.session_token,
        via="console",
        segment=segment if segment in DESCRIPTIONS else None,
        connection_id=replacing,
    )
    return RedirectResponse(url, status_code=303)


def _lists(
    settings: Any, http: httpx.Client, session: Session, connection: AdConnection, account: str
) -> tuple[dict[str, Any], list[str]]:
    """What the pick step offers, and the problems met while asking the platform."""
    found: dict[str, Any] = {"accounts": [], "audiences": [], "datasets": []}
    try:
        found["accounts"] = lists.accounts(session, settings, http, connection)
        if account:
            found["audiences"] = lists.audiences(settings, http, connection, account)
            if connection.platform == "meta":
                found["datasets"] = lists.datasets(settings, http, connection, account)
    except DomainError as error:
        return found, [picks.in_words(connection.platform, error)]
    return found, []


def _pick_page(
    request: Request,
    session: Session,
    user: Any,
    connection: AdConnection,
    form: dict[str, str],
    problems: list[str],
    status_code: int = 200,
) -> HTMLResponse:
    settings = request.app.state.settings
    account = form.get("account", "")
    with platform_client(request_seconds=settings.ad_request_timeout_seconds) as http:
        found, met = _lists(settings, http, session, connection, account)
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=connection.profile_id)
    context = {
        "profile": profile,
        "connection": schemas.connection_json(connection),
        "name": service.NAMES[connection.platform],
        "segments": DESCRIPTIONS,
        "form": form,
        "problems": problems + met,
        **found,
    }
    return console_page(request, user, PAGE, context, status_code=status_code)


@router.get("/profiles/{profile_id}/ad-platforms/connections/{connection_id}")
def pick_page(
    request: Request,
    session: PageSessionDep,
    user: ConsoleUser,
    profile_id: str,
    connection_id: str,
) -> HTMLResponse:
    connection = _connection(session, user.merchant.id, profile_id, connection_id)
    form = {k: v for k, v in request.query_params.items() if k in ("account", "segment")}
    return _pick_page(request, session, user, connection, form, [])


def pick_fields(
    account: str = Form(""),
    kind: str = Form(""),
    segment: str = Form(""),
    audience: str = Form(""),
    dataset: str = Form(""),
    managerId: str = Form(""),
    conversionActionId: str = Form(""),
) -> dict[str, str]:
    return {k: v.strip() for k, v in locals().items() if v.strip()}


PickFields = Annotated[dict[str, str], Depends(pick_fields)]


@router.post("/profiles/{profile_id}/ad-platforms/connections/{connection_id}/pick")
def pick_form(
    request: Request,
    session: PageSessionDep,
    user: ConsoleForm,
    profile_id: str,
    connection_id: str,
    form: PickFields,
) -> Response:
    connection = _connection(session, user.merchant.id, profile_id, connection_id)
    settings = request.app.state.settings
    profile = owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)
    problems = picks.form_problems(connection.platform, form)
    if problems:
        return _pick_page(request, session, user, connection, form, problems, 400)
    try:
        with platform_client(request_seconds=settings.ad_request_timeout_seconds) as http:
            body = picks.destination_body(settings, http, connection, profile.name, form)
        request_ = service.with_connection(session, settings, profile.id, destination_request(body))
        destinations.create(
            session,
            profile_id=profile.id,
            request=request_,
            signing_key=settings.signing_key,
            ad_connection_id=connection.id,
        )
    except ValidationFailed as error:
        return _pick_page(request, session, user, connection, form, picks.listed(error), 400)
    except DomainError as error:
        problem = picks.in_words(connection.platform, error)
        return _pick_page(request, session, user, connection, form, [problem], 400)
    return RedirectResponse(f"{_path(profile.id)}?done=connected", status_code=303)


@router.post("/profiles/{profile_id}/ad-platforms/connections/{connection_id}/remove")
def remove_form(
    session: PageSessionDep, user: ConsoleForm, profile_id: str, connection_id: str
) -> Response:
    connection = _connection(session, user.merchant.id, profile_id, connection_id)
    service.delete(session, connection)
    return RedirectResponse(f"{_path(profile_id)}?done=disconnected", status_code=303)


def page_context(
    session: Session, settings: Any, profile_id: str, segment: str | None
) -> dict[str, Any]:
    """What the Ad platforms page shows of sign-ins: the buttons the operator's settings
    allow, the profile's connections (with "Reconnect with Meta before {date}") and the
    segment an Audiences page link chose."""
    connections = service.of_profile(session, profile_id)
    warnings = {c.id: service.expiry_warning(c) for c in connections}
    return {
        "can_connect": {p: service.configured(settings, p) for p in service.NAMES},
        "ad_connections": [
            {
                **schemas.connection_json(c),
                "name": service.NAMES[c.platform],
                "warning": warnings[c.id],
            }
            for c in connections
        ],
        "connection_warnings": service.warnings_by_destination(session, profile_id, warnings),
        "pick_segment": segment if segment in DESCRIPTIONS else None,
    }
