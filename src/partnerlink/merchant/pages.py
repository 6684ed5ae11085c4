"""What every page of the merchant console shares, whichever domain draws it: the signed-in
merchant, CSRF, redirects, error pages and the page layout (`console_page`).

The console package (its own pages and the console application) and the pages of
measurement and audiences all import it from here, below them, so no domain imports
the console.

The console signs in with a cookie (HttpOnly, SameSite=Lax; `__Host-` and
Secure over HTTPS, see web/security.py). A cookie rides along on requests other
sites trigger, so every form carries a CSRF token bound to the session and every
post must come from our own origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Form, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from partnerlink.deps import SettingsDep
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.merchant.ownership import owned_profile
from partnerlink.merchant.sessions import merchant_for_session_token
from partnerlink.settings import Settings
from partnerlink.web.pages import error_page, render
from partnerlink.web.routing import PageException, PageRoute, PageSessionDep
from partnerlink.web.security import (
    clear_session_cookie,
    csrf_token_for,
    csrf_token_valid,
    same_origin_post,
    session_cookie,
)

SIGNIN_PATH = "/merchant/signin"
HOME_PATH = "/merchant"

# Messages after a redirect are chosen by key, so no text of the URL reaches the page.
NOTICES = {
    "signed-out": "You are signed out.",
    "profile-added": "Profile created. Add its stores below.",
    "store-added": "Store added.",
    "receipts-on": "E-receipts are on for this store.",
    "receipts-off": "E-receipts are off for this store.",
    "revoked": "Connection revoked. Its access and refresh tokens stopped working.",
}


@dataclass(frozen=True)
class SignedIn:
    merchant: Merchant
    session_token: str
    csrf_token: str


class Redirect(PageException):
    def __init__(self, location: str, *, sign_out: bool = False) -> None:
        super().__init__(location)
        self.location = location
        self.sign_out = sign_out

    def response(self, request: Request) -> Response:
        response = RedirectResponse(self.location, status_code=303)
        if self.sign_out:
            clear_session_cookie(response, request.app.state.settings)
        return response


class ConsoleError(PageException):
    def __init__(self, status_code: int, title: str, message: str) -> None:
        super().__init__(title)
        self.status_code, self.title, self.message = status_code, title, message

    def response(self, request: Request) -> Response:
        return error_page(
            request,
            status_code=self.status_code,
            title=self.title,
            message=self.message,
            context={"home_url": HOME_PATH, "home_label": "Back to your stores"},
        )


_REFUSALS = {
    404: ("Not found", "There is nothing here, or it belongs to another account."),
    405: ("Not found", "There is nothing here to send a form to."),
    409: ("Already done", "That change was already made."),
    410: ("No longer available", "This has expired."),
}


def refusal_page(
    request: Request, status_code: int, headers: dict[str, str] | None = None
) -> Response:
    """The page for a refusal no page foresaw: odd input, an unknown path or method."""
    title, message = _REFUSALS.get(
        status_code, ("That did not work", "Check what you entered and try again.")
    )
    response = ConsoleError(status_code, title, message).response(request)
    response.headers.update(headers or {})
    return response


class ConsoleRoute(PageRoute):
    def refusal_page(self, request: Request, status_code: int) -> Response:
        return refusal_page(request, status_code)


def signed_in_merchant(
    request: Request, session: PageSessionDep, settings: SettingsDep
) -> SignedIn:
    """The merchant of the session cookie; otherwise a redirect to the sign-in page."""
    token = session_cookie(request, settings)
    merchant = merchant_for_session_token(session, token) if token else None
    if merchant is None:
        raise Redirect(SIGNIN_PATH, sign_out=bool(token))
    return SignedIn(merchant, token, csrf_token_for(settings, token))


ConsoleUser = Annotated[SignedIn, Depends(signed_in_merchant)]


def signed_in_profile(session: PageSessionDep, user: ConsoleUser, profile_id: str) -> Profile:
    """The signed-in merchant's profile named in the page's path; another's is 404."""
    return owned_profile(session, merchant_id=user.merchant.id, profile_id=profile_id)


ConsoleProfile = Annotated[Profile, Depends(signed_in_profile)]


def checked_form(
    request: Request, user: ConsoleUser, settings: SettingsDep, csrf_token: str = Form("")
) -> SignedIn:
    """The merchant of a console form post whose CSRF token and origin check out."""
    if not same_origin_post(request, settings) or not csrf_token_valid(
        settings, user.session_token, csrf_token
    ):
        raise ConsoleError(
            403,
            "This form has expired",
            "For your safety the change was not made. Reload the page and try again.",
        )
    return user


ConsoleForm = Annotated[SignedIn, Depends(checked_form)]


def console_page(
    request: Request,
    user: SignedIn,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
) -> HTMLResponse:
    notice = NOTICES.get(request.query_params.get("notice", ""))
    return render(
        request,
        template,
        {"user": user, "csrf_token": user.csrf_token, "notice": notice, **(context or {})},
        status_code=status_code,
    )


def check_origin(request: Request, settings: Settings) -> None:
    """For the one form without a session (sign-in): refuse posts from other sites."""
    if not same_origin_post(request, settings):
        raise ConsoleError(
            403, "This form cannot be used", "Open the PartnerLink console and sign in there."
        )
