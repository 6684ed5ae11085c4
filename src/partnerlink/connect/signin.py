"""Merchant sign-in from the consent screen, with failure budgets against password guessing."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Merchant
from partnerlink.merchant.sessions import authenticate_within_budgets, sign_in_budgets
from partnerlink.security.client_address import client_address
from partnerlink.security.rate_limit import FailureBudget
from partnerlink.settings import Settings

CONSENT_FAILURES_PER_ADDRESS = "10/15minutes"


def consent_address_budget(settings: Settings) -> FailureBudget:
    # Tighter than the merchant API's per-address budget: the consent screen is
    # reachable by anyone holding a link, and a merchant signs in there rarely.
    return FailureBudget(
        "consent-sign-in-address", CONSENT_FAILURES_PER_ADDRESS, settings.rate_limit_storage
    )


def authenticate_on_consent_screen(
    session: Session, request: Request, settings: Settings, *, email: str, password: str
) -> Merchant:
    """The merchant with these credentials; Unauthorized or RateLimited otherwise.

    The per-email budget is the merchant API's own, so the consent screen gives
    an attacker no extra guesses at an account.
    """
    by_email, _ = sign_in_budgets(settings.rate_limit_storage)
    return authenticate_within_budgets(
        session,
        email=email,
        password=password,
        by_email=by_email,
        by_address=consent_address_budget(settings),
        client_address=client_address(request, settings.trusted_proxy_set),
    )
