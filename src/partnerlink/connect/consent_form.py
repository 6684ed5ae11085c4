"""The consent screen's state between forms, kept without any cookie, and its shared pages.

The screen runs inside a partner's IFrame, where browsers block third-party
cookies; so what it must remember between two forms (which integration token,
which partner, which merchant signed in) travels in a signed, expiring form
token bound to the integration token. The same token is the CSRF guard: a post
without a genuine token minted for this very integration is refused.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Form, Request, Response
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from partnerlink.connect.service import describe_consent
from partnerlink.deps import SettingsDep
from partnerlink.partners.service import find_partner_by_client_id
from partnerlink.problems import NotFound
from partnerlink.security.secrets import digest
from partnerlink.settings import Settings
from partnerlink.web.form_tokens import (
    ExpiredFormToken,
    InvalidFormToken,
    issue_form_token,
    read_form_token,
)
from partnerlink.web.pages import render
from partnerlink.web.routing import PageException, PageRoute, PageSessionDep
from partnerlink.web.security import framed_csp

FORM_PURPOSE = "consent"
# Longer values cannot be ours; they are refused before any database work.
MAX_PARAM_LENGTH = 512


@dataclass(frozen=True)
class Consent:
    """One consent screen being shown: the link's parameters and what they point at."""

    client_id: str
    integration_token: str
    partner_name: str
    ereceipt_offered: bool
    csp: str
    # A sandbox partner takes a new test store, never an existing one (CONTRACT §12).
    sandbox: bool = False


class PageError(PageException):
    """Ends a request with an error page, which carries no form."""

    def __init__(
        self,
        status_code: int,
        title: str,
        message: str,
        csp: str,
        partner_name: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(title)
        self.status_code = status_code
        self.title = title
        self.message = message
        self.csp = csp
        self.partner_name = partner_name
        self.headers = headers

    def response(self, request: Request) -> Response:
        return render(
            request,
            "connect/error.html",
            {"title": self.title, "message": self.message, "partner_name": self.partner_name},
            status_code=self.status_code,
            csp=self.csp,
            headers=self.headers,
        )


class SignInAgain(PageException):
    """The form's time ran out: show the sign-in form again, with a fresh token."""

    def __init__(self, consent: Consent) -> None:
        super().__init__("form token expired")
        self.consent = consent

    def response(self, request: Request) -> Response:
        return signin_page(
            request, request.app.state.settings, self.consent, error=TIMED_OUT, status_code=400
        )


class ConsentRoute(PageRoute):
    def refusal_page(self, request: Request, status_code: int) -> Response:
        return PageError(
            status_code,
            "Something is wrong with this request",
            "Go back and start connecting again.",
            framed_csp([]),
        ).response(request)


TIMED_OUT = "This page timed out. Please sign in again."


@dataclass(frozen=True)
class Posted:
    """A consent form post: what it is about, and who signed in (if anyone)."""

    consent: Consent
    merchant_id: str | None


_UNKNOWN_LINK = (
    "This link is not valid",
    "PartnerLink does not recognise this connection link. Go back and start connecting again.",
)


def _usable(value: str) -> bool:
    return bool(value) and len(value) <= MAX_PARAM_LENGTH and "\x00" not in value


def _frame_policy_for_client(session: Session, client_id: str) -> str:
    """The partner's framing policy even when its token is bad, so errors show in its IFrame."""
    partner = find_partner_by_client_id(session, client_id) if _usable(client_id) else None
    return framed_csp(list(partner.frame_origins or []) if partner and partner.active else [])


def load_consent(session: Session, *, client_id: str, integration_token: str) -> Consent:
    """The pending consent a link names; PageError for every other case."""
    if not client_id or not integration_token:
        raise PageError(
            400,
            "This link is incomplete",
            "The address is missing part of what it needs. Go back and start connecting again.",
            framed_csp([]),
        )
    if not _usable(client_id) or not _usable(integration_token):
        raise PageError(404, *_UNKNOWN_LINK, _frame_policy_for_client(session, client_id))
    try:
        view = describe_consent(session, integration_token=integration_token, client_id=client_id)
    except NotFound as error:
        if error.code == "unknown_client":
            raise PageError(
                404,
                "Unknown partner",
                "This link names a partner PartnerLink does not know. "
                "Ask the partner for a new link.",
                framed_csp([]),
            ) from error
        policy = _frame_policy_for_client(session, client_id)
        raise PageError(404, *_UNKNOWN_LINK, policy) from error
    redirect = [view.oauth_redirect_uri] if view.oauth_redirect_uri else []
    csp = framed_csp(view.frame_origins, form_targets=redirect)
    name = view.partner_name
    if view.status == "finished":
        raise PageError(
            410,
            "Already connected",
            f"This link was already used to connect {name}. There is nothing more to do here.",
            csp,
            name,
        )
    if view.status != "pending":
        raise link_gone(name, csp)
    return Consent(client_id, integration_token, name, view.ereceipt_offered, csp, view.sandbox)


def link_gone(partner_name: str, csp: str) -> PageError:
    return PageError(
        410,
        "This link has expired",
        f"The link is no longer valid: it expired or was cancelled. "
        f"Go back to {partner_name} and start connecting again.",
        csp,
        partner_name,
    )


def issue_consent_form_token(settings: Settings, consent: Consent, merchant_id: str | None) -> str:
    return issue_form_token(
        settings.signing_key,
        purpose=FORM_PURPOSE,
        ttl_seconds=settings.consent_form_ttl_seconds,
        claims={
            "it": digest(consent.integration_token),
            "cid": consent.client_id,
            "mid": merchant_id,
        },
    )


def _merchant_from_form(settings: Settings, consent: Consent, token: str) -> str | None:
    """The merchant id the form token carries; raises if it is not this consent's token."""
    claims = read_form_token(settings.signing_key, token, purpose=FORM_PURPOSE)
    bound = hmac.compare_digest(str(claims.get("it", "")), digest(consent.integration_token))
    if not bound or claims.get("cid") != consent.client_id:
        raise InvalidFormToken("form token of another consent")
    merchant_id = claims.get("mid")
    return merchant_id if isinstance(merchant_id, str) else None


def consent_post(
    session: PageSessionDep,
    settings: SettingsDep,
    client_id: str = Form(""),
    integration_token: str = Form(""),
    form_token: str = Form(""),
) -> Posted:
    """Checks a form post against its consent; a page for a forged, foreign or stale token."""
    consent = load_consent(session, client_id=client_id, integration_token=integration_token)
    try:
        merchant_id = _merchant_from_form(settings, consent, form_token)
    except ExpiredFormToken as error:
        raise SignInAgain(consent) from error
    except InvalidFormToken as error:
        raise _unusable_form(
            consent, "The page was changed or did not come from PartnerLink."
        ) from error
    return Posted(consent, merchant_id)


ConsentPost = Annotated[Posted, Depends(consent_post)]


def signed_in_post(posted: ConsentPost) -> tuple[Consent, str]:
    """A post that needs a signed-in merchant; a page for a token minted before sign-in."""
    if posted.merchant_id is None:
        raise _unusable_form(posted.consent, "Sign in first.")
    return posted.consent, posted.merchant_id


SignedInPost = Annotated[tuple[Consent, str], Depends(signed_in_post)]


def _unusable_form(consent: Consent, reason: str) -> PageError:
    return PageError(
        403,
        "This form cannot be used",
        f"{reason} Go back and start connecting again.",
        consent.csp,
        consent.partner_name,
    )


def base_context(consent: Consent, form_token: str) -> dict[str, Any]:
    return {
        "partner_name": consent.partner_name,
        "ereceipt_offered": consent.ereceipt_offered,
        "client_id": consent.client_id,
        "integration_token": consent.integration_token,
        "form_token": form_token,
    }


def signin_page(
    request: Request,
    settings: Settings,
    consent: Consent,
    *,
    status_code: int = 200,
    error: str | None = None,
    email: str = "",
) -> HTMLResponse:
    context = base_context(consent, issue_consent_form_token(settings, consent, None))
    context.update(error=error, email=email)
    return render(request, "connect/signin.html", context, status_code=status_code, csp=consent.csp)
