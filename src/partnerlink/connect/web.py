"""The hosted consent screen: `{connect_url}/?client_id=..&integration_token=..`.

It runs inside a partner's IFrame, where third-party cookies are blocked, so it
keeps no cookie at all: what it must remember between forms (which integration
token, which partner, which merchant signed in) travels in a signed, expiring
form token bound to the integration token. The same token is the CSRF guard: a
form post without a genuine token minted for this integration is refused (see
connect/consent_form.py). Each answer carries `frame-ancestors` with exactly the
partner's registered origins.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from partnerlink.connect.consent_form import (
    Consent,
    ConsentPost,
    ConsentRoute,
    PageError,
    SignedInPost,
    base_context,
    issue_consent_form_token,
    link_gone,
    load_consent,
    signin_page,
)
from partnerlink.connect.oauth_web import oauth_answer
from partnerlink.connect.service import approve_consent, decline_consent
from partnerlink.connect.signin import authenticate_on_consent_screen
from partnerlink.deps import SettingsDep
from partnerlink.merchant.models import Merchant
from partnerlink.merchant.profiles import create_profile as create_merchant_profile
from partnerlink.merchant.profiles import profiles_view
from partnerlink.problems import DomainError, Gone, NotFound, RateLimited, Unauthorized
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.web.pages import render
from partnerlink.web.routing import PageSessionDep

router = APIRouter(include_in_schema=False, route_class=ConsentRoute)


def _choose_page(
    request: Request,
    session: Session,
    settings: Settings,
    consent: Consent,
    merchant_id: str,
    *,
    status_code: int = 200,
    **extra: Any,
) -> HTMLResponse:
    """Step two: where the partner's data goes, and the merchant's preferences."""
    merchant = session.get(Merchant, merchant_id)
    if merchant is None:  # the account was deleted while the form was open
        return signin_page(request, settings, consent, status_code=401)
    profiles = profiles_view(session, merchant_id=merchant_id)
    options = [
        {
            "value": f"profile:{profile['id']}",
            "title": f"A new store in {profile['name']}",
            "hint": f"{consent.partner_name} fills in the store’s details.",
        }
        for profile in profiles
    ]
    options += [
        {
            "value": f"store:{store['id']}",
            "title": store["name"],
            "hint": f"Your store in {profile['name']}, added by hand; "
            f"{consent.partner_name} takes it over.",
        }
        for profile in profiles
        for store in profile["stores"]
        if store.get("manual") and not consent.sandbox
    ]
    context = base_context(consent, issue_consent_form_token(settings, consent, merchant_id))
    context.update(merchant_email=merchant.email, options=options, **extra)
    return render(request, "connect/choose.html", context, status_code=status_code, csp=consent.csp)


@router.get("/connect/")
@router.get("/connect")
def consent_screen(
    request: Request,
    session: PageSessionDep,
    settings: SettingsDep,
    client_id: str = "",
    integration_token: str = "",
) -> HTMLResponse:
    consent = load_consent(session, client_id=client_id, integration_token=integration_token)
    return signin_page(request, settings, consent)


@router.post("/connect/signin")
def sign_in(
    request: Request,
    session: PageSessionDep,
    settings: SettingsDep,
    posted: ConsentPost,
    email: str = Form(""),
    password: str = Form(""),
) -> HTMLResponse:
    consent = posted.consent
    try:
        merchant = authenticate_on_consent_screen(
            session, request, settings, email=email, password=password
        )
    except RateLimited as error:
        raise PageError(
            429,
            "Too many attempts",
            "Sign-in is paused after several wrong passwords. Wait a few minutes, then try again.",
            consent.csp,
            consent.partner_name,
            headers=error.headers,
        ) from error
    except Unauthorized:
        return signin_page(
            request,
            settings,
            consent,
            status_code=401,
            error="Wrong email or password.",
            email=email.strip()[:320],
        )
    return _choose_page(request, session, settings, consent, merchant.id)


@router.post("/connect/profiles")
def create_profile(
    request: Request,
    session: PageSessionDep,
    settings: SettingsDep,
    signed_in: SignedInPost,
    profile_name: str = Form(""),
) -> HTMLResponse:
    """A merchant without a profile creates one on the spot."""
    consent, merchant_id = signed_in
    try:
        profile = create_merchant_profile(session, merchant_id=merchant_id, name=profile_name)
    except DomainError as error:
        session.rollback()
        problem = (
            "Enter a business name."
            if error.code == "missing_field"
            else "Use at most 200 letters, digits or punctuation."
        )
        return _choose_page(
            request, session, settings, consent, merchant_id, status_code=400, profile_error=problem
        )
    return _choose_page(
        request,
        session,
        settings,
        consent,
        merchant_id,
        notice=f"Profile “{profile.name}” created.",
        selected=f"profile:{profile.id}",
    )


@router.post("/connect/approve")
def approve(
    request: Request,
    session: PageSessionDep,
    settings: SettingsDep,
    signed_in: SignedInPost,
    target: str = Form(""),
    green_invoices: str = Form(""),
) -> Response:
    consent, merchant_id = signed_in
    kind, _, chosen_id = target.partition(":")
    wants_receipts = consent.ereceipt_offered and green_invoices == "on"
    try:
        if kind not in ("profile", "store") or not chosen_id:
            raise NotFound("nothing chosen")
        store_id = approve_consent(
            session,
            integration_token=consent.integration_token,
            client_id=consent.client_id,
            merchant_id=merchant_id,
            profile_id=chosen_id if kind == "profile" else None,
            store_id=chosen_id if kind == "store" else None,
            green_invoices=wants_receipts,
            ends_oauth=True,  # an OAuth consent ends below, at the partner's redirect URI
        )
    except Gone as error:
        raise link_gone(consent.partner_name, consent.csp) from error
    except DomainError:
        session.rollback()
        return _choose_page(
            request,
            session,
            settings,
            consent,
            merchant_id,
            status_code=400,
            error="Choose one of the stores below.",
            green_invoices=wants_receipts,
        )
    # A consent that serves an OAuth request ends at the partner's redirect URI, with a code.
    redirect = oauth_answer(session, settings, consent, approved=True)
    if redirect is not None:
        return redirect
    store = session.get(Store, store_id)
    return render(
        request,
        "connect/finished.html",
        {
            "partner_name": consent.partner_name,
            "store_name": store.name if store else None,
            "green_invoices": bool(store and store.green_invoices),
        },
        csp=consent.csp,
    )


@router.post("/connect/decline")
def decline(
    request: Request, session: PageSessionDep, settings: SettingsDep, posted: ConsentPost
) -> Response:
    """Declining needs no sign-in: whoever holds the link may refuse it."""
    consent = posted.consent
    try:
        decline_consent(
            session, integration_token=consent.integration_token, client_id=consent.client_id
        )
    except Gone as error:
        raise link_gone(consent.partner_name, consent.csp) from error
    redirect = oauth_answer(session, settings, consent, approved=False)
    if redirect is not None:  # RFC 6749 §4.1.2.1: error=access_denied, at the partner's URI
        return redirect
    return render(
        request, "connect/cancelled.html", {"partner_name": consent.partner_name}, csp=consent.csp
    )
