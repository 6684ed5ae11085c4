"""Merchant sign-in from the consent screen, with failure budgets against password guessing."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Merchant
from partnerlink.merchant.service import authenticate_merchant, sign_in_budgets
from partnerlink.problems import RateLimited, Unauthorized
from partnerlink.security.client_address import client_address
from partnerlink.security.rate_limit import FailureBudget
from partnerlink.settings import Settings

CONSENT_FAILURES_PER_ADDRESS = "10/15minutes"
MAX_PASSWORD_LENGTH = 1024


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
    by_address = consent_address_budget(settings)
    email_key = email.strip().lower()
    address_key = client_address(request, settings.trusted_proxy_set)
    spent = [
        budget.retry_after_seconds(key)
        for budget, key in ((by_email, email_key), (by_address, address_key))
        if budget.exhausted(key)
    ]
    if spent:
        raise RateLimited(max(spent), "Too many failed sign-ins; try again later.")
    try:
        if not email_key or not password or len(password) > MAX_PASSWORD_LENGTH:
            raise Unauthorized()
        merchant = authenticate_merchant(session, email=email_key, password=password)
    except Unauthorized:
        by_email.record_failure(email_key)
        by_address.record_failure(address_key)
        raise
    by_email.reset(email_key)
    return merchant
