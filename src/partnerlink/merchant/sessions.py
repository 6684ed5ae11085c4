"""Merchant sign-in sessions, and the failure budgets that guard every sign-in form."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.merchant.accounts import authenticate_merchant
from partnerlink.merchant.models import Merchant, MerchantSession
from partnerlink.problems import RateLimited, Unauthorized
from partnerlink.security.rate_limit import FailureBudget
from partnerlink.security.secrets import SESSION_TOKEN_PREFIX, digest, mint
from partnerlink.settings import Settings


@dataclass(frozen=True)
class StartedSession:
    token: str
    expires_at: datetime


def start_session(session: Session, *, merchant: Merchant, ttl_seconds: int) -> StartedSession:
    token = mint(SESSION_TOKEN_PREFIX)
    expires_at = utcnow() + timedelta(seconds=ttl_seconds)
    session.add(
        MerchantSession(merchant_id=merchant.id, token_hash=digest(token), expires_at=expires_at)
    )
    session.flush()
    return StartedSession(token=token, expires_at=expires_at)


# Passwords can be guessed: failed sign-ins are budgeted per account (slow guessing of one
# password) and per client address (one address spraying many accounts).
SIGN_IN_FAILURES_PER_EMAIL = "10/15minutes"
SIGN_IN_FAILURES_PER_ADDRESS = "30/15minutes"


def sign_in_budgets(storage_uri: str) -> tuple[FailureBudget, FailureBudget]:
    """Returns the (per email, per client address) failure budgets of merchant sign-in."""
    return (
        FailureBudget("merchant-sign-in-email", SIGN_IN_FAILURES_PER_EMAIL, storage_uri),
        FailureBudget("merchant-sign-in-address", SIGN_IN_FAILURES_PER_ADDRESS, storage_uri),
    )


# Longer passwords are refused before any hashing: no account has one.
MAX_PASSWORD_LENGTH = 1024


def authenticate_within_budgets(
    session: Session,
    *,
    email: str,
    password: str,
    by_email: FailureBudget,
    by_address: FailureBudget,
    client_address: str,
) -> Merchant:
    """The merchant with these credentials, within both failure budgets.

    RateLimited while either budget is spent; Unauthorized (a failure counted
    against both) for wrong credentials. Every sign-in form goes through here.
    """
    email_key = email.strip().lower()
    spent = [
        budget.retry_after_seconds(key)
        for budget, key in ((by_email, email_key), (by_address, client_address))
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
        by_address.record_failure(client_address)
        raise
    by_email.reset(email_key)
    return merchant


def sign_in(
    session: Session,
    *,
    email: str,
    password: str,
    client_address: str,
    settings: Settings,
) -> StartedSession:
    """Checks email and password within the failure budgets and starts a session."""
    by_email, by_address = sign_in_budgets(settings.rate_limit_storage)
    try:
        merchant = authenticate_within_budgets(
            session,
            email=email,
            password=password,
            by_email=by_email,
            by_address=by_address,
            client_address=client_address,
        )
    except Unauthorized as error:
        raise Unauthorized(headers={"WWW-Authenticate": 'Bearer realm="merchant"'}) from error
    return start_session(
        session, merchant=merchant, ttl_seconds=settings.merchant_session_ttl_seconds
    )


def merchant_for_session_token(session: Session, token: str) -> Merchant | None:
    if not token:
        return None
    row = session.execute(
        select(Merchant, MerchantSession.expires_at)
        .join(MerchantSession, MerchantSession.merchant_id == Merchant.id)
        .where(MerchantSession.token_hash == digest(token))
    ).first()
    if row is None or row[1] <= utcnow():
        return None
    merchant: Merchant = row[0]
    return merchant


def end_session(session: Session, token: str) -> None:
    session.execute(delete(MerchantSession).where(MerchantSession.token_hash == digest(token)))
