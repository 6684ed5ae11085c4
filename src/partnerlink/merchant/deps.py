"""Who is calling the merchant API: a bearer session token, or the console's cookie."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from partnerlink.deps import SessionDep, bearer_credentials
from partnerlink.merchant.models import Merchant
from partnerlink.merchant.sessions import merchant_for_session_token
from partnerlink.problems import DomainError

SESSION_COOKIE = "__Host-partnerlink_session"


class NotSignedIn(DomainError):
    status = 401
    code = "not_signed_in"
    detail = "Sign in first: POST /merchant/api/sessions."


def presented_session_token(request: Request) -> str:
    """The JSON API takes only the bearer form: a cookie would make it CSRF-able.

    The console's pages read the cookie themselves and guard their forms with CSRF tokens.
    """
    return bearer_credentials(request.headers.get("authorization", ""))


def current_merchant(request: Request, session: SessionDep) -> Merchant:
    merchant = merchant_for_session_token(session, presented_session_token(request))
    if merchant is None:
        raise NotSignedIn(headers={"WWW-Authenticate": "Bearer"})
    return merchant


CurrentMerchant = Annotated[Merchant, Depends(current_merchant)]
