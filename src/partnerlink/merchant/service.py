"""Merchant accounts, sign-in sessions and ownership checks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from email_validator import EmailNotValidError, validate_email
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.merchant.models import Merchant, MerchantSession, Profile
from partnerlink.problems import Conflict, NotFound, Unauthorized, ValidationFailed
from partnerlink.security.passwords import hash_password, verify_password
from partnerlink.security.secrets import SESSION_TOKEN_PREFIX, digest, mint
from partnerlink.stores.models import Store

MIN_PASSWORD_LENGTH = 8


def normalize_account_email(email: str) -> str:
    try:
        return validate_email(email.strip(), check_deliverability=False).normalized.lower()
    except EmailNotValidError as error:
        raise ValidationFailed(
            "email is not a valid address",
            errors=[{"field": "email", "message": str(error)}],
        ) from error


def create_merchant(
    session: Session, *, email: str, password: str, name: str | None = None
) -> Merchant:
    normalized = normalize_account_email(email)
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed(
            f"password must be at least {MIN_PASSWORD_LENGTH} characters",
            errors=[{"field": "password", "message": "too short"}],
        )
    if session.scalar(select(Merchant.id).where(Merchant.email == normalized)):
        raise Conflict("a merchant with this email exists", code="email_taken")
    merchant = Merchant(email=normalized, password_hash=hash_password(password), name=name)
    session.add(merchant)
    session.flush()
    return merchant


def authenticate_merchant(session: Session, *, email: str, password: str) -> Merchant:
    """Same answer, and about the same time, for an unknown email and a wrong password."""
    merchant = session.scalar(select(Merchant).where(Merchant.email == email.strip().lower()))
    if not verify_password(password, merchant.password_hash if merchant else None) or not merchant:
        raise Unauthorized()
    return merchant


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


def owned_profile(session: Session, *, merchant_id: str, profile_id: str) -> Profile:
    """The merchant's own profile; another merchant's answers 404, never 403."""
    profile = session.get(Profile, profile_id)
    if profile is None or profile.merchant_id != merchant_id:
        raise NotFound("No such profile.")
    return profile


def owned_store(session: Session, *, merchant_id: str, store_id: str) -> Store:
    row = session.execute(
        select(Store)
        .join(Profile, Profile.id == Store.profile_id)
        .where(Store.id == store_id, Profile.merchant_id == merchant_id)
    ).scalar_one_or_none()
    if row is None:
        raise NotFound("No such store.")
    return row
