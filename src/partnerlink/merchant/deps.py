"""Who is calling the merchant API (a bearer session token), and the profile it names."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from partnerlink.deps import SessionDep, bearer_credentials
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.merchant.ownership import owned_profile
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


def merchants_profile(profileId: str, merchant: CurrentMerchant, session: SessionDep) -> Profile:
    """The signed-in merchant's profile named in the path; another merchant's answers 404."""
    return owned_profile(session, merchant_id=merchant.id, profile_id=profileId)


OwnedProfile = Annotated[Profile, Depends(merchants_profile)]
