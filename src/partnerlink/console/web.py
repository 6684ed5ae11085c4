"""The merchant console (`/merchant`): profiles, stores, e-receipts, pairing codes, connections.

Server-rendered pages on the same services as the merchant JSON API; no
JavaScript. Every change is a form post guarded by a session-bound CSRF token
(merchant/pages.py) and answered with a redirect, so reloading never repeats it;
the pairing code is the exception: it is shown once, on the answer to its post.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from partnerlink.console.context import profile_context, store_context
from partnerlink.deps import SettingsDep
from partnerlink.merchant.connections import revoke_merchant_connection
from partnerlink.merchant.manual_stores import create_manual_store
from partnerlink.merchant.manual_stores import set_green_invoices as set_flag
from partnerlink.merchant.ownership import owned_store
from partnerlink.merchant.pages import (
    HOME_PATH,
    NOTICES,
    ConsoleForm,
    ConsoleRoute,
    ConsoleUser,
    check_origin,
    console_page,
)
from partnerlink.merchant.profiles import create_profile as create_merchant_profile
from partnerlink.merchant.profiles import profiles_view
from partnerlink.merchant.sessions import end_session, merchant_for_session_token
from partnerlink.merchant.sessions import sign_in as start_signed_in_session
from partnerlink.pairing.service import reserve_pairing_code as reserve
from partnerlink.partners.service import list_partners
from partnerlink.problems import DomainError, RateLimited, Unauthorized
from partnerlink.security.client_address import client_address
from partnerlink.web.pages import render
from partnerlink.web.routing import PageSessionDep
from partnerlink.web.security import (
    clear_session_cookie,
    session_cookie,
    set_session_cookie,
)

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)


def _see_other(location: str) -> Response:
    """After a change: the browser fetches the page anew, so a reload does not repeat it.

    Returned, never raised: a raised page exception would roll the change back.
    """
    return RedirectResponse(location, status_code=303)


def _field_errors(error: DomainError) -> dict[str, str]:
    return {e["field"]: e["message"] for e in error.errors or []} or {"name": error.detail}


@router.get("/signin")
def sign_in_page(request: Request, session: PageSessionDep, settings: SettingsDep) -> Response:
    token = session_cookie(request, settings)
    if token and merchant_for_session_token(session, token) is not None:
        return _see_other(HOME_PATH)
    notice = NOTICES.get(request.query_params.get("notice", ""))
    return render(request, "merchant/signin.html", {"notice": notice})


@router.post("/signin")
def sign_in(
    request: Request,
    session: PageSessionDep,
    settings: SettingsDep,
    email: str = Form(""),
    password: str = Form(""),
) -> Response:
    check_origin(request, settings)
    try:
        started = start_signed_in_session(
            session,
            email=email,
            password=password,
            client_address=client_address(request, settings.trusted_proxy_set),
            settings=settings,
        )
    except RateLimited as error:
        return render(
            request,
            "merchant/signin.html",
            {"error": "Too many failed sign-ins. Wait a few minutes, then try again."},
            status_code=429,
            headers={"Retry-After": (error.headers or {}).get("Retry-After", "60")},
        )
    except Unauthorized:
        return render(
            request,
            "merchant/signin.html",
            {"error": "Wrong email or password.", "email": email.strip()[:320]},
            status_code=401,
        )
    response = _see_other(HOME_PATH)
    set_session_cookie(response, settings, started.token, settings.merchant_session_ttl_seconds)
    return response


@router.post("/signout")
def sign_out(session: PageSessionDep, settings: SettingsDep, user: ConsoleForm) -> Response:
    end_session(session, user.session_token)
    response = _see_other("/merchant/signin?notice=signed-out")
    clear_session_cookie(response, settings)
    return response


def _home_context(session: Session, merchant_id: str) -> dict[str, Any]:
    return {
        "profiles": profiles_view(session, merchant_id=merchant_id),
        "partner_names": {p.pos_type: p.name for p in list_partners(session)},
    }


@router.get("/")
def home(request: Request, session: PageSessionDep, user: ConsoleUser) -> HTMLResponse:
    context = _home_context(session, user.merchant.id)
    return console_page(request, user, "merchant/home.html", context)


@router.post("/profiles")
def create_profile(
    request: Request, session: PageSessionDep, user: ConsoleForm, name: str = Form("")
) -> Response:
    try:
        profile = create_merchant_profile(session, merchant_id=user.merchant.id, name=name)
    except DomainError as error:
        session.rollback()
        context = _home_context(session, user.merchant.id)
        context.update(profile_error=_name_problem(error), name=name)
        return console_page(request, user, "merchant/home.html", context, status_code=400)
    return _see_other(f"/merchant/profiles/{profile.id}?notice=profile-added")


def _name_problem(error: DomainError) -> str:
    if error.code == "missing_field":
        return "Enter a name."
    return "Use at most 200 letters, digits or punctuation."


@router.get("/profiles/{profile_id}")
def profile_page(
    request: Request, session: PageSessionDep, user: ConsoleUser, profile_id: str
) -> HTMLResponse:
    context = profile_context(session, merchant_id=user.merchant.id, profile_id=profile_id)
    return console_page(request, user, "merchant/profile.html", context)


@router.post("/profiles/{profile_id}/stores")
def add_manual_store(
    request: Request,
    session: PageSessionDep,
    user: ConsoleForm,
    profile_id: str,
    name: str = Form(""),
    address: str = Form(""),
    country_code: str = Form(""),
    currency: str = Form(""),
) -> Response:
    try:
        store = create_manual_store(
            session,
            merchant_id=user.merchant.id,
            profile_id=profile_id,
            name=name,
            address=address,
            country_code=country_code.strip().upper(),
            currency=currency.strip().upper() or None,
        )
    except DomainError as error:
        if error.status == 404:
            raise
        session.rollback()
        context = profile_context(session, merchant_id=user.merchant.id, profile_id=profile_id)
        context.update(
            store_errors=_field_errors(error),
            form={
                "name": name,
                "address": address,
                "country_code": country_code,
                "currency": currency,
            },
        )
        return console_page(request, user, "merchant/profile.html", context, status_code=400)
    return _see_other(f"/merchant/stores/{store.id}?notice=store-added")


@router.get("/stores/{store_id}")
def store_page(
    request: Request, session: PageSessionDep, user: ConsoleUser, store_id: str
) -> HTMLResponse:
    context = store_context(session, merchant_id=user.merchant.id, store_id=store_id)
    return console_page(request, user, "merchant/store.html", context)


@router.post("/stores/{store_id}/green-invoices")
def set_green_invoices(
    session: PageSessionDep, user: ConsoleForm, store_id: str, enabled: str = Form("")
) -> Response:
    turn_on = enabled == "on"
    set_flag(session, merchant_id=user.merchant.id, store_id=store_id, enabled=turn_on)
    notice = "receipts-on" if turn_on else "receipts-off"
    return _see_other(f"/merchant/stores/{store_id}?notice={notice}")


@router.post("/stores/{store_id}/pairing-codes")
def reserve_pairing_code(
    request: Request,
    session: PageSessionDep,
    settings: SettingsDep,
    user: ConsoleForm,
    store_id: str,
    pos_type: str = Form(""),
) -> HTMLResponse:
    context = store_context(session, merchant_id=user.merchant.id, store_id=store_id)
    partner = next((p for p in context["partners"] if p.pos_type == pos_type), None)
    if partner is None:
        context["pairing_error"] = "Choose the system of your terminal."
        return console_page(request, user, "merchant/store.html", context, status_code=400)
    reserved = reserve(
        session,
        settings=settings,
        merchant_id=user.merchant.id,
        store_id=store_id,
        pos_type=pos_type,
    )
    return console_page(
        request,
        user,
        "merchant/pairing_code.html",
        {
            **context,
            "reserved": reserved,
            "partner_name": partner.name,
            "ttl_hours": _hours(settings.pairing_code_ttl_seconds),
        },
    )


def _hours(seconds: int) -> str:
    hours = seconds / 3600
    return f"{hours:g} hours" if hours != 1 else "1 hour"


@router.post("/connections/{connection_id}/revoke")
def revoke_connection(
    session: PageSessionDep, user: ConsoleForm, connection_id: str, store_id: str = Form("")
) -> Response:
    revoke_merchant_connection(session, merchant_id=user.merchant.id, connection_id=connection_id)
    try:
        owned_store(session, merchant_id=user.merchant.id, store_id=store_id)
    except DomainError:
        return _see_other(HOME_PATH)  # the connection is revoked; only the way back is unknown
    return _see_other(f"/merchant/stores/{store_id}?notice=revoked")
